// Subscriptions that follow a query (SubscriptionFilter::query, docs/dcb.md): exactly the events
// the query matches (items of types only, of one tag, of several tags), history then live, in
// order, each once; position() and checkpoints move over the events it does not match; writer
// threads appending matching and other events while it runs. Both backends; the race runs under
// ThreadSanitizer too (label "concurrency").
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "factum/eventstore/query.hpp"
#include "factum/eventstore/tags.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace std::chrono_literals;
using factum::test::eventually;
using factum::test::kWait;
using factum::test::make_event;
using factum::test::TempStore;

namespace {

using State = Subscription::State;

// The events a handler saw, in order (added on the subscription's thread, read under the lock).
class QuerySeen {
 public:
  Subscription::Handler handler() {
    return [this](const RecordedEvent& e) {
      std::lock_guard lock(mu_);
      events_.push_back(e);
    };
  }
  std::vector<Position> positions() const {
    std::lock_guard lock(mu_);
    std::vector<Position> out;
    for (const RecordedEvent& e : events_) out.push_back(e.position);
    return out;
  }
  std::vector<RecordedEvent> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<RecordedEvent> events_;
};

EventData tagged(const std::string& type, std::vector<std::string> tags) {
  EventData e = make_event(type);
  if (!tags.empty()) set_tags(e.metadata, std::move(tags));
  return e;
}

// Three items: a type of any tags, a tag of any type, two tags together.
Query three_items() {
  return Query{{QueryItem{{"order.Placed"}, {}}, QueryItem{{}, {"user:alice"}},
                QueryItem{{}, {"team:red", "user:bob"}}}};
}

// Round `i` of a mix of events: some match three_items() (by one item, or two), most do not
// (other types, other tags, one of the two tags only, no tags).
EventData mixed(int i) {
  switch (i % 8) {
    case 0:
      return tagged("order.Placed", {});  // item 1
    case 1:
      return tagged("user.Renamed", {"user:alice"});  // item 2
    case 2:
      return tagged("user.Renamed", {"team:red", "user:bob"});  // item 3
    case 3:
      return tagged("user.Renamed", {"user:bob"});  // bob without red: no
    case 4:
      return tagged("order.Placed", {"user:alice"});  // items 1 and 2: once
    case 5:
      return tagged("user.Renamed", {"team:red", "user:carol"});  // no
    case 6:
      return tagged("order.Shipped", {});  // no
    default:
      return tagged("user.Joined", {"user:dave", "team:blue"});  // no
  }
}

void append_mixed(EventStore& store, int first, int n, const std::string& stream_prefix = "s") {
  for (int i = first; i < first + n; ++i) {
    store.append(stream_prefix + "-" + std::to_string(i % 5), ExpectedVersion::any(), mixed(i));
  }
}

// The positions after `after` the query matches, found by reading the whole log.
std::vector<Position> matching(const EventStore& store, const Query& query, Position after = 0) {
  std::vector<Position> out;
  for (const RecordedEvent& e : store.read_all(after + 1)) {
    if (matches(query, e)) out.push_back(e.position);
  }
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("subscription");

TEST_CASE("a query subscription delivers exactly the events the query matches, history then live") {
  TempStore t;
  append_mixed(t.store, 0, 43);  // ends with a non-matching event
  const Query query = three_items();
  QuerySeen seen;
  Subscription sub(
      t.store, {.filter = SubscriptionFilter::query(query), .batch_size = 3, .poll_interval = 0ms},
      seen.handler());
  // The position reaches the head though the last events do not match.
  REQUIRE(sub.wait_for(43, kWait));
  CHECK(eventually([&] { return sub.state() == State::live; }));
  CHECK(seen.positions() == matching(t.store, query));
  append_mixed(t.store, 43, 37);
  t.store.append("x-1", ExpectedVersion::any(), tagged("misc.Noted", {"user:carol"}));
  REQUIRE(sub.wait_for(81, kWait));
  sub.stop();
  CHECK(sub.position() == 81);
  const std::vector<Position> want = matching(t.store, query);
  CHECK(want.size() == 40);  // 4 of every 8 of the 80 mixed events
  CHECK(seen.positions() == want);
  for (const RecordedEvent& e : seen.events()) CHECK(matches(query, e));
  CHECK(seen.events() == read_query(t.store, query).events);
}

TEST_CASE("a query subscription of one item delivers it alone, from a position, batched") {
  TempStore t;
  append_mixed(t.store, 0, 40);
  const Query bob_red = Query::tagged({"user:bob", "team:red"});
  std::mutex mu;
  std::vector<Position> seen;
  std::size_t largest = 0;
  Subscription sub = Subscription::batched(t.store,
                                           {.filter = SubscriptionFilter::query(bob_red),
                                            .from = 10,
                                            .batch_size = 2,
                                            .poll_interval = 0ms},
                                           [&](std::span<const RecordedEvent> batch) {
                                             std::lock_guard lock(mu);
                                             largest = std::max(largest, batch.size());
                                             for (const RecordedEvent& e : batch)
                                               seen.push_back(e.position);
                                           });
  REQUIRE(sub.wait_for(40, kWait));
  append_mixed(t.store, 40, 16);
  REQUIRE(sub.wait_for(56, kWait));
  sub.stop();
  std::lock_guard lock(mu);
  CHECK(seen == matching(t.store, bob_red, 10));
  CHECK(seen.size() == 6);  // mixed(i) for i = 10, 18, ..., 50 (at positions i + 1)
  CHECK(largest <= 2);
}

TEST_CASE("a query subscription resumes after its durable checkpoint, saved at the head read") {
  TempStore t;
  append_mixed(t.store, 0, 30);
  const Query query = three_items();
  const SubscriptionOptions options{.filter = SubscriptionFilter::query(query),
                                    .checkpoint = "by-query",
                                    .batch_size = 4,
                                    .poll_interval = 0ms};
  QuerySeen first;
  {
    Subscription sub(t.store, options, first.handler());
    REQUIRE(sub.wait_for(30, kWait));
  }
  CHECK(first.positions() == matching(t.store, query));
  // The last events do not match: the checkpoint is the head all the same.
  CHECK(CheckpointStore(t.store).load("by-query") == 30);

  append_mixed(t.store, 30, 20);
  QuerySeen second;
  Subscription sub(t.store, options, second.handler());
  REQUIRE(sub.wait_for(50, kWait));
  append_mixed(t.store, 50, 5);
  REQUIRE(sub.wait_for(55, kWait));
  sub.stop();
  CHECK(second.positions() == matching(t.store, query, 30));
  CHECK_FALSE(second.positions().empty());
  CHECK(CheckpointStore(t.store).load("by-query") == 55);
}

TEST_CASE(
    "with_types and partitions restrict a query subscription, and partitions split by stream") {
  TempStore t;
  append_mixed(t.store, 0, 64, "p");
  const Query query = three_items();
  QuerySeen typed;
  QuerySeen member[2];
  SubscriptionFilter renamed = SubscriptionFilter::query(query).with_types({"user.Renamed"});
  Subscription only_renamed(t.store, {.filter = renamed, .poll_interval = 0ms}, typed.handler());
  std::vector<Subscription> group;
  for (std::uint32_t i = 0; i < 2; ++i) {
    SubscriptionFilter f = SubscriptionFilter::query(query);
    f.partitions = 2;
    f.partition = i;
    group.emplace_back(t.store, SubscriptionOptions{.filter = f, .poll_interval = 0ms},
                       member[i].handler());
  }
  REQUIRE(only_renamed.wait_for(64, kWait));
  for (const Subscription& s : group) REQUIRE(s.wait_for(64, kWait));
  only_renamed.stop();
  group.clear();
  std::vector<Position> want_renamed;
  std::vector<Position> want[2];
  for (const RecordedEvent& e : t.store.read_all()) {
    if (!matches(query, e)) continue;
    if (e.type == "user.Renamed") want_renamed.push_back(e.position);
    want[stable_hash(e.stream_id) % 2].push_back(e.position);
  }
  CHECK(typed.positions() == want_renamed);
  CHECK(member[0].positions() == want[0]);
  CHECK(member[1].positions() == want[1]);
  CHECK(want[0].size() + want[1].size() == matching(t.store, query).size());
}

TEST_CASE("a query without items delivers nothing, and its position follows the log") {
  TempStore t;
  append_mixed(t.store, 0, 12);
  QuerySeen seen;
  Subscription sub(t.store, {.filter = SubscriptionFilter::query(Query{}), .poll_interval = 0ms},
                   seen.handler());
  REQUIRE(sub.wait_for(12, kWait));
  append_mixed(t.store, 12, 3);
  REQUIRE(sub.wait_for(15, kWait));
  sub.stop();
  CHECK(seen.positions().empty());
}

TEST_CASE("a query subscription refuses an invalid query, and a query on another kind") {
  TempStore t;
  const auto start = [&](SubscriptionFilter f) {
    Subscription sub(t.store, {.filter = std::move(f), .poll_interval = 0ms},
                     [](const RecordedEvent&) {});
  };
  CHECK_THROWS_AS(start(SubscriptionFilter::query(Query::tagged({"bad tag"}))), InvalidArgument);
  CHECK_THROWS_AS(start(SubscriptionFilter::query(Query::of({""}))), InvalidArgument);
  CHECK_THROWS_AS(start(SubscriptionFilter::query(Query::tagged({std::string(129, 'x')}))),
                  InvalidArgument);
  SubscriptionFilter category = SubscriptionFilter::category("s");
  category.matching = Query::tagged({"user:alice"});
  CHECK_THROWS_AS(start(category), InvalidArgument);
  SubscriptionFilter bad_partition = SubscriptionFilter::query(Query::tagged({"user:alice"}));
  bad_partition.partitions = 2;
  bad_partition.partition = 2;
  CHECK_THROWS_AS(start(bad_partition), InvalidArgument);
  CHECK_NOTHROW(start(SubscriptionFilter::query(Query::tagged({"user:alice"}))));
}

// Writer threads append matching and other events (single events and batches) while a query
// subscription, started part-way, runs: it delivers every matching event after its start exactly
// once, in order. Rounds share a store; polling is off in even rounds, so a lost in-process
// wake-up is not covered up by a poll.
TEST_CASE("appends racing a query subscription: every matching event once, in order") {
  TempStore t;
  const Query query = three_items();
  const int rounds = factum::test::testing_postgres() ? 6 : 20;
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    const Position round_start = t.store.head_position();
    constexpr int kWriters = 3;
    constexpr int kPerWriter = 24;
    std::atomic<int> appended{0};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&t, &appended, w, round] {
        for (int i = 0; i < kPerWriter; ++i) {
          const std::string stream = "w" + std::to_string(w) + "-" + std::to_string(i % 3);
          if (i % 6 == 5) {  // a batch of two: one matching, one not
            std::vector<EventData> two{mixed(1), mixed(3)};
            t.store.append(stream, ExpectedVersion::any(), two);
          } else {
            t.store.append(stream, ExpectedVersion::any(), mixed(i + w + round));
          }
          ++appended;
        }
      });
    }
    while (appended.load() < (round * 5) % 40) std::this_thread::yield();
    QuerySeen seen;
    const auto poll = round % 2 == 0 ? 0ms : 5ms;
    Subscription sub(t.store,
                     {.filter = SubscriptionFilter::query(query),
                      .from = round_start,
                      .batch_size = static_cast<std::size_t>(1 + round % 5),
                      .poll_interval = poll},
                     seen.handler());
    for (std::thread& th : writers) th.join();
    const Position head = t.store.head_position();
    REQUIRE(sub.wait_for(head, kWait));
    sub.stop();
    REQUIRE(seen.positions() == matching(t.store, query, round_start));
  }
}

TEST_SUITE_END();
