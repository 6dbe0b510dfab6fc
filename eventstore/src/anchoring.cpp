#include "anchoring.hpp"

#include <algorithm>

namespace factum::detail {
namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string describe(const Anchor& a) {
  return "the anchor of position " + std::to_string(a.position) + " (head " + to_hex(a.head) +
         ", signed at " + std::to_string(a.time_ms) + " ms since the epoch)";
}

}  // namespace

std::optional<Hash> hash_at(EventRange events, Position p) {
  for (const RecordedEvent& e : events) {
    if (e.position == p) return e.hash;
    break;
  }
  return std::nullopt;
}

AnchoredLog anchored_log(const EventStore& store) {
  return {[&store] { return store.head(); },
          [&store](Position p) { return hash_at(store.read_all(p), p); }};
}

void check_log_holds(const AnchoredLog& log, const Anchor& anchor, const std::string& what) {
  const Head head = log.head();
  if (head.position < anchor.position) {
    throw AnchorError(what + "it ends at position " + std::to_string(head.position) + ", behind " +
                      describe(anchor) +
                      ": anchored events are gone (a cut-off tail, a lost WAL, an older backup)");
  }
  if (anchor.position == 0) return;
  if (log.hash_at(anchor.position) != anchor.head) {
    throw AnchorError(what + "its event at position " + std::to_string(anchor.position) +
                      " is not the one signed by " + describe(anchor) +
                      ": the log was rewritten after it was anchored");
  }
}

Anchor anchor_log(const AnchoredLog& log, const AnchorSigningKey& key, AnchorSink& sink) {
  return sink.append([&](const std::optional<Anchor>& last) {
    if (last) {
      // Chain only to an anchor of this key: a forged or foreign last line is not followed.
      if (!AnchorPublicKey::from_raw(key.public_key()).verifies(*last)) {
        throw AnchorError("factum: not anchoring the store: the sink's last anchor, " +
                          describe(*last) +
                          ", is not signed by this key (the anchors were altered or belong to "
                          "another key)");
      }
      check_log_holds(log, *last, "factum: not anchoring the store: ");
    }
    return key.sign(log.head(), now_ms(), last);
  });
}

void check_at_open(const AnchoredLog& log, const AnchoringOptions& options,
                   const std::string& shown) {
  const std::optional<Anchor> newest = options.sink->last();
  if (!newest) return;
  const std::string what = "factum: refusing to open '" + shown + "': ";
  if (!AnchorPublicKey::from_raw(options.key->public_key()).verifies(*newest)) {
    throw AnchorError(what + "the newest anchor of its sink, " + describe(*newest) +
                      ", is not signed by the anchoring key: the anchors were altered or "
                      "belong to another key (factum verify --anchors says more)");
  }
  check_log_holds(log, *newest,
                  what +
                      "(restore the newest backup; or, to accept the loss, start a new anchor "
                      "file and keep the old one as evidence; factum verify --anchors says "
                      "more) ");
}

Anchorer::Anchorer(const AnchoringOptions& options, std::function<Anchor()> anchor)
    : options_(options), anchor_(std::move(anchor)), thread_([this] { run(); }) {}

Anchorer::~Anchorer() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    wake_.notify_all();
  }
  thread_.join();
  bool pending = false;
  {
    // After the join: an attempt that failed meanwhile has put its events back.
    MutexLock lock(mu_);
    pending = pending_ > 0;
  }
  if (pending && options_.at_close) attempt();
}

void Anchorer::appended(std::uint64_t events) noexcept {
  MutexLock lock(mu_);
  const bool first = pending_ == 0;
  if (first) first_pending_ = Clock::now();
  pending_ += events;
  // The thread sleeps until a deadline it computed: a first pending event sets one (`every`).
  if (first || due(Clock::now())) wake_.notify_all();
}

bool Anchorer::due(Clock::time_point now) const {
  if (pending_ == 0 || now < retry_at_) return false;
  if (options_.every_events > 0 && pending_ >= options_.every_events) return true;
  return options_.every.count() > 0 && now >= first_pending_ + options_.every;
}

Anchorer::Clock::time_point Anchorer::next_wake() const {
  Clock::time_point at = Clock::time_point::max();
  if (pending_ > 0 && options_.every.count() > 0) at = first_pending_ + options_.every;
  if (pending_ > 0 && options_.every_events > 0 && pending_ >= options_.every_events) {
    at = Clock::now();
  }
  return pending_ > 0 ? std::max(at, retry_at_) : at;
}

void Anchorer::run() {
  MutexLock lock(mu_);
  while (!stop_) {
    if (!due(Clock::now())) {
      const Clock::time_point at = next_wake();
      if (at == Clock::time_point::max()) {
        wake_.wait(lock);
      } else {
        wake_.wait_until(lock, at);
      }
      continue;
    }
    // What is appended from here on counts toward the next anchor.
    const std::uint64_t taken = pending_;
    const Clock::time_point first = first_pending_;
    pending_ = 0;
    lock.unlock();
    const bool ok = attempt();
    lock.lock();
    if (!ok) {  // not anchored: counted again, tried again after `retry`
      first_pending_ = pending_ == 0 ? first : std::min(first, first_pending_);
      pending_ += taken;
      retry_at_ = Clock::now() + options_.retry;
    }
  }
}

bool Anchorer::attempt() noexcept {
  try {
    anchor_();
    return true;
  } catch (...) {
    if (options_.on_error) {
      try {
        options_.on_error(std::current_exception());
      } catch (...) {
        // on_error must not throw; an exception from it is dropped.
      }
    }
    return false;
  }
}

}  // namespace factum::detail
