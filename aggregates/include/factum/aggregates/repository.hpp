// factum/aggregates/repository.hpp — loading, saving and commanding aggregates.
//
//   factum::Repository<Account> accounts(store, registry, snapshots,
//                                        {.snapshots = factum::SnapshotPolicy::every_n(100)});
//   accounts.execute("42", [](Account& a) { a.deposit(500); });
//
// load(id) restores the newest usable snapshot (schema version checked before decoding,
// digest checked, decode failures and unreadable snapshots tolerated) and replays only the
// events after it. A stream with no events loads as a fresh aggregate at version 0
// (commands decide whether that is allowed). save(a) appends the pending events with
// ExpectedVersion::exact(loaded version) and the command context's metadata;
// execute(id, command) loads, runs, saves, and on ConcurrencyError loads again and reruns,
// up to the retry policy's limit. Snapshots are written after their events are committed,
// in their own transaction; a failure to write one never fails the save (it is counted and
// reported through the options' hook).
//
// Thread-safety: a Repository may be shared between threads; every member is safe to call
// concurrently (the store and snapshot store are thread-safe; the counters are atomic).
#pragma once

#include <factum/aggregates/aggregate.hpp>
#include <factum/eventstore/event_store.hpp>
#include <factum/eventstore/personal.hpp>
#include <factum/snapshots/snapshot_store.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace factum {

// Why a snapshot was passed over while loading.
struct SnapshotIgnored {
  std::string stream_id;
  StreamVersion version = 0;
  std::string reason;
};

struct RepositoryOptions {
  // When save() takes snapshots by itself. Default: never (take them with snapshot()).
  SnapshotPolicy snapshots = SnapshotPolicy::manual();
  // Called when load passes over a snapshot (old schema, bad digest, decode failure), or
  // over all of a stream's snapshots when they cannot be read (StorageError; version 0).
  // Default: none (the counter snapshots_ignored() still counts).
  std::function<void(const SnapshotIgnored&)> on_snapshot_ignored;
  // Called when writing a snapshot after a save failed (the save itself succeeded).
  std::function<void(const std::string& stream_id, const std::exception& error)> on_snapshot_failed;
};

struct RetryPolicy {
  int max_attempts = 10;                       // tries in all, the first included
  std::chrono::milliseconds backoff{1};        // pause before a retry, doubled each time
  std::chrono::milliseconds max_backoff{100};  // longest pause
};

template <class A>
class Repository {
 public:
  static constexpr bool kSnapshots = requires { A::snapshot_version; };

  // Without snapshots: every load replays the whole stream.
  Repository(EventStore& store, const EventRegistry& registry, RepositoryOptions options = {})
      : store_(store), registry_(registry), options_(std::move(options)) {}
  // With snapshots in `snapshots` (A must declare snapshot_version and serialize).
  Repository(EventStore& store, const EventRegistry& registry, SnapshotStore& snapshots,
             RepositoryOptions options = {})
      : store_(store), registry_(registry), snapshots_(&snapshots), options_(std::move(options)) {
    static_assert(kSnapshots, "snapshots need A::snapshot_version and A::serialize");
  }

  // "category-id", the aggregate's stream.
  std::string stream_id(std::string_view id) const {
    return std::string(A::category) + "-" + std::string(id);
  }

  // The current state. Throws what reads and decoding throw (CorruptEventError,
  // UnknownEventTypeError, StorageError).
  A load(std::string_view id) const { return rebuild(id, kLatest); }

  // The state as it was at `version` (clamped to the stream's last version).
  A load_at(std::string_view id, StreamVersion version) const { return rebuild(id, version); }

  // The state as it was at `time`: every event recorded at or before it.
  A load_as_of(std::string_view id, Timestamp time) const {
    StreamVersion version = 0;
    for (const RecordedEvent& e : store_.read_stream(stream_id(id))) {
      if (e.recorded_at > time) break;
      version = e.stream_version;
    }
    return rebuild(id, version);
  }

  // Appends the pending events (expected version: the loaded one), each with `context` as
  // metadata, then snapshots when the policy says so. Returns the append's result (for no
  // pending events: nothing is written, and stream_version is the current one).
  // Throws ConcurrencyError when the stream moved on since the load; what append throws.
  AppendResult save(A& aggregate, const Metadata& context = {}) {
    if (aggregate.pending().empty()) return AppendResult{aggregate.version(), 0, 0};
    std::vector<EventData> batch;
    batch.reserve(aggregate.pending().size());
    for (const auto& event : aggregate.pending()) {
      std::visit([&](const auto& e) { batch.push_back(registry_.encode(e, context)); }, event);
    }
    const StreamVersion before = aggregate.loaded_version();
    const AppendResult result =
        store_.append(stream_id(aggregate.id()), ExpectedVersion::exact(before), batch);
    detail::AggregateAccess::mark_saved(aggregate, result.stream_version);
    if constexpr (kSnapshots) {
      if (snapshots_ != nullptr && options_.snapshots.due(before, result.stream_version)) {
        try_snapshot(aggregate);
      }
    }
    return result;
  }

