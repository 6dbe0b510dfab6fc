// Time windows (factum/projections/windows.hpp): membership on the textbook cases, keying,
// folding, watermark closing, lateness policies and deterministic replay.
#include <factum/eventstore/errors.hpp>
#include <factum/projections/windows.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "doctest/doctest.h"

namespace {

using namespace std::chrono_literals;
using factum::RecordedEvent;
using factum::Timestamp;
using factum::WindowSpec;
using MinuteDuration = std::chrono::duration<double, std::ratio<60>>;

// The event times each window saw, in minutes, in the order they were folded.
using Minutes = std::vector<double>;
using Result = factum::WindowResult<std::string, Minutes>;
using Aggregation = factum::WindowedAggregation<std::string, Minutes>;

Timestamp at(double minutes) {
  return Timestamp{std::chrono::round<std::chrono::microseconds>(MinuteDuration(minutes))};
}

double minutes_of(Timestamp t) { return MinuteDuration(t.time_since_epoch()).count(); }

RecordedEvent event_at(Timestamp recorded_at, const std::string& stream = "s-1",
                       const std::string& payload = "") {
  static factum::Position next_position = 0;
  RecordedEvent e;
  e.position = ++next_position;
  e.stream_id = stream;
  e.stream_version = 1;
  e.type = "test.Happened";
  e.payload = factum::to_bytes(payload);
  e.recorded_at = recorded_at;
  return e;
}

RecordedEvent event_at(double minutes, const std::string& stream = "s-1") {
  return event_at(at(minutes), stream);
}

// Keys by stream, folds the event times (minutes), collects closed windows and late events.
struct Collector {
  std::vector<Result> closed;
  std::vector<RecordedEvent> late;

  Aggregation::Options options(WindowSpec spec, std::chrono::microseconds lateness = 0us) {
    Aggregation::Options o{
        .spec = spec,
        .key = [](const RecordedEvent& e) { return e.stream_id; },
        .fold = [](Minutes& m, const RecordedEvent& e) { m.push_back(minutes_of(e.recorded_at)); },
        .on_close = [this](const Result& r) { closed.push_back(r); },
    };
    o.allowed_lateness = lateness;
    return o;
  }
};

// Feeds events at `minutes` (stream "s-1") in order, flushes, returns the windows.
std::vector<Result> windows_of(WindowSpec spec, const Minutes& minutes) {
  Collector c;
  Aggregation agg(c.options(spec));
  for (double m : minutes) agg.add(event_at(m));
  agg.flush();
  return c.closed;
}

// The members of each window, in emission order.
std::vector<Minutes> members(const std::vector<Result>& results) {
  std::vector<Minutes> out;
  for (const auto& r : results) out.push_back(r.value);
  return out;
}

// The start of each window, in minutes, in emission order.
Minutes starts(const std::vector<Result>& results) {
  Minutes out;
  for (const auto& r : results) out.push_back(minutes_of(r.start));
  return out;
}

}  // namespace

TEST_CASE("5-minute tumbling windows hold the events from minute 5k up to, not including, 5k+5") {
  auto windows = windows_of(WindowSpec::tumbling(5min), {0, 1, 4.5, 5, 7, 12});
  CHECK(members(windows) == std::vector<Minutes>{{0, 1, 4.5}, {5, 7}, {12}});
  CHECK(starts(windows) == Minutes{0, 5, 10});
  for (const auto& w : windows) CHECK(w.end == w.start + 5min);
}

TEST_CASE("tumbling windows align to the epoch before 1970 too") {
  auto windows = windows_of(WindowSpec::tumbling(5min), {-5, -1, 0});
  CHECK(members(windows) == std::vector<Minutes>{{-5, -1}, {0}});
  CHECK(starts(windows) == Minutes{-5, 0});
}

