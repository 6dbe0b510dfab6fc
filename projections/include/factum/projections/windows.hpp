// factum/projections/windows.hpp — time windows over event time: tumbling, hopping, sliding
// and session windows, keyed and folded by user functions, closed by a watermark.
//
// A WindowedAggregation takes events one by one (add), puts each into the windows of its key
// that contain its event time (its recorded_at, or a time the caller reads from the payload),
// folds it into their accumulators and hands every window to on_close once, when the
// watermark — the largest event time seen minus the allowed lateness — reaches the window's
// end. Windows are half-open, [start, end). An event is late when a window it belongs to
// may have closed already (tumbling, hopping: its earliest window has; sliding, session: its
// time is behind the watermark): it is folded nowhere, counted, and dropped or passed to a
// side handler — so an accepted event is in every one of its windows, a late one in none.
// Closing order is fixed (by end, then start, then key), so the same events in the same
// order give the same results, call for call: replaying history reproduces a live run.
// docs/windows.md states every rule precisely.
//
// Thread-safety: WindowSpec and WindowResult are plain values. A WindowedAggregation is not
// thread-safe: use each one from one thread at a time (one aggregation per projection).
#pragma once

#include <factum/eventstore/errors.hpp>
#include <factum/eventstore/event.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>

namespace factum {

namespace detail {

// Throws InvalidArgument unless `d` is positive.
inline void require_positive(std::chrono::microseconds d, const char* what) {
  if (d.count() <= 0)
    throw InvalidArgument(std::string(what) + " must be positive, got " +
                          std::to_string(d.count()) + "us");
}

}  // namespace detail

// The kind of window and its sizes. Build one with a factory; a default-constructed spec is
// "unset" (size 0) and WindowedAggregation refuses it.
class WindowSpec {
 public:
  enum class Kind { tumbling, hopping, sliding, session };

  WindowSpec() = default;

  // Back-to-back windows [k*size, (k+1)*size), aligned to the Unix epoch: every event is in
  // exactly one. Throws InvalidArgument if size <= 0.
  static WindowSpec tumbling(std::chrono::microseconds size) {
    detail::require_positive(size, "tumbling window size");
    return WindowSpec(Kind::tumbling, size, size);
  }
  // Windows [k*hop, k*hop + size): an event is in every one that contains it (size/hop of
  // them when hop divides size). Throws InvalidArgument if size <= 0, hop <= 0 or hop > size.
  static WindowSpec hopping(std::chrono::microseconds size, std::chrono::microseconds hop) {
    detail::require_positive(size, "hopping window size");
    detail::require_positive(hop, "hopping window hop");
    if (hop > size)
      throw InvalidArgument("hopping window hop (" + std::to_string(hop.count()) +
                            "us) is longer than its size (" + std::to_string(size.count()) + "us)");
    return WindowSpec(Kind::hopping, size, hop);
  }
  // One window per distinct event time t of a key: (t - size, t], the `size` up to and
  // including t, reported as [t - size + 1us, t + 1us). Throws InvalidArgument if size <= 0.
  static WindowSpec sliding(std::chrono::microseconds size) {
    detail::require_positive(size, "sliding window size");
    return WindowSpec(Kind::sliding, size, std::chrono::microseconds{0});
  }
  // Sessions of a key: events less than `gap` apart are in one session [first, last + gap).
  // Throws InvalidArgument if gap <= 0.
  static WindowSpec session(std::chrono::microseconds gap) {
    detail::require_positive(gap, "session gap");
    return WindowSpec(Kind::session, gap, std::chrono::microseconds{0});
  }

  Kind kind() const noexcept { return kind_; }
  // The window length; for a session, the gap. 0 when unset.
  std::chrono::microseconds size() const noexcept { return size_; }
  // The distance between window starts: size (tumbling), hop (hopping), 0 (sliding, session).
  std::chrono::microseconds hop() const noexcept { return hop_; }

