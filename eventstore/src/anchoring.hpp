// Anchoring inside the store (StoreOptions::anchoring): the work anchor_head does, on what any
// store gives (its head and the hash at a position), the check open makes against the newest
// anchor, and the thread that anchors as the service runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "factum/detail/mutex.hpp"
#include "factum/eventstore/anchor.hpp"
#include "factum/eventstore/store_options.hpp"

namespace factum::detail {

// What anchoring reads of a log, and how it records an accepted rollback in it.
struct AnchoredLog {
  std::function<Head()> head;
  std::function<std::optional<Hash>(Position)> hash_at;       // nullopt: no event there
  std::function<std::vector<RecordedEvent>()> anchor_events;  // the events of kAnchorStream
  // Appends one event to kAnchorStream with the expected version; empty: the log is not
  // written (accepting a rollback then throws).
  std::function<AppendResult(ExpectedVersion, const EventData&)> append{};
};

// The hash of the event at position `p`, the first of `events` (a read of the log from `p`);
// nullopt when the log has no event there.
std::optional<Hash> hash_at(EventRange events, Position p);

// What anchoring reads of `store`, through its public reads (the checked walk).
AnchoredLog anchored_log(const EventStore& store);

// Appends `key`'s anchor of the log's head to `sink`, chained to its last anchor; refuses
// (AnchorError) a log that is behind or unlike that anchor. See anchor_head.
Anchor anchor_log(const AnchoredLog& log, const AnchorSigningKey& key, AnchorSink& sink);

// Why the log does not hold `anchor` (it is behind it, or holds another event at its
// position); nullopt when it does.
std::optional<std::string> not_held(const AnchoredLog& log, const Anchor& anchor);

// The acceptances recorded in `events` (the events of kAnchorStream), oldest first.
std::vector<AcceptedRollback> acceptances_in(const std::vector<RecordedEvent>& events);

// Records that the log no longer holds `anchor` (accept_rollback): throws InvalidArgument for
// a bad reason or a log that holds it; an acceptance of it already recorded is returned.
AcceptedRollback record_acceptance(const AnchoredLog& log, const Anchor& anchor,
                                   const std::string& reason);

// The check of AnchoringOptions::check_at_open: the sink's newest anchor must be signed by
// `key` and held by the log, or its loss accepted (already, or now with
// AnchoringOptions::accept_rollback). Throws AnchorError naming the store (`shown`) and the
// anchor. Returns true when the log holds an acceptance of the newest anchor (recorded now or
// before), which an anchor should cover soon.
bool check_at_open(const AnchoredLog& log, const AnchoringOptions& options,
                   const std::string& shown);

// The anchoring thread: anchors when enough events were appended or enough time passed since
// the first one not anchored, and at the end (at_close). Thread-safe: appended() is called by
// appending threads.
class Anchorer {
 public:
  // `anchor` makes one anchor (anchor_log on the store); it is called on this object's thread
  // only, and once more by the destructor (at_close).
  Anchorer(const AnchoringOptions& options, std::function<Anchor()> anchor);
  // Stops the thread; with at_close, anchors what was appended since the last anchor (a
  // failure goes to on_error).
  ~Anchorer();
  Anchorer(const Anchorer&) = delete;
  Anchorer& operator=(const Anchorer&) = delete;

  // `events` were committed through the store: counts them, wakes the thread when due.
  void appended(std::uint64_t events) noexcept;
  // Anchors as soon as it can (after an accepted rollback), whatever the cadence.
  void anchor_soon() noexcept;

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  bool due(Clock::time_point now) const FACTUM_REQUIRES(mu_);
  Clock::time_point next_wake() const FACTUM_REQUIRES(mu_);
  // Makes one anchor; false (reported) when it failed.
  bool attempt() noexcept;

  const AnchoringOptions options_;
  const std::function<Anchor()> anchor_;
  Mutex mu_;
  CondVar wake_;
  std::uint64_t pending_ FACTUM_GUARDED_BY(mu_) = 0;        // appended, not yet anchored
  bool soon_ FACTUM_GUARDED_BY(mu_) = false;                // anchor_soon() was called
  Clock::time_point first_pending_ FACTUM_GUARDED_BY(mu_);  // when pending_ left 0
  Clock::time_point retry_at_ FACTUM_GUARDED_BY(mu_);       // no attempt before (after a failure)
  bool stop_ FACTUM_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace factum::detail
