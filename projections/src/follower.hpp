// The parts every catch-up reader shares: LogFollower pulls filtered batches after a
// position; Wakeup sleeps until there may be more (this process's commits through
// on_appended, other processes' through the store's LogWatcher: polled, and pushed where the
// backend can, i.e. PostgreSQL's LISTEN); Backoff spaces the retries after a storage error.
#pragma once

#include <boost/signals2/connection.hpp>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "factum/detail/mutex.hpp"
#include "factum/eventstore/event_store.hpp"
#include "factum/projections/subscription.hpp"

namespace factum::detail {

// Not thread-safe: one follower per reading thread.
class LogFollower {
 public:
  // Reads events with position > after. A query filter (Kind::query) reads through
  // visit_query; with `also_stream`, it also reads every event of that stream (by version,
  // through the stream's index; the filter's types and partitions do not apply to them) and
  // merges both by position: projections following a query are told of forgotten subjects
  // (kSubjectsStream). Throws InvalidArgument for a bad filter, or `also_stream` with a filter
  // that is not a query.
  LogFollower(const EventStore& store, SubscriptionFilter filter, Position after,
              std::string also_stream = {});

  // Appends to `batch` up to `limit` matching events after position(), advancing position()
  // past every event read (matching or not). Returns true when it reached the end of the log
  // as it is now. Throws what reads throw (CorruptEventError, StorageError).
  bool next(std::vector<RecordedEvent>& batch, std::size_t limit);
  Position position() const noexcept { return position_; }
  // Starts again after `after` (a rebuild from the start, a reset checkpoint).
  void restart(Position after);

 private:
  EventRange open_range() const;
  bool next_by_query(std::vector<RecordedEvent>& batch, std::size_t limit);
  Position merge_also(std::vector<RecordedEvent>& batch, std::size_t first, Position end,
                      std::size_t room, bool& cut);

  const EventStore& store_;
  SubscriptionFilter filter_;
  Position position_;
  StreamVersion next_version_ = 1;  // stream filters read by version
  std::string also_stream_;         // query filters: also this stream's events
  StreamVersion also_version_ = 1;  // its next version to read: the first after also_position_
  Position also_position_ = 0;      // its events up to here were read (<= position_)
  std::optional<EventRange> range_;
  std::optional<EventRange::iterator> it_;
};

// Thread-safety: notify() and stop() from any thread; wait() from the reading thread.
class Wakeup {
 public:
  // What a commit of this process must hold to wake the reader: `wanted(events)` (run on the
  // committing thread; must be cheap, thread-safe and not throw). Empty: every commit wakes it.
  using Wanted = std::function<bool(const std::vector<RecordedEvent>&)>;
  // Connects to `store`'s on_appended and opens a watcher when `poll` > 0.
  Wakeup(EventStore& store, std::chrono::milliseconds poll, Wanted wanted = {});
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  // Clears the pending flag: call before reading, so a commit made during the read wakes the
  // next wait().
  void arm();
  // Sleeps until a commit may have happened (returns true) or stop() (returns false). Throws
  // StorageError when polling fails.
  bool wait();
  // Sleeps for `d` or until stop(), whichever comes first (notify() does not cut it short);
  // returns false when stopped.
  bool sleep(std::chrono::milliseconds d) noexcept;
  void notify();
  void stop();
  // Undoes stop() (for a restart, once the reading thread has ended).
  void resume();
  bool stopped() const;

 private:
  struct Flag {
    Mutex mu;
    CondVar cv;
    bool pending FACTUM_GUARDED_BY(mu) = false;
    bool stopped FACTUM_GUARDED_BY(mu) = false;
  };
  std::shared_ptr<Flag> flag_;
  std::unique_ptr<LogWatcher> watcher_;
  std::chrono::milliseconds poll_;
  boost::signals2::scoped_connection connection_;
};

// Bounded exponential back-off between retries after a storage error: 10 ms, doubling, at most
// one second. Not thread-safe: one per retrying thread.
class Backoff {
 public:
  static constexpr std::chrono::milliseconds kFirst{10};
  static constexpr std::chrono::milliseconds kMost{1000};
  // The delay before the next attempt (kFirst after reset(), then twice the previous one).
  std::chrono::milliseconds next() noexcept;
  // After a success: the next failure waits kFirst again.
  void reset() noexcept { delay_ = std::chrono::milliseconds(0); }

 private:
  std::chrono::milliseconds delay_{0};
};

// Whether a reading thread retries after `error` (a StorageError, or std::bad_alloc: the storage
// or the memory may come back) rather than stopping (a corrupt event, a bug).
bool is_transient(std::exception_ptr error) noexcept;

}  // namespace factum::detail