  friend bool operator==(const WindowSpec&, const WindowSpec&) = default;

 private:
  WindowSpec(Kind kind, std::chrono::microseconds size, std::chrono::microseconds hop)
      : kind_(kind), size_(size), hop_(hop) {}

  Kind kind_ = Kind::tumbling;
  std::chrono::microseconds size_{0};
  std::chrono::microseconds hop_{0};
};

// What happens to a late event. Every late event is counted (late_count()) either way.
enum class LatePolicy {
  drop,          // discarded
  side_handler,  // passed to WindowOptions::on_late
};

// A closed window of one key.
template <class Key, class Acc>
struct WindowResult {
  Key key;
  Timestamp start;         // the window is [start, end): start is in it,
  Timestamp end;           // end is not
  Acc value;               // WindowOptions::initial folded with the window's events
  std::size_t events = 0;  // how many events were folded into value

  friend bool operator==(const WindowResult&, const WindowResult&) = default;
};

template <class Key, class Acc>
struct WindowOptions {
  // The kind of window and its sizes. Required: the default (unset) spec is refused.
  WindowSpec spec{};
  // The key of an event; each key has windows of its own. Required.
  std::function<Key(const RecordedEvent&)> key{};
  // Folds one event into a window's accumulator. Required.
  std::function<void(Acc&, const RecordedEvent&)> fold{};
  // Receives every window once, when it closes, in closing order. Required.
  std::function<void(const WindowResult<Key, Acc>&)> on_close{};
  // The event time of an event. Default (empty): its recorded_at.
  std::function<Timestamp(const RecordedEvent&)> event_time{};
  // How far the watermark trails the largest event time seen. Default 0; must be >= 0.
  std::chrono::microseconds allowed_lateness{0};
  // What to do with late events. Default: drop (they are counted).
  LatePolicy late = LatePolicy::drop;
  // Receives each late event under LatePolicy::side_handler (required then; else unused).
  std::function<void(const RecordedEvent&)> on_late{};
  // The accumulator every window starts from. Default: Acc{}.
  Acc initial{};
};

namespace detail {

inline constexpr std::chrono::microseconds kTick{1};

// A key usable by windows: copyable and ordered by operator<.
template <class K>
concept WindowKey = std::copy_constructible<K> && requires(const K& a, const K& b) {
  { a < b } -> std::convertible_to<bool>;
};

// The largest multiple of `step` (from the epoch) at or before t; correct before 1970 too.
inline Timestamp floor_to(Timestamp t, std::chrono::microseconds step) {
  const auto ticks = t.time_since_epoch().count();
  auto quotient = ticks / step.count();
  if (ticks % step.count() != 0 && ticks < 0) --quotient;
  return Timestamp{std::chrono::microseconds{quotient * step.count()}};
}

// A window's identity; ordered the way windows close: by end, then start, then key.
template <class Key>
struct WindowId {
  Timestamp end;
  Timestamp start;
  Key key;

  friend bool operator<(const WindowId& a, const WindowId& b) {
    return std::tie(a.end, a.start, a.key) < std::tie(b.end, b.start, b.key);
  }
};

// Events by event time; events of equal time keep their arrival order.
using TimedEvents = std::multimap<Timestamp, RecordedEvent>;

// Folds `events` (in order) into a result for window `id` and hands it to on_close.
template <class Key, class Acc, class It>
void emit_folded(const WindowId<Key>& id, It first, It last, const WindowOptions<Key, Acc>& o) {
  WindowResult<Key, Acc> result{id.key, id.start, id.end, o.initial, 0};
  for (; first != last; ++first, ++result.events) o.fold(result.value, first->second);
  o.on_close(result);
}

// Tumbling and hopping windows: fixed boundaries, folded as events arrive.
template <class Key, class Acc>
class FixedWindows {
 public:
  explicit FixedWindows(const WindowSpec& spec) : size_(spec.size()), hop_(spec.hop()) {}