TEST_CASE("an event lands in exactly 5 of the 5-minute windows hopping by 1 minute") {
  auto windows = windows_of(WindowSpec::hopping(5min, 1min), {7.5});
  REQUIRE(windows.size() == 5);
  CHECK(starts(windows) == Minutes{3, 4, 5, 6, 7});
  for (const auto& w : windows) {
    CHECK(w.end == w.start + 5min);
    CHECK(w.value == Minutes{7.5});
  }
  // On a boundary: 7 is in [3, 8) .. [7, 12), not in [2, 7).
  CHECK(starts(windows_of(WindowSpec::hopping(5min, 1min), {7})) == Minutes{3, 4, 5, 6, 7});
}

TEST_CASE("a 5-minute sliding window holds, for each event at t, the events after t-5 up to t") {
  const Minutes times{0, 1, 3, 6, 8};
  auto windows = windows_of(WindowSpec::sliding(5min), times);
  // 6 - 5 = 1 and 8 - 5 = 3 are outside: the lower bound is exclusive, t itself inclusive.
  CHECK(members(windows) == std::vector<Minutes>{{0}, {0, 1}, {0, 1, 3}, {3, 6}, {6, 8}});
  REQUIRE(windows.size() == times.size());
  for (std::size_t i = 0; i < times.size(); ++i) {  // reported half-open: [t-5+1us, t+1us)
    CHECK(windows[i].start == at(times[i]) - 5min + 1us);
    CHECK(windows[i].end == at(times[i]) + 1us);
  }
}

TEST_CASE("events at the same time share one sliding window") {
  auto windows = windows_of(WindowSpec::sliding(5min), {1, 2, 2});
  CHECK(members(windows) == std::vector<Minutes>{{1}, {1, 2, 2}});
}

TEST_CASE("sessions with a 2-minute gap: {0.5, 1.2, 3.1}, {6.4, 7.0}, {9.3}") {
  auto windows = windows_of(WindowSpec::session(2min), {0.5, 1.2, 3.1, 6.4, 7.0, 9.3});
  CHECK(members(windows) == std::vector<Minutes>{{0.5, 1.2, 3.1}, {6.4, 7.0}, {9.3}});
  CHECK(starts(windows) == Minutes{0.5, 6.4, 9.3});
  CHECK(windows[0].end == at(3.1) + 2min);
  CHECK(windows[1].end == at(7.0) + 2min);
}

TEST_CASE("sessions with a 1.5-minute gap: {0.5, 1.2}, {3.1}, {6.4, 7.0}, {9.3}") {
  auto windows = windows_of(WindowSpec::session(90s), {0.5, 1.2, 3.1, 6.4, 7.0, 9.3});
  CHECK(members(windows) == std::vector<Minutes>{{0.5, 1.2}, {3.1}, {6.4, 7.0}, {9.3}});
}

TEST_CASE("events exactly one gap apart are in separate sessions") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::session(2min)));
  agg.add(event_at(at(0)));
  agg.add(event_at(at(2) - 1us));  // less than the gap: same session
  agg.add(event_at(at(2) - 1us + 2min));
  agg.flush();
  REQUIRE(c.closed.size() == 2);
  CHECK(c.closed[0].events == 2);
  CHECK(c.closed[1].events == 1);
}

TEST_CASE("an out-of-order event exactly one gap before a session starts a session of its own") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::session(2min), 10min));
  agg.add(event_at(4, "a"));
  agg.add(event_at(2, "a"));  // exactly the gap before 4: a session of its own
  agg.add(event_at(4, "b"));
  agg.add(event_at(at(2) + 1us, "b"));  // less than the gap before 4: joins that session
  agg.flush();
  REQUIRE(c.closed.size() == 3);
  CHECK(c.closed[0].key == "a");
  CHECK(c.closed[0].value == Minutes{2});
  CHECK(c.closed[1].key == "b");
  CHECK(c.closed[1].events == 2);
  CHECK(c.closed[2].value == Minutes{4});
}

