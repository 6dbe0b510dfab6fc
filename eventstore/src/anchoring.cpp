#include "anchoring.hpp"

#include <algorithm>

#include "anchor_json.hpp"

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
          [&store](Position p) { return hash_at(store.read_all(p), p); },
          [&store] {
            std::vector<RecordedEvent> events;
            for (const RecordedEvent& e : store.read_stream(kAnchorStream)) events.push_back(e);
            return events;
          }};
}

std::optional<std::string> not_held(const AnchoredLog& log, const Anchor& anchor) {
  const Head head = log.head();
  if (head.position < anchor.position) {
    return "it ends at position " + std::to_string(head.position) + ", behind " + describe(anchor) +
           ": anchored events are gone (a cut-off tail, a lost WAL, an older backup)";
  }
  if (anchor.position == 0 || log.hash_at(anchor.position) == anchor.head) return std::nullopt;
  return "its event at position " + std::to_string(anchor.position) + " is not the one signed by " +
         describe(anchor) + ": the log was rewritten after it was anchored";
}

std::vector<AcceptedRollback> acceptances_in(const std::vector<RecordedEvent>& events) {
  std::vector<AcceptedRollback> out;
  for (const RecordedEvent& e : events) {
    if (e.type != kRollbackAcceptedType) continue;
    const std::optional<RollbackPayload> p = rollback_from_json(
        std::string_view(reinterpret_cast<const char*>(e.payload.data()), e.payload.size()));
    if (!p) continue;
    const auto reason = e.metadata.values.find("reason");
    out.push_back({e.position,
                   p->anchor,
                   p->anchor_position,
                   {e.position - 1, e.previous_hash},
                   reason == e.metadata.values.end() ? std::string() : reason->second,
                   e.recorded_at});
  }
  return out;
}

namespace {

std::optional<AcceptedRollback> acceptance_of(const std::vector<AcceptedRollback>& accepted,
                                              const Anchor& anchor) {
  const Hash h = anchor.hash();
  for (const AcceptedRollback& a : accepted) {
    if (a.anchor == h) return a;
  }
  return std::nullopt;
}

// The log's acceptance of `anchor`'s loss, if it holds one.
std::optional<AcceptedRollback> accepted_in(const AnchoredLog& log, const Anchor& anchor) {
  return acceptance_of(acceptances_in(log.anchor_events()), anchor);
}

void check_reason(const std::string& reason) {
  if (reason.empty() || reason.size() > 1000) {
    throw InvalidArgument("factum: the reason for accepting a rollback must be 1 to 1,000 bytes");
  }
  for (char c : reason) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      throw InvalidArgument(
          "factum: the reason for accepting a rollback holds a control character");
    }
  }
}

}  // namespace

AcceptedRollback record_acceptance(const AnchoredLog& log, const Anchor& anchor,
                                   const std::string& reason) {
  check_reason(reason);
  if (!log.append) throw InvalidArgument("factum: a rollback is accepted only in a writable store");
  // A concurrent acceptance moves the stream's version: read again and return it then.
  for (int attempt = 0;; ++attempt) {
    const std::vector<RecordedEvent> events = log.anchor_events();
    if (auto done = acceptance_of(acceptances_in(events), anchor)) return *done;
    if (!not_held(log, anchor)) {
      throw InvalidArgument("factum: no rollback to accept: the log holds " + describe(anchor));
    }
    const StreamVersion version = events.empty() ? 0 : events.back().stream_version;
    EventData e;
    e.type = std::string(kRollbackAcceptedType);
    const std::string json = rollback_to_json({anchor.hash(), anchor.position});
    e.payload = to_bytes(json);
    e.metadata.values["reason"] = reason;
    try {
      log.append(version == 0 ? ExpectedVersion::no_stream() : ExpectedVersion::exact(version), e);
    } catch (const ConcurrencyError&) {
      if (attempt == 3) throw;
    }
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
      if (const auto why = not_held(log, *last); why && !accepted_in(log, *last)) {
        throw AnchorError("factum: not anchoring the store: " + *why +
                          " (accept the loss first if it is known: factum anchor "
                          "--accept-rollback, or AnchoringOptions::accept_rollback)");
      }
    }
    return key.sign(log.head(), now_ms(), last);
  });
}

bool check_at_open(const AnchoredLog& log, const AnchoringOptions& options,
                   const std::string& shown) {
  const std::optional<Anchor> newest = options.sink->last();
  if (!newest) return false;
  const std::string what = "factum: refusing to open '" + shown + "': ";
  if (!AnchorPublicKey::from_raw(options.key->public_key()).verifies(*newest)) {
    throw AnchorError(what + "the newest anchor of its sink, " + describe(*newest) +
                      ", is not signed by the anchoring key: the anchors were altered or "
                      "belong to another key (factum verify --anchors says more)");
  }
  const std::optional<std::string> why = not_held(log, *newest);
  if (!why) return false;
  // Accepted already, perhaps not yet covered by an anchor: one is wanted soon.
  if (accepted_in(log, *newest)) return true;
  if (options.accept_rollback.empty()) {
    throw AnchorError(what + *why +
                      " (restore the newest backup; or, if the loss is known and accepted, open "
                      "once with AnchoringOptions::accept_rollback set to the reason, or run "
                      "factum anchor --accept-rollback, which record it in the log; factum "
                      "verify --anchors says more)");
  }
  record_acceptance(log, *newest, options.accept_rollback);
  return true;
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

void Anchorer::anchor_soon() noexcept {
  MutexLock lock(mu_);
  if (pending_ == 0) first_pending_ = Clock::now();
  pending_ = std::max<std::uint64_t>(pending_, 1);
  soon_ = true;
  wake_.notify_all();
}

bool Anchorer::due(Clock::time_point now) const {
  if (pending_ == 0 || now < retry_at_) return false;
  if (soon_) return true;
  if (options_.every_events > 0 && pending_ >= options_.every_events) return true;
  return options_.every.count() > 0 && now >= first_pending_ + options_.every;
}

Anchorer::Clock::time_point Anchorer::next_wake() const {
  Clock::time_point at = Clock::time_point::max();
  if (pending_ > 0 && options_.every.count() > 0) at = first_pending_ + options_.every;
  if (pending_ > 0 && (soon_ || (options_.every_events > 0 && pending_ >= options_.every_events))) {
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
    const bool soon = soon_;
    pending_ = 0;
    soon_ = false;
    lock.unlock();
    const bool ok = attempt();
    lock.lock();
    if (!ok) {  // not anchored: counted again, tried again after `retry`
      first_pending_ = pending_ == 0 ? first : std::min(first, first_pending_);
      pending_ += taken;
      soon_ = soon_ || soon;
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