  // Late when the earliest window holding t has closed.
  bool is_late(Timestamp t, Timestamp watermark) const {
    return watermark >= first_start(t) + size_;
  }
  void add(const Key& key, Timestamp t, const RecordedEvent& e, const WindowOptions<Key, Acc>& o) {
    for (Timestamp s = first_start(t); s <= floor_to(t, hop_); s += hop_) {
      auto [slot, fresh] = open_.try_emplace(WindowId<Key>{s + size_, s, key}, Slot{o.initial});
      o.fold(slot->second.value, e);
      ++slot->second.events;
    }
  }
  void close_until(Timestamp watermark, const WindowOptions<Key, Acc>& o) {
    while (!open_.empty() && open_.begin()->first.end <= watermark) emit(open_.begin(), o);
  }
  std::size_t open_windows() const noexcept { return open_.size(); }
  std::size_t buffered_events() const noexcept { return 0; }

 private:
  struct Slot {
    Acc value;
    std::size_t events = 0;
  };
  using Map = std::map<WindowId<Key>, Slot>;

  // The start of the earliest window holding t: the first multiple of hop after t - size.
  Timestamp first_start(Timestamp t) const { return floor_to(t - size_, hop_) + hop_; }

  // Moves the accumulator out; puts it back if on_close throws (the window stays open).
  void emit(typename Map::iterator it, const WindowOptions<Key, Acc>& o) {
    const WindowId<Key>& id = it->first;
    WindowResult<Key, Acc> result{id.key, id.start, id.end, std::move(it->second.value),
                                  it->second.events};
    try {
      o.on_close(result);
    } catch (...) {
      it->second.value = std::move(result.value);
      throw;
    }
    open_.erase(it);
  }

  std::chrono::microseconds size_;
  std::chrono::microseconds hop_;
  Map open_;
};

// Sliding windows: one per distinct event time of a key, folded from buffered events when
// it closes. Events are kept while a window still open (or to come) can contain them.
template <class Key, class Acc>
class SlidingWindows {
 public:
  explicit SlidingWindows(const WindowSpec& spec) : size_(spec.size()) {}

  // Late when its own window (t - size, t] has closed, i.e. watermark > t.
  bool is_late(Timestamp t, Timestamp watermark) const { return t < watermark; }
  void add(const Key& key, Timestamp t, const RecordedEvent& e, const WindowOptions<Key, Acc>&) {
    buffers_[key].emplace(t, e);
    pending_.insert(WindowId<Key>{t + kTick, t + kTick - size_, key});
    expiry_.emplace(t + size_, key);
  }
  void close_until(Timestamp watermark, const WindowOptions<Key, Acc>& o) {
    while (!pending_.empty() && pending_.begin()->end <= watermark) {
      const WindowId<Key>& id = *pending_.begin();
      const TimedEvents& events = buffers_.at(id.key);
      emit_folded(id, events.lower_bound(id.start), events.lower_bound(id.end), o);
      pending_.erase(pending_.begin());
    }
    prune(watermark);
  }
  std::size_t open_windows() const noexcept { return pending_.size(); }
  // After each prune, exactly one expiry entry per buffered event.
  std::size_t buffered_events() const noexcept { return expiry_.size(); }

 private:
  // Frees events no open or future window can hold: those with time + size <= watermark.
  void prune(Timestamp watermark) {
    while (!expiry_.empty() && expiry_.begin()->first <= watermark) {
      auto buffer = buffers_.find(expiry_.begin()->second);
      if (buffer != buffers_.end()) {
        buffer->second.erase(buffer->second.begin(), buffer->second.upper_bound(watermark - size_));
        if (buffer->second.empty()) buffers_.erase(buffer);
      }
      expiry_.erase(expiry_.begin());
    }
  }

