// The two parts every catch-up reader shares: LogFollower pulls filtered batches after a
// position; Wakeup sleeps until there may be more (this process's commits through
// on_appended, other processes' through PRAGMA data_version polling).
#pragma once

#include <boost/signals2/connection.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "factum/eventstore/event_store.hpp"
#include "factum/projections/subscription.hpp"

namespace factum::detail {

// Not thread-safe: one follower per reading thread.
class LogFollower {
 public:
  // Reads events with position > after. Throws InvalidArgument for a bad filter.
  LogFollower(const EventStore& store, SubscriptionFilter filter, Position after);

  // Appends to `batch` up to `limit` matching events after position(), advancing position()
  // past every event read (matching or not). Returns true when it reached the end of the log
  // as it is now. Throws what reads throw (CorruptEventError, StorageError).
  bool next(std::vector<RecordedEvent>& batch, std::size_t limit);
  Position position() const noexcept { return position_; }
  // Starts again after `after` (a rebuild from the start, a reset checkpoint).
  void restart(Position after);

 private:
  EventRange open_range() const;

  const EventStore& store_;
  SubscriptionFilter filter_;
  Position position_;
  StreamVersion next_version_ = 1;  // stream filters read by version
  std::optional<EventRange> range_;
  std::optional<EventRange::iterator> it_;
};

// Thread-safety: notify() and stop() from any thread; wait() from the reading thread.
class Wakeup {
 public:
  // Connects to `store`'s on_appended and opens a watcher when `poll` > 0.
  Wakeup(EventStore& store, std::chrono::milliseconds poll);
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  // Clears the pending flag: call before reading, so a commit made during the read wakes the
  // next wait().
  void arm();
  // Sleeps until a commit may have happened (returns true) or stop() (returns false).
  bool wait();
  void notify();
  void stop();
  // Undoes stop() (for a restart, once the reading thread has ended).
  void resume();
  bool stopped() const;

 private:
  struct Flag {
    std::mutex mu;
    std::condition_variable cv;
    bool pending = false;
    bool stopped = false;
  };
  std::shared_ptr<Flag> flag_;
  std::unique_ptr<LogWatcher> watcher_;
  std::chrono::milliseconds poll_;
  boost::signals2::scoped_connection connection_;
};

}  // namespace factum::detail
