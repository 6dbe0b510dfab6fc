// Consistency by query (query.hpp, docs/dcb.md): reads by query over types and tags, in log
// order, through the tag index; conditional appends that fail, writing nothing, when a matching
// event was appended after the position read; threads racing to claim the same names, exactly
// one winner each. Both backends.
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "factum/eventstore/decision.hpp"
#include "factum/eventstore/query.hpp"
#include "factum/eventstore/tags.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_event;
using factum::test::TempStore;

namespace {

EventData tagged(const std::string& type, std::vector<std::string> tags) {
  EventData e = make_event(type);
  set_tags(e.metadata, std::move(tags));
  return e;
}

std::vector<Position> positions(const QueryResult& r) {
  std::vector<Position> out;
  for (const RecordedEvent& e : r.events) out.push_back(e.position);
  return out;
}

// 1 joined alice, 2 joined bob, 3 plain, 4 renamed alice (team red), 5 left bob (team red).
void people(EventStore& store) {
  store.append("user-1", ExpectedVersion::any(), tagged("user.Joined", {"user:alice"}));
  store.append("user-2", ExpectedVersion::any(), tagged("user.Joined", {"user:bob"}));
  store.append("misc-1", ExpectedVersion::any(), make_event("misc.Noted"));
  store.append("user-1", ExpectedVersion::any(),
               tagged("user.Renamed", {"team:red", "user:alice"}));
  store.append("user-2", ExpectedVersion::any(), tagged("user.Left", {"team:red", "user:bob"}));
}

}  // namespace

TEST_CASE("a query matches by any item: its types (any) and its tags (all), in log order") {
  TempStore t;
  people(t.store);
  CHECK(positions(read_query(t.store, Query::tagged({"user:alice"}))) ==
        std::vector<Position>{1, 4});
  CHECK(positions(read_query(t.store, Query::tagged({"user:alice", "team:red"}))) ==
        std::vector<Position>{4});
  CHECK(positions(read_query(t.store, Query::of({"user.Joined"}, {"user:bob"}))) ==
        std::vector<Position>{2});
  CHECK(positions(read_query(t.store, Query::of({"user.Joined", "user.Left"}))) ==
        std::vector<Position>{1, 2, 5});
  Query either{
      {QueryItem{{}, {"user:alice"}}, QueryItem{{"user.Left"}, {}}, QueryItem{{}, {"team:red"}}}};
  CHECK(positions(read_query(t.store, either)) == std::vector<Position>{1, 4, 5});  // 4 once
  CHECK(positions(read_query(t.store, either, 4)) == std::vector<Position>{5});
  CHECK(read_query(t.store, Query::tagged({"user:carol"})).events.empty());
  CHECK(read_query(t.store, Query{}).events.empty());  // no items: matches nothing
  // The position read: the head, for the condition of the next append.
  CHECK(read_query(t.store, Query::tagged({"user:carol"})).position == 5);
  for (const RecordedEvent& e : read_query(t.store, either).events) {
    CHECK(matches(either, e));
  }
  CHECK_THROWS_AS(read_query(t.store, Query::tagged({"bad tag"})), InvalidArgument);
}

TEST_CASE("a query reads many events a page at a time, each once, in order") {
  TempStore t;
  std::vector<EventData> batch;
  for (int i = 0; i < 700; ++i) {
    batch.push_back(tagged("t.E", i % 2 == 0 ? std::vector<std::string>{"even", "all"}
                                             : std::vector<std::string>{"all"}));
  }
  t.store.append("s-1", ExpectedVersion::any(), batch);
  const Query q{{QueryItem{{}, {"even"}}, QueryItem{{}, {"all"}}}};
  const QueryResult r = read_query(t.store, q);
  REQUIRE(r.events.size() == 700);
  for (std::size_t i = 0; i < r.events.size(); ++i) CHECK(r.events[i].position == i + 1);
  std::size_t seen = 0;
  CHECK(visit_query(t.store, Query::tagged({"even"}), 0, [&](const RecordedEvent&) {
          return ++seen < 10;
        }) == 19);  // stopped at the 10th even event
}