TEST_CASE("an out-of-order event within the lateness bridges two sessions into one") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::session(2min), 5min));
  agg.add(event_at(0));
  agg.add(event_at(3));
  CHECK(agg.open_windows() == 2);
  agg.add(event_at(1.5));
  CHECK(agg.open_windows() == 1);
  agg.flush();
  REQUIRE(c.closed.size() == 1);
  CHECK(c.closed[0].value == Minutes{0, 1.5, 3});  // folded in event-time order
  CHECK(c.closed[0].start == at(0));
  CHECK(c.closed[0].end == at(5));
}

TEST_CASE("windows of different keys are kept apart and close in key order") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::tumbling(5min)));
  agg.add(event_at(1, "b"));
  agg.add(event_at(2, "a"));
  agg.add(event_at(3, "b"));
  agg.flush();
  REQUIRE(c.closed.size() == 2);
  CHECK(c.closed[0].key == "a");
  CHECK(c.closed[0].value == Minutes{2});
  CHECK(c.closed[1].key == "b");
  CHECK(c.closed[1].value == Minutes{1, 3});
}

TEST_CASE("the fold function builds each window's value: count and sum") {
  struct Sum {
    std::int64_t count = 0;
    std::int64_t total = 0;
  };
  std::vector<factum::WindowResult<std::string, Sum>> closed;
  factum::WindowedAggregation<std::string, Sum> agg({
      .spec = WindowSpec::tumbling(5min),
      .key = [](const RecordedEvent& e) { return e.stream_id; },
      .fold =
          [](Sum& s, const RecordedEvent& e) {
            ++s.count;
            s.total += std::stoll(factum::to_string(e.payload));
          },
      .on_close = [&](const auto& r) { closed.push_back(r); },
  });
  for (auto [minute, amount] :
       std::vector<std::pair<double, std::string>>{{1, "10"}, {2, "20"}, {3, "12"}, {6, "7"}})
    agg.add(event_at(at(minute), "s-1", amount));
  agg.flush();
  REQUIRE(closed.size() == 2);
  CHECK(closed[0].value.count == 3);
  CHECK(closed[0].value.total == 42);
  CHECK(closed[0].events == 3);
  CHECK(closed[1].value.total == 7);
}

TEST_CASE("a window is emitted once the watermark reaches its end, not before") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::tumbling(5min)));
  agg.add(event_at(1));
  agg.add(event_at(4.9));
  CHECK(agg.watermark() == at(4.9));
  CHECK(c.closed.empty());
  CHECK(agg.open_windows() == 1);
  agg.add(event_at(5));
  REQUIRE(c.closed.size() == 1);
  CHECK(c.closed[0].value == Minutes{1, 4.9});
  CHECK(agg.open_windows() == 1);
}

TEST_CASE("allowed lateness holds the watermark back and delays closing") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::tumbling(5min), 1min));
  agg.add(event_at(1));
  agg.add(event_at(5.5));
  CHECK(agg.watermark() == at(4.5));
  CHECK(c.closed.empty());
  agg.add(event_at(6));
  CHECK(c.closed.size() == 1);
}

TEST_CASE("an out-of-order event joins its tumbling window while that window is open") {
  auto windows = windows_of(WindowSpec::tumbling(5min), {1, 4, 2});
  CHECK(members(windows) == std::vector<Minutes>{{1, 4, 2}});  // folded in arrival order
}

TEST_CASE("allowed lateness admits an out-of-order event into a still-open window") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::tumbling(5min), 2min));
  agg.add(event_at(1));
  agg.add(event_at(6));  // watermark 4: [0, 5) stays open
  agg.add(event_at(3));
  agg.flush();
  CHECK(agg.late_count() == 0);
  CHECK(members(c.closed) == std::vector<Minutes>{{1, 3}, {6}});
}

