// factum/eventstore/store_options.hpp — how EventStore::open opens a store file.
//
// Thread-safety: a plain value type, read once by open().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace factum {

class AnchorSigningKey;  // anchor.hpp
class AnchorSink;        // anchor.hpp
class KeyProvider;       // personal.hpp

// Anchoring as the service runs (anchor.hpp): the store signs its head with `key` and appends
// the anchor to `sink` on a thread of its own, never on an append's path; an append never waits
// for it or fails because of it. Off unless both `key` and `sink` are set.
struct AnchoringOptions {
  std::shared_ptr<const AnchorSigningKey> key{};  // Default: none (no anchoring)
  std::shared_ptr<AnchorSink> sink{};             // Default: none
  // Anchor once this many events were appended through this store since its last anchor
  // (0: not by count). Default: 1000.
  std::uint64_t every_events = 1000;
  // Anchor at most this long after the first append not yet anchored (0: not by time).
  // Default: 60 seconds.
  std::chrono::milliseconds every{60000};
  // Anchor what was appended since the last anchor when the store closes (its last handle is
  // destroyed). Default: true.
  bool at_close = true;
  // At open, compare the store with the sink's newest anchor (its signature checked with the
  // key's public key) and refuse (AnchorError naming the anchor) a store that is behind it or
  // holds another event at its position. Default: true.
  bool check_at_open = true;
  // When not empty, a store that check_at_open finds behind the newest anchor or unlike it is
  // opened anyway, the loss recorded in the log with this reason (accept_rollback in
  // anchor.hpp) and anchored soon after; an acceptance of that anchor already in the log is
  // not recorded again. For the one open after restoring a backup: set it only when the loss
  // is known and accepted. Default: empty (such a store is refused).
  std::string accept_rollback{};
  // Called on the anchoring thread with each failure (the sink unreachable, a refused store);
  // the anchor is retried after `retry` (and at close). Must not throw. Default: none.
  std::function<void(std::exception_ptr)> on_error{};
  // How long after a failure the next attempt is made. Default: 1 second.
  std::chrono::milliseconds retry{1000};
};

// Personal data that can be forgotten (personal.hpp): the store keeps each subject's data key
// wrapped by the key provider's key-encryption key. Off unless `key_provider` is set.
struct PersonalDataOptions {
  // The KEK that wraps the subjects' data keys. EventStore::open refuses (InvalidArgument) a
  // provider that unwraps none of the store's keys when it has some: the wrong KEK is named at
  // open, never found out as garbage later. Default: none (no personal data).
  std::shared_ptr<const KeyProvider> key_provider{};
  // A rotation of the KEK: open re-wraps every key wrapped by this provider with key_provider,
  // in one transaction, before the check above (Keyring::rewrap). Default: none.
  std::shared_ptr<const KeyProvider> previous_key_provider{};
  // How long an unwrapped data key is kept in memory: a forget made through another process
  // (or another store object) is seen by this one within this time. Default: 1 second.
  std::chrono::milliseconds cache_for{1000};
  // Most subjects' keys kept in memory at once (expired ones are dropped first, then all when
  // that frees too little; a dropped key is read again when next needed). 0 acts as 1.
  // Default: 65,536 (about 10 MiB).
  std::size_t max_cached_keys = 65536;
};

enum class Durability {
  // Every commit is on disk before append returns (SQLite synchronous=FULL): survives a
  // power cut. The default.
  full,
  // Commits survive a crash of the process but the newest ones may be lost on a power cut
  // (SQLite synchronous=NORMAL in WAL mode). Much faster on slow disks.
  normal,
};

// The read page sizes of StoreOptions::read_page_size left unset. On PostgreSQL a 512-event
// page of the whole log spent about a quarter of its time on its round trip and statement
// (docs/performance.md, "Pages on PostgreSQL").
inline constexpr std::size_t kSqliteReadPageSize = 512;
inline constexpr std::size_t kPostgresReadPageSize = 4096;

struct StoreOptions {
  // Durability of each commit. Default: Durability::full.
  Durability durability = Durability::full;
  // How long a write waits for another process's lock before throwing StorageError
  // (kind busy). Default: 5 seconds. On PostgreSQL: the wait for the log's ordering lock; once
  // an append holds it, its commit waits up to the larger of this and 60 seconds.
  std::chrono::milliseconds busy_timeout{5000};
  // Largest payload accepted by append, in bytes; larger ones throw InvalidArgument.
  // Default: 4 MiB.
  std::size_t max_payload_size = 4u << 20;
  // Longest stream id accepted, in bytes. Default: 200.
  std::size_t max_stream_id_length = 200;
  // Open without writing: appends throw StorageError (kind read_only), the file is never
  // created or migrated. Default: false.
  bool read_only = false;
  // Create the file when it does not exist. Default: true.
  bool create_if_missing = true;
  // Events fetched per page by the lazy read ranges: memory per open range is bounded by
  // this many events. 0 acts as 1. Unset (the default): the backend's, kSqliteReadPageSize
  // for a file (a page is one short read transaction) and kPostgresReadPageSize for a server
  // (a page is one round trip, whose latency a larger page spreads over more events);
  // EventStore::options() tells the one in use.
  std::optional<std::size_t> read_page_size;
  // Most appends committed together in one transaction by group commit. Default: 256.
  std::size_t max_group_size = 256;
  // The write-ahead log is copied back into the file (a checkpoint, on the appending thread)
  // after a commit leaves it at least this many pages long (SQLite's wal_autocheckpoint; a page
  // is 4 KiB). Larger: fewer checkpoints and fewer syncs per append, a longer -wal file (up to
  // about pages x 4 KiB while appends run). 0 acts as 1. Default: 4000 (16 MiB), SQLite's
  // own default is 1000 (docs/performance.md measures the difference).
  std::size_t checkpoint_pages = 4000;
  // Upper bound of the file's size in bytes (0: no bound). Writes that would pass it throw
  // StorageError (kind full), as on a full disk. Default: 0.
  std::uint64_t max_file_size = 0;
  // Signed anchors of the head, kept outside the store (AnchoringOptions). Default: off.
  AnchoringOptions anchoring{};
  // Encrypted personal values and their subjects' keys (PersonalDataOptions). Default: off.
  PersonalDataOptions personal_data{};
};

}  // namespace factum