  std::chrono::microseconds size_;
  std::map<Key, TimedEvents> buffers_;    // events of each key that windows may still need
  std::set<WindowId<Key>> pending_;       // windows not yet closed, in closing order
  std::multimap<Timestamp, Key> expiry_;  // (event time + size, key) per buffered event
};

// Session windows: events of a key less than `gap` apart, merged as events arrive (an
// out-of-order event may bridge two sessions) and folded in event-time order at close.
template <class Key, class Acc>
class SessionWindows {
 public:
  explicit SessionWindows(const WindowSpec& spec) : gap_(spec.size()) {}

  // Late when behind the watermark: it might belong to a session already closed.
  bool is_late(Timestamp t, Timestamp watermark) const { return t < watermark; }
  void add(const Key& key, Timestamp t, const RecordedEvent& e, const WindowOptions<Key, Acc>&) {
    Sessions& sessions = by_key_[key];
    Session merged{t, t, {}};
    auto next = sessions.upper_bound(t);
    if (next != sessions.end() && next->first - t < gap_) absorb(key, sessions, next, merged);
    auto prev = sessions.upper_bound(t);
    if (prev != sessions.begin() && t - std::prev(prev)->second.last < gap_)
      absorb(key, sessions, std::prev(prev), merged);
    merged.events.emplace(t, e);
    ++buffered_;
    queue_.insert(WindowId<Key>{merged.last + gap_, merged.first, key});
    sessions.emplace(merged.first, std::move(merged));
  }
  void close_until(Timestamp watermark, const WindowOptions<Key, Acc>& o) {
    while (!queue_.empty() && queue_.begin()->end <= watermark) {
      const WindowId<Key>& id = *queue_.begin();
      auto sessions = by_key_.find(id.key);
      auto session = sessions->second.find(id.start);
      const TimedEvents& events = session->second.events;
      emit_folded(id, events.begin(), events.end(), o);
      buffered_ -= events.size();
      sessions->second.erase(session);
      if (sessions->second.empty()) by_key_.erase(sessions);
      queue_.erase(queue_.begin());
    }
  }
  std::size_t open_windows() const noexcept { return queue_.size(); }
  std::size_t buffered_events() const noexcept { return buffered_; }

 private:
  struct Session {
    Timestamp first;
    Timestamp last;
    TimedEvents events;
  };
  using Sessions = std::map<Timestamp, Session>;  // by first event time; gap apart or more

  // Moves session `it` into `merged` and forgets it.
  void absorb(const Key& key, Sessions& sessions, typename Sessions::iterator it, Session& merged) {
    Session& old = it->second;
    queue_.erase(WindowId<Key>{old.last + gap_, old.first, key});
    merged.first = std::min(merged.first, old.first);
    merged.last = std::max(merged.last, old.last);
    merged.events.merge(old.events);
    sessions.erase(it);
  }

  std::chrono::microseconds gap_;
  std::map<Key, Sessions> by_key_;
  std::set<WindowId<Key>> queue_;  // open sessions, in closing order
  std::size_t buffered_ = 0;       // events held by open sessions
};

}  // namespace detail

// Groups events into windows of event time, per key, and emits each window once it closes.
//
//   factum::WindowedAggregation<std::string, int> clicks({
//       .spec = factum::WindowSpec::tumbling(std::chrono::minutes(5)),
//       .key = [](const factum::RecordedEvent& e) { return e.stream_id; },
//       .fold = [](int& n, const factum::RecordedEvent&) { ++n; },
//       .on_close = [](const factum::WindowResult<std::string, int>& w) { /* store w */ },
//       .allowed_lateness = std::chrono::seconds(30)});
//   for (const auto& e : events) clicks.add(e);
//   clicks.flush();  // end of input
//
// Key: copyable, ordered by operator<. Acc: copyable. Exceptions thrown by the user
// functions propagate out of add/advance_watermark/flush; a window whose on_close throws
// stays open and is offered again by the next call that closes windows.
template <detail::WindowKey Key, std::copy_constructible Acc>
class WindowedAggregation {
 public:
  using Options = WindowOptions<Key, Acc>;
  using Result = WindowResult<Key, Acc>;