TEST_CASE("LatePolicy::drop counts a late event and folds it nowhere") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::tumbling(5min)));
  agg.add(event_at(1));
  agg.add(event_at(6));  // watermark 6: [0, 5) closed
  agg.add(event_at(3));
  agg.flush();
  CHECK(agg.late_count() == 1);
  CHECK(members(c.closed) == std::vector<Minutes>{{1}, {6}});
}

TEST_CASE("LatePolicy::side_handler passes a late event to on_late") {
  Collector c;
  auto options = c.options(WindowSpec::tumbling(5min));
  options.late = factum::LatePolicy::side_handler;
  options.on_late = [&](const RecordedEvent& e) { c.late.push_back(e); };
  Aggregation agg(options);
  agg.add(event_at(1));
  agg.add(event_at(6));
  const RecordedEvent late = event_at(3);
  agg.add(late);
  agg.flush();
  CHECK(agg.late_count() == 1);
  REQUIRE(c.late.size() == 1);
  CHECK(c.late[0] == late);
  CHECK(members(c.closed) == std::vector<Minutes>{{1}, {6}});
}

TEST_CASE("a hopping event whose earliest window has closed is late for all its windows") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::hopping(5min, 1min)));
  agg.add(event_at(4));
  agg.add(event_at(5.5));  // watermark 5.5 closes [0, 5)
  agg.add(event_at(4.5));  // in [0, 5): late, even though [1, 6) .. [4, 9) are open
  agg.add(event_at(5.2));  // earliest window [1, 6) is open: on time
  agg.flush();
  CHECK(agg.late_count() == 1);
  for (const auto& w : c.closed) CHECK(std::count(w.value.begin(), w.value.end(), 4.5) == 0);
  std::size_t with_5_2 = 0;
  for (const auto& w : c.closed) with_5_2 += static_cast<std::size_t>(w.value.back() == 5.2);
  CHECK(with_5_2 == 5);
}

TEST_CASE("a sliding or session event behind the watermark is late") {
  for (WindowSpec spec : {WindowSpec::sliding(5min), WindowSpec::session(2min)}) {
    Collector c;
    Aggregation agg(c.options(spec));
    agg.add(event_at(1));
    agg.add(event_at(3));
    agg.add(event_at(2));
    CHECK(agg.late_count() == 1);
  }
}

TEST_CASE("a sliding window folds out-of-order events admitted by lateness in time order") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::sliding(5min), 2min));
  agg.add(event_at(1));
  agg.add(event_at(3));
  agg.add(event_at(2));
  agg.flush();
  CHECK(agg.late_count() == 0);
  CHECK(members(c.closed) == std::vector<Minutes>{{1}, {1, 2}, {1, 2, 3}});
}

TEST_CASE("event_time can read the time from the payload instead of recorded_at") {
  std::vector<RecordedEvent> events;
  for (const char* minute : {"1", "7", "12"}) events.push_back(event_at(at(100), "s-1", minute));
  auto run = [&](std::function<Timestamp(const RecordedEvent&)> event_time) {
    Collector c;
    auto options = c.options(WindowSpec::tumbling(5min));
    options.event_time = std::move(event_time);
    Aggregation agg(options);
    for (const auto& e : events) agg.add(e);
    agg.flush();
    return c.closed;
  };
  auto by_payload =
      run([](const RecordedEvent& e) { return at(std::stod(factum::to_string(e.payload))); });
  CHECK(starts(by_payload) == Minutes{0, 5, 10});
  auto by_recorded_at = run(nullptr);  // the default
  CHECK(starts(by_recorded_at) == Minutes{100});
  CHECK(by_recorded_at[0].events == 3);
}