  // Loads, runs `command(aggregate)`, saves; on ConcurrencyError does it all again, up to
  // retry.max_attempts tries. Returns the saved aggregate. A command that throws stops it
  // (nothing is saved) and its exception propagates.
  template <class Command>
  A execute(std::string_view id, Command&& command, RetryPolicy retry = {},
            const Metadata& context = {}) {
    auto pause = retry.backoff;
    for (int attempt = 1;; ++attempt) {
      A aggregate = load(id);
      std::invoke(command, aggregate);
      try {
        save(aggregate, context);
        return aggregate;
      } catch (const ConcurrencyError&) {
        if (attempt >= retry.max_attempts) throw;
        conflicts_.fetch_add(1, std::memory_order_relaxed);
      }
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, retry.max_backoff);
    }
  }

  // Writes a snapshot of `aggregate` at its loaded version (by hand). Throws
  // InvalidArgument when it has pending events; StorageError.
  void snapshot(const A& aggregate) {
    static_assert(kSnapshots, "snapshots need A::snapshot_version and A::serialize");
    if (!aggregate.pending().empty()) {
      throw InvalidArgument("factum: snapshot of '" + stream_id(aggregate.id()) +
                            "' with unsaved events; save it first");
    }
    if (snapshots_ == nullptr)
      throw InvalidArgument("factum: this repository has no snapshot store");
    write_snapshot(aggregate);
  }

  // Snapshots passed over while loading, snapshot writes that failed, save conflicts retried.
  std::uint64_t snapshots_ignored() const noexcept { return ignored_.load(); }
  std::uint64_t snapshot_failures() const noexcept { return failures_.load(); }
  std::uint64_t conflicts_retried() const noexcept { return conflicts_.load(); }

 private:
  static constexpr StreamVersion kLatest = ~StreamVersion{0};

  A rebuild(std::string_view id, StreamVersion upto) const {
    const std::string stream = stream_id(id);
    A aggregate{};
    StreamVersion version = 0;
    if constexpr (kSnapshots) {
      if (upto > 0) {
        if (auto restored = restore(stream, upto)) {
          aggregate = std::move(restored->first);
          version = restored->second;
        }
      }
    }
    if (upto > version) {
      for (const auto& d :
           registry_.template typed<typename A::Event>(store_.read_stream(stream, version + 1))) {
        if (d.envelope.stream_version > upto) break;
        detail::AggregateAccess::replay(aggregate, d.event);
        version = d.envelope.stream_version;
      }
    }
    detail::AggregateAccess::set_identity(aggregate, std::string(id), version);
    return aggregate;
  }

  // The newest usable snapshot at or below `upto`, with its version.
  std::optional<std::pair<A, StreamVersion>> restore(const std::string& stream,
                                                     StreamVersion upto) const {
    if (snapshots_ == nullptr) return std::nullopt;
    std::vector<Snapshot> candidates;
    try {
      candidates = snapshots_->newest(stream, upto);
    } catch (const StorageError& e) {
      // A cache that cannot be read is passed over: the events are the truth.
      ignore(stream, 0, std::string("the snapshots could not be read: ") + e.what());
      return std::nullopt;
    }
    for (const Snapshot& s : candidates) {
      if (s.schema_version != A::snapshot_version) {
        ignore(s, "its schema version " + std::to_string(s.schema_version) + " is not the code's " +
                      std::to_string(A::snapshot_version));
        continue;
      }
      if (sha256(s.state) != s.digest) {
        ignore(s, "its bytes do not match their digest");
        continue;
      }
      try {
        const std::shared_ptr<const Keyring> keys = store_.keyring();
        const detail::PersonalScope personal(keys.get(),
                                             detail::snapshot_scope_id(s.stream_id, s.version));
        return std::make_pair(decode_payload<A>(s.state), s.version);
      } catch (const std::exception& e) {
        ignore(s, std::string("it does not decode: ") + e.what());
      }
    }
    return std::nullopt;
  }

  void ignore(const Snapshot& s, std::string reason) const {
    ignore(s.stream_id, s.version, std::move(reason));
  }
  void ignore(const std::string& stream, StreamVersion version, std::string reason) const {
    ignored_.fetch_add(1, std::memory_order_relaxed);
    if (options_.on_snapshot_ignored)
      options_.on_snapshot_ignored({stream, version, std::move(reason)});
  }

  void try_snapshot(const A& aggregate) noexcept {
    try {
      write_snapshot(aggregate);
    } catch (const std::exception& e) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      if (options_.on_snapshot_failed) {
        try {
          options_.on_snapshot_failed(stream_id(aggregate.id()), e);
        } catch (...) {
          // A failing hook must not fail the save either.
        }
      }
    }
  }

  void write_snapshot(const A& aggregate) {
    Snapshot s;
    s.stream_id = stream_id(aggregate.id());
    s.version = aggregate.loaded_version();
    s.schema_version = A::snapshot_version;
    // Personal values in the state are encrypted under their subjects' keys, as in events.
    const std::shared_ptr<const Keyring> keys = store_.keyring();
    const detail::PersonalScope personal(keys.get(),
                                         detail::snapshot_scope_id(s.stream_id, s.version));
    const std::string bytes = encode_payload(aggregate);
    const auto* first = reinterpret_cast<const std::byte*>(bytes.data());
    s.state.assign(first, first + bytes.size());  // no memcpy: may be empty (null data)
    snapshots_->save(std::move(s));
    if (options_.snapshots.keep_last > 0)
      snapshots_->prune(stream_id(aggregate.id()), options_.snapshots.keep_last);
  }

  EventStore& store_;
  const EventRegistry& registry_;
  SnapshotStore* snapshots_ = nullptr;
  RepositoryOptions options_;
  mutable std::atomic<std::uint64_t> ignored_{0};
  std::atomic<std::uint64_t> failures_{0};
  std::atomic<std::uint64_t> conflicts_{0};
};

}  // namespace factum