  // Throws InvalidArgument for an unset spec, a missing key, fold or on_close function, a
  // negative allowed_lateness, or LatePolicy::side_handler without on_late.
  explicit WindowedAggregation(Options options)
      : options_(validated(std::move(options))), store_(make_store(options_.spec)) {}

  // Feeds one event: late events go to the late policy; others are folded into their
  // windows; then the watermark moves up to (event time - allowed_lateness) and every window
  // that ends at or before it closes.
  void add(const RecordedEvent& event) {
    const Timestamp t = options_.event_time(event);
    if (std::visit([&](auto& s) { return s.is_late(t, watermark_); }, store_)) {
      on_late(event);
      return;
    }
    const Key key = options_.key(event);
    std::visit([&](auto& s) { s.add(key, t, event, options_); }, store_);
    if (!max_time_ || t > *max_time_) max_time_ = t;
    advance_watermark(t - options_.allowed_lateness);
  }

  // Moves the watermark up to `watermark` (it never moves back) and closes every window that
  // ends at or before it. For a quiet source, e.g. on a timer; add() calls it by itself.
  void advance_watermark(Timestamp watermark) {
    if (watermark > watermark_) watermark_ = watermark;
    std::visit([&](auto& s) { s.close_until(watermark_, options_); }, store_);
  }

  // End of input: moves the watermark to (largest event time seen + spec size, the gap for
  // sessions), past every window an event seen so far can belong to, which closes them all.
  // An event added afterwards that belongs to a window already emitted is late.
  void flush() {
    if (max_time_) advance_watermark(*max_time_ + options_.spec.size());
  }

  // Largest event time seen minus allowed_lateness (or as advanced); Timestamp::min() at first.
  Timestamp watermark() const noexcept { return watermark_; }
  // How many late events add() received (whatever the policy).
  std::size_t late_count() const noexcept { return late_count_; }
  // How many windows are open (held in memory, not yet emitted).
  std::size_t open_windows() const noexcept {
    return std::visit([](const auto& s) { return s.open_windows(); }, store_);
  }
  // How many event copies are held: sliding windows keep each event while a window open or
  // to come may hold it (event time + size > watermark); sessions keep the events of open
  // sessions; tumbling and hopping windows fold at once and keep none.
  std::size_t buffered_events() const noexcept {
    return std::visit([](const auto& s) { return s.buffered_events(); }, store_);
  }

 private:
  using Store = std::variant<detail::FixedWindows<Key, Acc>, detail::SlidingWindows<Key, Acc>,
                             detail::SessionWindows<Key, Acc>>;

  static Options validated(Options o) {
    if (o.spec.size().count() <= 0) throw InvalidArgument("window spec is unset");
    if (!o.key || !o.fold || !o.on_close)
      throw InvalidArgument("windowed aggregation needs key, fold and on_close functions");
    if (o.allowed_lateness.count() < 0) throw InvalidArgument("allowed_lateness is negative");
    if (o.late == LatePolicy::side_handler && !o.on_late)
      throw InvalidArgument("LatePolicy::side_handler needs an on_late function");
    if (!o.event_time) o.event_time = [](const RecordedEvent& e) { return e.recorded_at; };
    return o;
  }

  static Store make_store(const WindowSpec& spec) {
    switch (spec.kind()) {
      case WindowSpec::Kind::sliding:
        return detail::SlidingWindows<Key, Acc>(spec);
      case WindowSpec::Kind::session:
        return detail::SessionWindows<Key, Acc>(spec);
      default:
        return detail::FixedWindows<Key, Acc>(spec);
    }
  }

  void on_late(const RecordedEvent& event) {
    ++late_count_;
    if (options_.late == LatePolicy::side_handler) options_.on_late(event);
  }

  Options options_;
  Store store_;
  std::optional<Timestamp> max_time_;
  Timestamp watermark_ = Timestamp::min();
  std::size_t late_count_ = 0;
};

}  // namespace factum