TEST_CASE("invalid window specs throw InvalidArgument") {
  using factum::InvalidArgument;
  CHECK_THROWS_AS(WindowSpec::tumbling(0us), InvalidArgument);
  CHECK_THROWS_AS(WindowSpec::tumbling(-5min), InvalidArgument);
  CHECK_THROWS_AS(WindowSpec::hopping(5min, 0us), InvalidArgument);
  CHECK_THROWS_AS(WindowSpec::hopping(0us, 1min), InvalidArgument);
  CHECK_THROWS_AS(WindowSpec::hopping(5min, 6min), InvalidArgument);
  CHECK_THROWS_AS(WindowSpec::sliding(0us), InvalidArgument);
  CHECK_THROWS_AS(WindowSpec::session(0us), InvalidArgument);
  CHECK_THROWS_AS(WindowSpec::session(-1min), InvalidArgument);
  CHECK(WindowSpec::hopping(5min, 5min).hop() == 5min);
  CHECK(WindowSpec::session(2min).size() == 2min);
}

TEST_CASE("an aggregation refuses an unset spec, missing functions and bad lateness options") {
  using factum::InvalidArgument;
  Collector c;
  CHECK_THROWS_AS(Aggregation(c.options(WindowSpec{})), InvalidArgument);
  auto o = c.options(WindowSpec::tumbling(5min));
  CHECK_NOTHROW(Aggregation{o});
  auto without = [&](auto change) {
    auto copy = o;
    change(copy);
    return copy;
  };
  CHECK_THROWS_AS(Aggregation(without([](auto& x) { x.key = nullptr; })), InvalidArgument);
  CHECK_THROWS_AS(Aggregation(without([](auto& x) { x.fold = nullptr; })), InvalidArgument);
  CHECK_THROWS_AS(Aggregation(without([](auto& x) { x.on_close = nullptr; })), InvalidArgument);
  CHECK_THROWS_AS(Aggregation(without([](auto& x) { x.allowed_lateness = -1us; })),
                  InvalidArgument);
  CHECK_THROWS_AS(Aggregation(without([](auto& x) { x.late = factum::LatePolicy::side_handler; })),
                  InvalidArgument);
}

TEST_CASE("windows close in order of end, then start, then key") {
  Collector sessions;
  Aggregation by_session(sessions.options(WindowSpec::session(2min)));
  for (auto [minute, key] : std::vector<std::pair<double, std::string>>{{0.5, "c"},
                                                                        {1, "b"},
                                                                        {1.5, "c"},
                                                                        {2, "a"},
                                                                        {2.5, "b"},
                                                                        {2.5, "c"},
                                                                        {3, "a"},
                                                                        {3, "b"},
                                                                        {3, "c"}})
    by_session.add(event_at(minute, key));
  by_session.flush();
  // All three sessions end at 5: the one starting first comes first, whatever its key.
  REQUIRE(sessions.closed.size() == 3);
  for (const auto& w : sessions.closed) CHECK(w.end == at(5));
  CHECK(starts(sessions.closed) == Minutes{0.5, 1, 2});

  Collector c;
  Aggregation agg(c.options(WindowSpec::hopping(5min, 1min)));
  agg.add(event_at(7.5, "b"));
  agg.add(event_at(7.5, "a"));
  agg.flush();
  REQUIRE(c.closed.size() == 10);
  for (std::size_t i = 0; i < 10; ++i) {
    CHECK(minutes_of(c.closed[i].start) == static_cast<double>(3 + i / 2));
    CHECK(c.closed[i].key == (i % 2 == 0 ? "a" : "b"));
  }
}

