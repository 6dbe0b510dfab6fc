#include "factum/projections/subscription.hpp"

#include <algorithm>
#include <atomic>
#include <thread>

#include "factum/eventstore/errors.hpp"
#include "factum/projections/checkpoint_store.hpp"
#include "follower.hpp"

namespace factum {

SubscriptionFilter SubscriptionFilter::category(std::string category) {
  SubscriptionFilter f;
  f.kind = Kind::category;
  f.key = std::move(category);
  return f;
}

SubscriptionFilter SubscriptionFilter::stream(std::string stream) {
  SubscriptionFilter f;
  f.kind = Kind::stream;
  f.key = std::move(stream);
  return f;
}

SubscriptionFilter SubscriptionFilter::query(Query query) {
  SubscriptionFilter f;
  f.kind = Kind::query;
  f.matching = std::move(query);
  return f;
}

SubscriptionFilter SubscriptionFilter::with_types(std::vector<std::string> event_types) && {
  types = std::move(event_types);
  return std::move(*this);
}

bool SubscriptionFilter::matches(const RecordedEvent& e) const {
  if (!types.empty() && std::find(types.begin(), types.end(), e.type) == types.end()) {
    return false;
  }
  return partitions <= 1 || stable_hash(e.stream_id) % partitions == partition;
}

std::uint64_t stable_hash(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Everything the subscription's thread uses: it outlives the Subscription object when the
// Subscription is destroyed from inside its own handler.
struct Subscription::Shared {
  Shared(EventStore& s, SubscriptionOptions o, BatchHandler h, Handler each_event, Position from)
      : store(s),
        options(std::move(o)),
        handler(std::move(h)),
        each(std::move(each_event)),
        follower(s, options.filter, from),
        wakeup(s, options.poll_interval),
        saved(from),
        position(from) {}

  static std::shared_ptr<Shared> start(EventStore& store, SubscriptionOptions options,
                                       BatchHandler handler, Handler each);
  void run() noexcept;
  void follow();
  void deliver(std::vector<RecordedEvent>& batch, Position scanned_to, bool caught_up);
  Position deliver_each(const std::vector<RecordedEvent>& batch, Position scanned_to);
  bool recover(std::exception_ptr e) noexcept;
  void fail(std::exception_ptr e, State s);
  void set_position(Position p);
  void set_state(State s);
  Position handled() const;

  EventStore& store;
  SubscriptionOptions options;
  BatchHandler handler;  // a batch at a time, or
  Handler each;          // an event at a time
  detail::LogFollower follower;
  detail::Wakeup wakeup;
  std::optional<CheckpointStore> checkpoints;
  Position saved;                    // the checkpoint as last saved (the thread's own)
  bool handler_threw = false;        // the thread's own: the error came from the handler
  bool resync = false;               // the thread's own: restart the follower after an error
  std::vector<RecordedEvent> batch;  // the thread's own
  detail::Backoff backoff;           // the thread's own

  mutable detail::Mutex mu;
  mutable detail::CondVar progress;
  Position position FACTUM_GUARDED_BY(mu);
  std::exception_ptr error FACTUM_GUARDED_BY(mu);
  std::atomic<State> state{State::catching_up};  // written under mu (wait_for reads it there)
  std::atomic<std::size_t> max_held{0};
  detail::Mutex stop_mu;  // one stop() at a time
  std::thread thread;     // joined under stop_mu
};

// Every error is caught here, the error path included. A handler's error, or one that retrying
// cannot mend (a corrupt event), fails the subscription; a storage error (or bad_alloc) is
// reported and retried after a back-off, from the last position handled.
void Subscription::Shared::run() noexcept {
  for (;;) {
    try {
      follow();
      break;  // stopped
    } catch (...) {
      const std::exception_ptr e = std::current_exception();
      if (handler_threw || !detail::is_transient(e)) {
        fail(e, State::failed);
        return;
      }
      if (!recover(e)) break;
    }
  }
  set_state(State::stopped);
}

// Reads and delivers until stop(); throws what reading, saving or the handler throws.
void Subscription::Shared::follow() {
  if (resync) {
    follower.restart(handled());
    resync = false;
  }
  // Room for a batch, up to a bound (a huge batch_size grows the vector as events come).
  batch.reserve(std::min<std::size_t>(options.batch_size, 4096));
  for (;;) {
    wakeup.arm();
    bool caught_up = false;
    while (!caught_up && !wakeup.stopped()) {
      batch.clear();
      caught_up = follower.next(batch, options.batch_size);
      max_held = std::max(max_held.load(), batch.size());
      deliver(batch, follower.position(), caught_up);
    }
    if (!wakeup.wait()) return;
    backoff.reset();  // a whole round worked
  }
}

bool Subscription::Shared::recover(std::exception_ptr e) noexcept {
  resync = true;
  try {
    batch.clear();
    batch.shrink_to_fit();  // after a bad_alloc, give the memory back
  } catch (...) {
  }
  fail(e, State::retrying);
  return wakeup.sleep(backoff.next());
}

void Subscription::Shared::set_state(State s) {
  {
    detail::MutexLock lock(mu);
    state = s;
  }
  progress.notify_all();
}

// The handler gets the batch; position() moves past it; then the checkpoint is saved (a save
// that failed is made again with the next batch, the batch not delivered again).
void Subscription::Shared::deliver(std::vector<RecordedEvent>& events, Position scanned_to,
                                   bool caught_up) {
  try {
    if (each) {
      scanned_to = deliver_each(events, scanned_to);
    } else if (!events.empty()) {
      handler(std::span<const RecordedEvent>(events));
    }
  } catch (...) {
    handler_threw = true;
    throw;
  }
  if (scanned_to != handled()) set_position(scanned_to);
  if (checkpoints && scanned_to != saved) {
    checkpoints->save(options.checkpoint, scanned_to);
    saved = scanned_to;
  }
  const State now = state;
  if (now == State::retrying || (caught_up && now == State::catching_up)) {
    set_state(caught_up ? State::live : State::catching_up);
  }
}

// One event at a time until stop() (from the handler or another thread): what is left of the
// batch is neither delivered nor counted (nor checkpointed). Returns the position handled.
Position Subscription::Shared::deliver_each(const std::vector<RecordedEvent>& events,
                                            Position scanned_to) {
  for (const RecordedEvent& e : events) {
    if (wakeup.stopped()) return e.position - 1;
    each(e);
  }
  return scanned_to;
}

Position Subscription::Shared::handled() const {
  detail::MutexLock lock(mu);
  return position;
}

void Subscription::Shared::set_position(Position p) {
  {
    detail::MutexLock lock(mu);
    position = p;
  }
  progress.notify_all();
}

// Records `e` with state `s` (failed, or retrying) and calls on_error. Never throws.
void Subscription::Shared::fail(std::exception_ptr e, State s) {
  try {
    {
      detail::MutexLock lock(mu);
      error = e;
      state = s;
    }
    progress.notify_all();
  } catch (...) {
    state = s;  // the mutex failed (never seen): the state still tells
  }
  if (options.on_error) {
    try {
      options.on_error(e);
    } catch (...) {
      // on_error must not throw; nothing is left to report to.
    }
  }
}

namespace {

Position start_position(EventStore& store, const SubscriptionOptions& options) {
  if (options.checkpoint.empty()) return options.from;
  CheckpointStore checkpoints(store);
  const Position saved = checkpoints.load(options.checkpoint);
  return saved > 0 ? saved : options.from;
}

}  // namespace

std::shared_ptr<Subscription::Shared> Subscription::Shared::start(EventStore& store,
                                                                  SubscriptionOptions options,
                                                                  BatchHandler handler,
                                                                  Handler each) {
  if (!handler && !each) throw InvalidArgument("factum: a subscription needs a handler");
  if (options.batch_size == 0) throw InvalidArgument("factum: a subscription's batch_size is 0");
  const Position from = start_position(store, options);
  auto shared = std::make_shared<Shared>(store, std::move(options), std::move(handler),
                                         std::move(each), from);
  if (!shared->options.checkpoint.empty()) shared->checkpoints.emplace(store);
  shared->thread = std::thread([shared] { shared->run(); });
  return shared;
}

Subscription Subscription::batched(EventStore& store, SubscriptionOptions options,
                                   BatchHandler handler) {
  return Subscription(Shared::start(store, std::move(options), std::move(handler), {}));
}

Subscription::Subscription(EventStore& store, SubscriptionOptions options, Handler handler)
    : Subscription(Shared::start(store, std::move(options), {}, std::move(handler))) {}

Subscription::Subscription(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
Subscription::Subscription(Subscription&&) noexcept = default;

Subscription& Subscription::operator=(Subscription&& other) noexcept {
  Subscription old(std::move(other));
  std::swap(shared_, old.shared_);
  return *this;  // `old` stops what this subscription ran before
}

Subscription::~Subscription() {
  if (!shared_) return;
  shared_->wakeup.stop();
  detail::MutexLock lock(shared_->stop_mu);
  if (!shared_->thread.joinable()) return;
  if (shared_->thread.get_id() == std::this_thread::get_id()) {
    // Destroyed by its own handler: the thread ends after the handler returns, keeping the
    // shared state alive on its own.
    shared_->thread.detach();
  } else {
    shared_->thread.join();
  }
}

void Subscription::stop() noexcept {
  if (!shared_) return;
  shared_->wakeup.stop();
  detail::MutexLock lock(shared_->stop_mu);
  // From the handler, the thread ends after the handler returns; the destructor joins it.
  if (shared_->thread.joinable() && shared_->thread.get_id() != std::this_thread::get_id()) {
    shared_->thread.join();
  }
}

Subscription::State Subscription::state() const noexcept { return shared_->state; }

Position Subscription::position() const noexcept {
  detail::MutexLock lock(shared_->mu);
  return shared_->position;
}

std::exception_ptr Subscription::error() const noexcept {
  detail::MutexLock lock(shared_->mu);
  return shared_->error;
}

std::size_t Subscription::max_held() const noexcept { return shared_->max_held; }

bool Subscription::wait_for(Position p, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  detail::MutexLock lock(shared_->mu);
  while (shared_->position < p && shared_->state != State::stopped &&
         shared_->state != State::failed) {
    if (!shared_->progress.wait_until(lock, deadline)) break;
  }
  return shared_->position >= p;
}

}  // namespace factum