TEST_CASE("a conditional append fails, writing nothing, when a matching event came after") {
  TempStore t;
  people(t.store);
  const Query alice = Query::tagged({"user:alice"});
  const QueryResult seen = read_query(t.store, alice);
  REQUIRE(seen.position == 5);
  // Nothing matching since 5: it commits (its own event matches the query: not a conflict).
  const EventData rename = tagged("user.Renamed", {"user:alice"});
  t.store.append("user-1", ExpectedVersion::any(), {&rename, 1}, AppendCondition{alice, 5});
  // Read at 3: events 4 and 6 matched since.
  const EventData late = tagged("user.Renamed", {"user:alice"});
  try {
    t.store.append("user-1", ExpectedVersion::any(), {&late, 1}, AppendCondition{alice, 3});
    FAIL("the condition should have failed");
  } catch (const AppendConditionFailed& e) {
    CHECK(e.after() == 3);
    CHECK(e.positions() == std::vector<Position>{4, 6});
    CHECK(std::string(e.what()).find("at 4, 6") != std::string::npos);
  }
  CHECK(t.store.head_position() == 6);
  CHECK(read_query(t.store, alice).events.size() == 3);
  // Another name's events do not conflict; types narrow the condition.
  const EventData carol = tagged("user.Joined", {"user:carol"});
  t.store.append("user-3", ExpectedVersion::no_stream(), {&carol, 1},
                 AppendCondition{Query::tagged({"user:carol"}), 0});
  const EventData other = tagged("user.Left", {"user:alice"});
  t.store.append("user-1", ExpectedVersion::any(), {&other, 1},
                 AppendCondition{Query::of({"user.Left"}, {"user:alice"}), 0});
  // Combined with an expected version: either failing refuses the whole append.
  const EventData stale = tagged("user.Renamed", {"user:dave"});
  CHECK_THROWS_AS(t.store.append("user-3", ExpectedVersion::no_stream(), {&stale, 1},
                                 AppendCondition{Query::tagged({"user:dave"}), 0}),
                  ConcurrencyError);
  // A retry of a conditional append that committed returns its result, unchecked.
  const AppendResult again = t.store.append("user-3", ExpectedVersion::no_stream(), {&carol, 1},
                                            AppendCondition{Query::tagged({"user:carol"}), 0});
  CHECK(again.last_position == 7);
  CHECK(t.store.verify().ok());
}

TEST_CASE("append_multi on a condition checks it once for the whole commit") {
  TempStore t;
  people(t.store);
  const EventData a = tagged("seat.Booked", {"seat:1"});
  const EventData b = tagged("seat.Booked", {"seat:2"});
  const std::vector<StreamAppend> both{{"booking-1", ExpectedVersion::no_stream(), {a}},
                                       {"booking-2", ExpectedVersion::no_stream(), {b}}};
  const Query seats{{QueryItem{{}, {"seat:1"}}, QueryItem{{}, {"seat:2"}}}};
  t.store.append_multi(both, AppendCondition{seats, 5});  // its own events do not conflict
  const EventData c = tagged("seat.Booked", {"seat:2"});
  const EventData d = tagged("seat.Booked", {"seat:3"});
  const std::vector<StreamAppend> again{{"booking-3", ExpectedVersion::no_stream(), {d}},
                                        {"booking-4", ExpectedVersion::no_stream(), {c}}};
  CHECK_THROWS_AS(t.store.append_multi(again, AppendCondition{seats, 5}), AppendConditionFailed);
  CHECK(t.store.head_position() == 7);
}