TEST_CASE("the same events give identical results on replay, whatever the window kind") {
  // Out of order by up to 2.4 minutes, within the 3-minute lateness: nothing is late.
  std::vector<RecordedEvent> events;
  for (auto [minute, key] : std::vector<std::pair<double, std::string>>{{0.2, "a"},
                                                                        {0.4, "b"},
                                                                        {1.7, "a"},
                                                                        {1.1, "c"},
                                                                        {3.0, "b"},
                                                                        {2.2, "a"},
                                                                        {4.9, "c"},
                                                                        {5.3, "a"},
                                                                        {4.1, "b"},
                                                                        {6.0, "c"},
                                                                        {9.9, "a"},
                                                                        {8.0, "b"},
                                                                        {7.5, "c"},
                                                                        {11.0, "a"},
                                                                        {12.5, "b"},
                                                                        {10.4, "a"}})
    events.push_back(event_at(minute, key));
  auto in_time_order = events;
  std::stable_sort(in_time_order.begin(), in_time_order.end(),
                   [](const auto& x, const auto& y) { return x.recorded_at < y.recorded_at; });
  for (WindowSpec spec : {WindowSpec::tumbling(5min), WindowSpec::hopping(5min, 1min),
                          WindowSpec::sliding(5min), WindowSpec::session(2min)}) {
    auto run = [&](const std::vector<RecordedEvent>& input) {
      Collector c;
      Aggregation agg(c.options(spec, 3min));
      for (const auto& e : input) agg.add(e);
      agg.flush();
      CHECK(agg.late_count() == 0);
      return c.closed;
    };
    auto first = run(events);
    CHECK_FALSE(first.empty());
    CHECK(run(events) == first);
    CHECK(std::is_sorted(first.begin(), first.end(), [](const Result& x, const Result& y) {
      return std::tie(x.end, x.start, x.key) < std::tie(y.end, y.start, y.key);
    }));
    // The same windows with the same members as from events in time order.
    auto sorted_members = [](std::vector<Result> results) {
      for (auto& r : results) std::sort(r.value.begin(), r.value.end());
      return results;
    };
    CHECK(sorted_members(run(in_time_order)) == sorted_members(first));
  }
}

TEST_CASE("closed windows are freed: in-order input keeps only the current windows open") {
  for (WindowSpec spec : {WindowSpec::tumbling(5min), WindowSpec::hopping(5min, 1min),
                          WindowSpec::sliding(5min), WindowSpec::session(2min)}) {
    Collector c;
    Aggregation agg(c.options(spec));
    const std::size_t expected = spec.kind() == WindowSpec::Kind::hopping ? 5 : 1;
    for (int minute = 0; minute < 60; minute += 3) {
      agg.add(event_at(minute));
      CHECK(agg.open_windows() <= expected);
      CHECK(agg.buffered_events() <= 2);  // sliding: the events of the last 5 minutes
    }
    agg.flush();
    CHECK(agg.open_windows() == 0);
    CHECK(agg.buffered_events() == 0);
  }
}

TEST_CASE("advance_watermark closes windows without new events and never moves back") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::tumbling(5min)));
  agg.add(event_at(1));
  agg.advance_watermark(at(4.9));
  CHECK(c.closed.empty());
  agg.advance_watermark(at(5));
  CHECK(c.closed.size() == 1);
  agg.advance_watermark(at(3));
  CHECK(agg.watermark() == at(5));
}

TEST_CASE("after flush an event for an emitted window is late, a later one is not") {
  Collector c;
  Aggregation agg(c.options(WindowSpec::tumbling(5min)));
  agg.add(event_at(1));
  agg.flush();
  CHECK(agg.watermark() == at(6));  // largest event time + size
  agg.add(event_at(2));
  CHECK(agg.late_count() == 1);
  agg.add(event_at(20));
  agg.flush();
  CHECK(members(c.closed) == std::vector<Minutes>{{1}, {20}});
}

TEST_CASE("a window whose on_close throws stays open and is offered again") {
  for (WindowSpec spec :
       {WindowSpec::tumbling(5min), WindowSpec::sliding(5min), WindowSpec::session(2min)}) {
    Collector c;
    auto options = c.options(spec);
    bool fail = true;
    options.on_close = [&](const Result& r) {
      if (std::exchange(fail, false)) throw std::runtime_error("sink down");
      c.closed.push_back(r);
    };
    Aggregation agg(options);
    agg.add(event_at(1));
    CHECK_THROWS_AS(agg.add(event_at(6)), std::runtime_error);
    CHECK(agg.open_windows() == 2);
    agg.flush();
    CHECK(members(c.closed) == std::vector<Minutes>{{1}, {6}});
  }
}
