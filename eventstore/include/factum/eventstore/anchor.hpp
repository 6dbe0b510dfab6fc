// factum/eventstore/anchor.hpp — anchored heads: signed receipts of a log's head, kept outside
// the store, that prove later that the log is still whole.
//
// The hash chain proves that nothing inside the log changed; it cannot prove that the log is
// still all there: a deleted WAL, a cut-off tail, an old backup put back or a log rewritten with
// recomputed hashes each leave a chain that verifies. An anchor is a statement "this log had head
// hash H at position P at time T", signed with Ed25519, that also holds the hash of the anchor
// before it, so that a file of anchors is itself a chain. Kept somewhere the store's owner cannot
// quietly rewrite (another machine, a topic, a transparency log), anchors let verify name what
// happened: `behind_anchor` (the log ends before an anchored position), `anchor_mismatch` (the
// log holds another event at an anchored position) or `bad_anchor` (an anchor's signature or
// the anchors' chain is broken). The exact bytes signed are specified in docs/storage-format.md
// ("Anchors") so that other programs can check them (docs/verify_anchors.py does).
//
// Keys are PEM files made with OpenSSL (`openssl genpkey -algorithm ed25519 -out anchor.pem`,
// `openssl pkey -in anchor.pem -pubout -out anchor.pub`); factum makes no keys of its own.
//
// Thread-safety: Anchor is a value. AnchorSigningKey and AnchorPublicKey are immutable after
// loading and may be used from any number of threads. AnchorFile may be shared between threads
// and processes: each append holds an exclusive lock on the file (flock) while it reads the last
// anchor and writes the next one, so concurrent anchoring never forks the chain.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_store.hpp"

namespace factum {

// An anchor, or a key or a file of anchors, is unusable: the message names the file and line,
// or the field, and what is wrong with it.
class AnchorError : public Error {
 public:
  explicit AnchorError(const std::string& message) : Error(message) {}
};

using AnchorSignature = std::array<std::uint8_t, 64>;

// One signed statement about a log's head.
struct Anchor {
  Position position = 0;        // the head's position (0: the log was empty)
  Hash head{};                  // the hash of the event at `position` (all zero when empty)
  std::int64_t time_ms = 0;     // when it was signed: milliseconds since the Unix epoch, UTC
  Hash previous{};              // hash() of the anchor before it; all zero for the first
  AnchorSignature signature{};  // Ed25519 over signed_bytes()

  // The exact bytes the signature covers (docs/storage-format.md, "Anchors").
  std::string signed_bytes() const;
  // What the next anchor's `previous` holds: SHA-256 over signed_bytes() and then the signature.
  Hash hash() const;
  // One line of JSON without a newline: {"anchor":1,"position":..,"head":"..","time_ms":..,
  // "previous":"..","signature":".."} (hashes and the signature in lowercase hex).
  std::string to_json() const;
  // Parses what to_json() writes (fields in any order, all required, no others). Throws
  // AnchorError naming the field that is missing or malformed.
  static Anchor from_json(std::string_view line);

  friend bool operator==(const Anchor&, const Anchor&) = default;
};

// An Ed25519 private key that signs anchors.
class AnchorSigningKey {
 public:
  // Reads a PEM private key ("-----BEGIN PRIVATE KEY-----", as openssl genpkey writes it).
  // Throws AnchorError when the file cannot be read, is not PEM, or is not an Ed25519 key.
  static AnchorSigningKey from_pem_file(const std::filesystem::path& path);

  // The anchor of `head` at `time_ms`, chained to `previous` (nullopt: the first anchor).
  Anchor sign(const Head& head, std::int64_t time_ms, const std::optional<Anchor>& previous) const;
  // The raw 32-byte public key that checks this key's signatures.
  std::array<std::uint8_t, 32> public_key() const;

 private:
  struct Key;
  explicit AnchorSigningKey(std::shared_ptr<const Key> key);
  std::shared_ptr<const Key> key_;
};

// An Ed25519 public key that checks anchors.
class AnchorPublicKey {
 public:
  // Reads a PEM public key ("-----BEGIN PUBLIC KEY-----", as openssl pkey -pubout writes it).
  // Throws AnchorError when the file cannot be read, is not PEM, or is not an Ed25519 key.
  static AnchorPublicKey from_pem_file(const std::filesystem::path& path);
  // From the raw 32 bytes (AnchorSigningKey::public_key()). Throws AnchorError.
  static AnchorPublicKey from_raw(const std::array<std::uint8_t, 32>& raw);