TEST_CASE("threads racing to claim the same names: exactly one claim of each lands") {
  TempStore t;
  constexpr int kNames = 20;
  constexpr int kThreads = 4;
  std::atomic<int> won{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      for (int n = 0; n < kNames; ++n) {
        const std::string name = "username:u" + std::to_string(n);
        const Query q = Query::tagged({name});
        const QueryResult seen = read_query(t.store, q);
        if (!seen.events.empty()) {
          ++refused;
          continue;
        }
        const EventData claim = tagged("user.Claimed", {name});
        try {
          t.store.append("claim-" + std::to_string(k) + "-" + std::to_string(n),
                         ExpectedVersion::no_stream(), {&claim, 1},
                         AppendCondition{q, seen.position});
          ++won;
        } catch (const AppendConditionFailed&) {
          ++refused;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(won.load() == kNames);
  CHECK(won.load() + refused.load() == kNames * kThreads);
  for (int n = 0; n < kNames; ++n) {
    CHECK(read_query(t.store, Query::tagged({"username:u" + std::to_string(n)})).events.size() ==
          1);
  }
  CHECK(t.store.verify().ok());
}

TEST_CASE("threads appending on conditions, some failing: each refusal fails its append alone") {
  // Threads share one store: their appends commit in groups, a conditional one anywhere in a
  // group, on streams the writer knows (one round trip on PostgreSQL) and new ones.
  TempStore t;
  t.store.append("taken", ExpectedVersion::no_stream(), tagged("name.Taken", {"name:taken"}));
  constexpr int kThreads = 4;
  constexpr int kAppends = 40;
  std::atomic<int> refused{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      const std::string stream = "s-" + std::to_string(k);
      StreamVersion version = 0;
      for (int i = 0; i < kAppends; ++i) {
        const std::string mine = "n:" + std::to_string(k) + "-" + std::to_string(i);
        const EventData e = tagged("name.Claimed", {mine});
        // Every third append is on a condition that fails (event 1 matches it), the rest on
        // one that holds (their tags are their own).
        const bool fails = i % 3 == 1;
        const Query q = Query::tagged({fails ? std::string("name:taken") : mine});
        const std::string target = i % 2 == 0 ? stream : stream + "-" + std::to_string(i);
        try {
          const AppendResult r =
              t.store.append(target, ExpectedVersion::any(), {&e, 1}, AppendCondition{q, 0});
          if (fails) ++wrong;
          if (target == stream && r.stream_version != ++version) ++wrong;
        } catch (const AppendConditionFailed& f) {
          if (!fails || f.positions() != std::vector<Position>{1}) ++wrong;
          ++refused;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
  const int landed = kThreads * kAppends - refused.load();
  CHECK(refused.load() == kThreads * (kAppends / 3 + (kAppends % 3 == 2 ? 1 : 0)));
  CHECK(t.store.head_position() == static_cast<Position>(landed + 1));
  // Each landed event is indexed once, under its own tag; no refused one is.
  std::size_t indexed = 0;
  for (int k = 0; k < kThreads; ++k) {
    for (int i = 0; i < kAppends; ++i) {
      const QueryResult r =
          read_query(t.store, Query::tagged({"n:" + std::to_string(k) + "-" + std::to_string(i)}));
      CHECK(r.events.size() == (i % 3 == 1 ? 0U : 1U));
      indexed += r.events.size();
    }
  }
  CHECK(indexed == static_cast<std::size_t>(landed));
  CHECK(t.store.verify().ok());
}

TEST_CASE("an event read by query is checked against its hash") {
  TempStore t;
  people(t.store);
  t.store.write_sql([](Sql& sql) {
    sql.execute(sql.dialect() == SqlDialect::postgres
                    ? "DROP TRIGGER IF EXISTS events_are_immutable ON events"
                    : "DROP TRIGGER IF EXISTS events_are_immutable");
    sql.execute("UPDATE events SET type = 'user.Forged' WHERE position = 4");
  });
  CHECK_THROWS_AS(read_query(t.store, Query::tagged({"user:alice"})), CorruptEventError);
}

namespace {

struct HandleTaken : std::runtime_error {
  HandleTaken() : std::runtime_error("taken") {}
};

// Claims `handle` for `user` through decide: refused (HandleTaken) when the query finds it.
std::vector<AppendResult> claim(EventStore& store, const std::string& handle,
                                const std::string& user) {
  return decide(store, Query::tagged({"handle:" + handle}), [&](const QueryResult& seen) {
    if (!seen.events.empty()) throw HandleTaken();
    return std::vector<StreamAppend>{
        {"user-" + user, ExpectedVersion::any(), {tagged("user.Claimed", {"handle:" + handle})}}};
  });
}

}  // namespace

TEST_CASE("decide reads, decides and appends on the condition, and retries a lost race") {
  TempStore t;
  CHECK(claim(t.store, "alice", "1").at(0).last_position == 1);
  CHECK_THROWS_AS(claim(t.store, "alice", "2"), HandleTaken);  // refused: nothing written
  CHECK(t.store.head_position() == 1);
  // A decision to do nothing writes nothing.
  CHECK(decide(t.store, Query::tagged({"x"}), [](const QueryResult&) {
          return std::vector<StreamAppend>{};
        }).empty());
  // A matching event lands between every read and its append: each attempt loses the race,
  // and after the last one the failure is thrown.
  int calls = 0;
  EventStore other = EventStore::open(t.path, TempStore::fast_options());
  const auto racing = [&](const QueryResult&) {
    ++calls;
    other.append("rival", ExpectedVersion::any(), tagged("user.Claimed", {"handle:bob"}));
    return std::vector<StreamAppend>{
        {"user-3", ExpectedVersion::any(), {tagged("user.Claimed", {"handle:bob"})}}};
  };
  CHECK_THROWS_AS(decide(t.store, Query::tagged({"handle:bob"}), racing, DecideOptions{3}),
                  AppendConditionFailed);
  CHECK(calls == 3);
  CHECK(read_query(t.store, Query::tagged({"handle:bob"})).events.size() == 3);  // the rival's
  CHECK_THROWS_AS(decide(t.store, Query::tagged({"handle:bob"}), racing, DecideOptions{0}),
                  InvalidArgument);
}

TEST_CASE("threads deciding on the same handles: one claim each, every loser refused") {
  TempStore t;
  constexpr int kHandles = 10;
  std::atomic<int> won{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int h = 0; h < kHandles; ++h) {
        try {
          claim(t.store, "h" + std::to_string(h), std::to_string(k));
          ++won;
        } catch (const HandleTaken&) {
          ++refused;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(won.load() == kHandles);
  CHECK(refused.load() == 3 * kHandles);
}
