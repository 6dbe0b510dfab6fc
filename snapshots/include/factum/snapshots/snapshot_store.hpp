// factum/snapshots/snapshot_store.hpp — snapshots of aggregate state, kept in the store's file.
//
// A snapshot is a cache, never the truth: the state of a stream at some version, encoded by
// the aggregate, with the schema version of that encoding and a SHA-256 digest of its bytes.
// A reader compares the schema version with its code's BEFORE decoding and ignores any
// snapshot that does not match or fails to decode; deleting every snapshot changes no
// loaded state, only how long loading takes.
//
// The table factum_snapshots (docs/snapshots.md) lives beside the log; snapshots are written
// in their own transactions, after the events they summarise are committed.
//
// Thread-safety: a SnapshotStore may be shared between threads (it only calls the
// EventStore, which is thread-safe). It must not outlive its EventStore.
#pragma once

#include <atomic>

#include <factum/eventstore/event_store.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace factum {

struct Snapshot {
  std::string stream_id;
  StreamVersion version = 0;         // the stream version the state includes
  std::uint32_t schema_version = 1;  // the layout of `state`, as the aggregate defines it
  Bytes state;
  Timestamp taken_at{};
  Hash digest{};  // SHA-256 of `state`, checked before decoding
};

// When a repository takes snapshots on its own.
struct SnapshotPolicy {
  std::uint64_t every = 0;  // after a save crosses a multiple of `every` versions (0: never)
  std::size_t keep_last =
      0;  // prune to the newest `keep_last` per stream after writing (0: keep all)

  static SnapshotPolicy manual() noexcept { return {}; }
  static SnapshotPolicy every_n(std::uint64_t n, std::size_t keep_last = 0) noexcept {
    return {n, keep_last};
  }
  // True when a save that moved the stream from `before` to `after` should snapshot.
  bool due(StreamVersion before, StreamVersion after) const noexcept {
    return every > 0 && after / every != before / every;
  }
};

class SnapshotStore {
 public:
  // Writes nothing: the snapshot table is made by the first save(), in its transaction (until
  // then, and on a read-only store without it, there are no snapshots). Throws nothing.
  explicit SnapshotStore(EventStore& store);

  // Writes (or replaces) the snapshot of `snapshot.stream_id` at `snapshot.version`,
  // computing its digest and, when taken_at is unset, its time. Throws StorageError.
  void save(Snapshot snapshot);

  // The snapshots of `stream` with version <= max_version, newest first, at most `limit`.
  std::vector<Snapshot> newest(std::string_view stream,
                               StreamVersion max_version = std::numeric_limits<std::int64_t>::max(),
                               std::size_t limit = 4) const;

  // Keeps the newest `keep_last` snapshots of `stream` and deletes the older ones.
  // Returns how many were deleted.
  std::size_t prune(std::string_view stream, std::size_t keep_last);

  // Deletes every snapshot of `stream`, or of every stream. Returns how many were deleted.
  std::size_t delete_stream(std::string_view stream);
  std::size_t delete_all();

  // How many snapshots `stream` has.
  std::size_t count(std::string_view stream) const;

 private:
  // True when the snapshot table exists (remembered once seen: nothing drops it).
  bool table_there(Sql& sql) const;
  std::size_t delete_where(const char* sql_text, std::vector<SqlValue> params);

  EventStore& store_;
  mutable std::atomic<bool> table_known_{false};
};

}  // namespace factum
