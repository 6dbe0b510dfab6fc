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
        position(from) {}

  static std::shared_ptr<Shared> start(EventStore& store, SubscriptionOptions options,
                                       BatchHandler handler, Handler each);
  void run();
  void deliver(std::vector<RecordedEvent>& batch, Position scanned_to);
  Position deliver_each(const std::vector<RecordedEvent>& batch, Position scanned_to);
  void fail(std::exception_ptr e);
  void set_position(Position p);
  void set_state(State s);

  EventStore& store;
  SubscriptionOptions options;
  BatchHandler handler;  // a batch at a time, or
  Handler each;          // an event at a time
  detail::LogFollower follower;
  detail::Wakeup wakeup;
  std::optional<CheckpointStore> checkpoints;

  mutable std::mutex mu;
  mutable std::condition_variable progress;
  Position position;
  std::exception_ptr error;
  std::atomic<State> state{State::catching_up};
  std::atomic<std::size_t> max_held{0};
  std::mutex stop_mu;  // one stop() at a time
  std::thread thread;
};

void Subscription::Shared::run() {
  std::vector<RecordedEvent> batch;
  batch.reserve(options.batch_size);
  try {
    do {
      wakeup.arm();
      bool caught_up = false;
      while (!caught_up && !wakeup.stopped()) {
        batch.clear();
        caught_up = follower.next(batch, options.batch_size);
        max_held = std::max(max_held.load(), batch.size());
        deliver(batch, follower.position());
      }
      if (caught_up && state == State::catching_up) set_state(State::live);
    } while (wakeup.wait());
  } catch (...) {
    fail(std::current_exception());
    return;
  }
  set_state(State::stopped);
}

void Subscription::Shared::set_state(State s) {
  {
    std::lock_guard lock(mu);
    state = s;
  }
  progress.notify_all();
}

void Subscription::Shared::deliver(std::vector<RecordedEvent>& batch, Position scanned_to) {
  if (each) {
    scanned_to = deliver_each(batch, scanned_to);
  } else if (!batch.empty()) {
    handler(std::span<const RecordedEvent>(batch));
  }
  if (scanned_to == position) return;
  if (checkpoints) checkpoints->save(options.checkpoint, scanned_to);
  set_position(scanned_to);
}

// One event at a time until stop() (from the handler or another thread): what is left of the
// batch is neither delivered nor counted (nor checkpointed). Returns the position handled.
Position Subscription::Shared::deliver_each(const std::vector<RecordedEvent>& batch,
                                            Position scanned_to) {
  for (const RecordedEvent& e : batch) {
    if (wakeup.stopped()) return e.position - 1;
    each(e);
  }
  return scanned_to;
}

void Subscription::Shared::set_position(Position p) {
  {
    std::lock_guard lock(mu);
    position = p;
  }
  progress.notify_all();
}

void Subscription::Shared::fail(std::exception_ptr e) {
  {
    std::lock_guard lock(mu);
    error = e;
    state = State::failed;
  }
  progress.notify_all();
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
  std::lock_guard lock(shared_->stop_mu);
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
  std::lock_guard lock(shared_->stop_mu);
  // From the handler, the thread ends after the handler returns; the destructor joins it.
  if (shared_->thread.joinable() && shared_->thread.get_id() != std::this_thread::get_id()) {
    shared_->thread.join();
  }
}

Subscription::State Subscription::state() const noexcept { return shared_->state; }

Position Subscription::position() const noexcept {
  std::lock_guard lock(shared_->mu);
  return shared_->position;
}

std::exception_ptr Subscription::error() const noexcept {
  std::lock_guard lock(shared_->mu);
  return shared_->error;
}

std::size_t Subscription::max_held() const noexcept { return shared_->max_held; }

bool Subscription::wait_for(Position p, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(shared_->mu);
  shared_->progress.wait_for(lock, timeout, [&] {
    return shared_->position >= p || shared_->state == State::stopped ||
           shared_->state == State::failed;
  });
  return shared_->position >= p;
}

}  // namespace factum
