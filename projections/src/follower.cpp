#include "follower.hpp"

#include <algorithm>
#include <new>

#include "factum/eventstore/errors.hpp"

namespace factum::detail {
namespace {

// A filtered read stops after this many non-matching events per call, so that a rare type
// still moves the position forward in bounded time.
constexpr std::size_t kScanFactor = 8;

void check(const SubscriptionFilter& f) {
  if (f.kind == SubscriptionFilter::Kind::query) {
    validate_query(f.matching);
  } else if (!f.matching.items.empty()) {
    throw InvalidArgument("factum: a subscription filter names a query but is not of kind query");
  }
  const bool named =
      f.kind == SubscriptionFilter::Kind::category || f.kind == SubscriptionFilter::Kind::stream;
  if (named && f.key.empty()) {
    throw InvalidArgument("factum: a category or stream subscription needs a name");
  }
  if (f.partitions == 0 || f.partition >= f.partitions) {
    throw InvalidArgument("factum: subscription partition " + std::to_string(f.partition) +
                          " is not below the partition count " + std::to_string(f.partitions));
  }
}

}  // namespace

LogFollower::LogFollower(const EventStore& store, SubscriptionFilter filter, Position after,
                         std::string also_stream)
    : store_(store),
      filter_(std::move(filter)),
      position_(after),
      also_stream_(std::move(also_stream)) {
  check(filter_);
  if (!also_stream_.empty() && filter_.kind != SubscriptionFilter::Kind::query) {
    throw InvalidArgument("factum: a follower reads a second stream only with a query");
  }
}

void LogFollower::restart(Position after) {
  it_.reset();
  range_.reset();
  position_ = after;
  next_version_ = 1;
  if (after < also_position_) {  // back: the second stream is read again from its start
    also_version_ = 1;
    also_position_ = 0;
  }
}

EventRange LogFollower::open_range() const {
  switch (filter_.kind) {
    case SubscriptionFilter::Kind::category:
      return store_.read_category(filter_.key, position_ + 1);
    case SubscriptionFilter::Kind::stream:
      return store_.read_stream(filter_.key, next_version_);
    case SubscriptionFilter::Kind::all:
    case SubscriptionFilter::Kind::query:  // never: next_by_query reads without a range
      break;
  }
  return store_.read_all(position_ + 1);
}

bool LogFollower::next(std::vector<RecordedEvent>& batch, std::size_t limit) {
  if (filter_.kind == SubscriptionFilter::Kind::query) return next_by_query(batch, limit);
  if (!range_) {
    range_.emplace(open_range());
    it_.emplace(range_->begin());
  }
  std::size_t scanned = 0;
  auto& it = *it_;
  while (batch.size() < limit && scanned < limit * kScanFactor) {
    if (it == std::default_sentinel) {
      it_.reset();
      range_.reset();
      return true;
    }
    const RecordedEvent& e = *it;
    ++scanned;
    if (filter_.kind == SubscriptionFilter::Kind::stream) next_version_ = e.stream_version + 1;
    if (e.position > position_) {
      if (filter_.matches(e)) batch.push_back(e);
      position_ = e.position;
    }
    ++it;
  }
  return false;
}

Wakeup::Wakeup(EventStore& store, std::chrono::milliseconds poll, Wanted wanted)
    : flag_(std::make_shared<Flag>()), poll_(poll) {
  if (poll_.count() > 0) {
    watcher_ = store.watch();
    // A watcher's first answer only takes its baseline: take it now, before the first read, so
    // that another process's commit between that read and the first poll is not missed.
    watcher_->changed();
    // Where the backend pushes commits (PostgreSQL's LISTEN), another process's commit wakes
    // the reader at once; the poll stays as the fallback.
    watcher_->push([flag = flag_] {
      {
        MutexLock lock(flag->mu);
        flag->pending = true;
      }
      flag->cv.notify_all();
    });
  }
  connection_ = store.on_appended().connect(
      [flag = flag_, wanted = std::move(wanted)](const std::vector<RecordedEvent>& events) {
        if (wanted && !wanted(events)) return;
        {
          MutexLock lock(flag->mu);
          flag->pending = true;
        }
        flag->cv.notify_all();
      });
}

Wakeup::~Wakeup() = default;

void Wakeup::arm() {
  MutexLock lock(flag_->mu);
  flag_->pending = false;
}

bool Wakeup::wait() {
  MutexLock lock(flag_->mu);
  auto deadline = std::chrono::steady_clock::now() + poll_;
  while (!flag_->pending && !flag_->stopped) {
    if (!watcher_) {
      flag_->cv.wait(lock);
    } else if (!flag_->cv.wait_until(lock, deadline)) {
      lock.unlock();
      const bool changed = watcher_->changed();
      lock.lock();
      if (changed) flag_->pending = true;
      deadline = std::chrono::steady_clock::now() + poll_;
    }
  }
  return !flag_->stopped;
}

void Wakeup::notify() {
  {
    MutexLock lock(flag_->mu);
    flag_->pending = true;
  }
  flag_->cv.notify_all();
}

void Wakeup::stop() {
  {
    MutexLock lock(flag_->mu);
    flag_->stopped = true;
  }
  flag_->cv.notify_all();
}

void Wakeup::resume() {
  MutexLock lock(flag_->mu);
  flag_->stopped = false;
  flag_->pending = true;
}

bool Wakeup::sleep(std::chrono::milliseconds d) noexcept {
  try {
    const auto deadline = std::chrono::steady_clock::now() + d;
    MutexLock lock(flag_->mu);
    while (!flag_->stopped && flag_->cv.wait_until(lock, deadline)) {
    }
    return !flag_->stopped;
  } catch (...) {
    return true;  // a failed lock (never seen): the caller's next attempt decides
  }
}

bool Wakeup::stopped() const {
  MutexLock lock(flag_->mu);
  return flag_->stopped;
}

std::chrono::milliseconds Backoff::next() noexcept {
  delay_ = delay_.count() == 0 ? kFirst : std::min(delay_ * 2, kMost);
  return delay_;
}

bool is_transient(std::exception_ptr error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const StorageError&) {
    return true;
  } catch (const std::bad_alloc&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace factum::detail