  // Whether `anchor`'s signature is this key's over its signed bytes.
  bool verifies(const Anchor& anchor) const;

 private:
  struct Key;
  explicit AnchorPublicKey(std::shared_ptr<const Key> key);
  std::shared_ptr<const Key> key_;
};

// Where anchors go: somewhere outside the store.
class AnchorSink {
 public:
  virtual ~AnchorSink() = default;
  // Appends the anchor `make` returns, given the sink's last anchor (nullopt when it has none),
  // atomically with respect to other appends to the same sink: no two anchors follow the same
  // one. Returns what it appended once it is durable. Throws what `make` throws, or
  // AnchorError / StorageError when the sink cannot be read or written (nothing is appended).
  virtual Anchor append(const std::function<Anchor(const std::optional<Anchor>& last)>& make) = 0;
  // The newest anchor the sink holds (nullopt: none), without reading them all. Throws as
  // anchors() does.
  virtual std::optional<Anchor> last() = 0;
  // Every anchor the sink holds, oldest first. Throws AnchorError when one cannot be parsed.
  virtual std::vector<Anchor> anchors() = 0;
};

// Anchors in an append-only file of JSON lines (Anchor::to_json), each line written and
// fsynced before append() returns: an anchor counts only once it is on disk. A last line
// without its newline is what a crash in the middle of a write leaves: it never counted, so
// anchors() ignores it and the next append() cuts it off before writing. The file and its
// folder are created on the first append.
class AnchorFile final : public AnchorSink {
 public:
  explicit AnchorFile(std::filesystem::path path);
  Anchor append(const std::function<Anchor(const std::optional<Anchor>& last)>& make) override;
  // Reads only the file's end (a torn last line is passed over).
  std::optional<Anchor> last() override;
  // Throws AnchorError naming the file and the line that cannot be parsed; a file that does
  // not exist holds no anchors.
  std::vector<Anchor> anchors() override;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// Anchors in a table of a PostgreSQL database, usually on another machine than the store (a
// SQLite store can anchor to a server). The table (columns seq bigint primary key, anchor text
// holding Anchor::to_json) is created when missing. Each append is one transaction that locks
// the table (EXCLUSIVE: readers go on) while it reads the last anchor and inserts the next, so
// appenders in any process or machine never fork the chain; it waits for the lock at most 5
// seconds (then StorageError, kind busy). A commit is flushed (synchronous_commit on) before
// append returns. A broken connection is made again on the next call. Thread-safe.
class PostgresAnchorSink final : public AnchorSink {
 public:
  // `uri`: a postgresql:// URI (as EventStore::open takes, e.g. with ?options=-csearch_path%3D..).
  // `table`: 1 to 63 of [a-z0-9_], not starting with a digit (InvalidArgument otherwise).
  // Connects and creates the table now: throws StorageError when the server cannot be reached
  // or refuses (or when this build of factum has no PostgreSQL backend).
  explicit PostgresAnchorSink(const std::string& uri, std::string table = "factum_anchors");
  Anchor append(const std::function<Anchor(const std::optional<Anchor>& last)>& make) override;
  std::optional<Anchor> last() override;
  std::vector<Anchor> anchors() override;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Anchors handed to the application (an RFC 3161 timestamping service, a transparency log, a
// message queue): `deliver` is called with each new anchor and must make it durable before it
// returns (throwing if it cannot: then the anchor does not count). The chain's last anchor is
// remembered in memory, starting from `last` (the newest anchor the application already holds).
class CallbackAnchorSink final : public AnchorSink {
 public:
  explicit CallbackAnchorSink(std::function<void(const Anchor&)> deliver,
                              std::optional<Anchor> last = std::nullopt);
  Anchor append(const std::function<Anchor(const std::optional<Anchor>& last)>& make) override;
  std::optional<Anchor> last() override;
  // The anchors appended through this object (and `last`), oldest first.
  std::vector<Anchor> anchors() override;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Signs `store`'s current head with `key` and appends it to `sink`, chained to the sink's last
// anchor. Refuses (AnchorError, nothing appended) when the store is behind the last anchor or
// holds another event at its position: a log that lost or rewrote anchored history is not
// anchored again (verify with the anchors says what happened). Returns the new anchor.
// Thread-safety: as the store's reads and the sink's append.
Anchor anchor_head(const EventStore& store, const AnchorSigningKey& key, AnchorSink& sink);

// Accepting a rollback. A log restored from a backup (or that lost its tail otherwise) no
// longer holds the sink's newest anchor, and is refused at open and by anchor_head. When the
// loss is known and accepted, accept_rollback records it as an event of the log: the stream
// kAnchorStream, type kRollbackAcceptedType, a payload naming the anchor no longer held and the
// log's head when it was accepted (docs/storage-format.md, "Accepted rollbacks"), the reason in
// the metadata value "reason". From then on open and anchor_head go on: the next anchor follows
// the accepted one in the sink's chain even though its position may be lower, and it covers the
// acceptance event, so the loss itself is signed into the audited history. verify_anchored lets
// anchors up to an accepted one go unheld only once a later anchor covers its acceptance, and
// accepted_rollbacks lists every acceptance for the auditor.
inline constexpr std::string_view kAnchorStream = "factum-anchors";
inline constexpr std::string_view kRollbackAcceptedType = "factum.RollbackAccepted";

// One recorded acceptance of a rollback.
struct AcceptedRollback {
  Position position = 0;         // the acceptance event's position in the log
  Hash anchor{};                 // Anchor::hash() of the anchor the log no longer held
  Position anchor_position = 0;  // that anchor's position
  Head log{};                    // the log's head when the rollback was accepted
  std::string reason;            // why, as given to accept_rollback
  Timestamp recorded_at{};       // when it was accepted

  friend bool operator==(const AcceptedRollback&, const AcceptedRollback&) = default;
};

// Records that `store` no longer holds `sink`'s newest anchor (whose signature `key` must
// check), with `reason` (non-empty, at most 1,000 bytes, no control characters). Returns the
// acceptance; an acceptance of that anchor already in the log is returned as it is, without a
// second one. Throws InvalidArgument (a bad reason, or nothing to accept: the sink holds no
// anchor or the log still holds its newest one), AnchorError (the newest anchor is not signed by
// `key`), or what the sink's read and the store's append throw (nothing recorded).
// Thread-safety: as the store's append.
AcceptedRollback accept_rollback(EventStore& store, AnchorSink& sink, const AnchorPublicKey& key,
                                 const std::string& reason);

// Every acceptance recorded in `store`, oldest first (events of kAnchorStream of type
// kRollbackAcceptedType; one whose payload is not an acceptance is passed over: it grants
// nothing). Throws as the store's reads.
std::vector<AcceptedRollback> accepted_rollbacks(const EventStore& store);

// Checks a chain of anchors by itself, without a store: each signature (by `key`), each link
// (the first anchor's `previous` all zero, each next one's the hash of the one before), and
// positions that never go back. Returns bad_anchor naming the first broken anchor (its index,
// from 1, in VerifyResult::position's place is the anchored position), or ok. A position may go
// back only right after an anchor whose rollback was accepted: `accepted` lists the acceptances
// (accepted_rollbacks of the store), and the anchor that goes back must cover the acceptance
// (its position at least the acceptance event's).
VerifyResult check_anchors(const std::vector<Anchor>& anchors, const AnchorPublicKey& key,
                           const std::vector<AcceptedRollback>& accepted = {});

// verify(options) with anchors: check_anchors first (with the store's accepted rollbacks), then
// the whole chain of `store`, which must hold each anchored head at its position
// (behind_anchor, anchor_mismatch). An anchor the log no longer holds is let go when it, or an
// anchor after it, was accepted (accept_rollback) and a later anchor covers that acceptance.
VerifyResult verify_anchored(const EventStore& store, const std::vector<Anchor>& anchors,
                             const AnchorPublicKey& key, VerifyOptions options = {});

}  // namespace factum
