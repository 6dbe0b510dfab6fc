// ProjectionEngine, projections that follow a query (Projection::query, docs/dcb.md): the read
// model folds exactly the events the query matches, async and inline, under writer threads, and
// a rebuild (a version bump) folds the same events again; the checkpoint moves over the events
// the query does not match. Both backends.
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine_support.hpp"
#include "factum/eventstore/query.hpp"
#include "factum/eventstore/tags.hpp"

using namespace factum;
using namespace factum::test;

TEST_SUITE_BEGIN("projection engine");

namespace {

// A Fold (engine_support.hpp) that follows a query instead of event types.
class QueryFold : public Fold {
 public:
  QueryFold(Fold::Options o, Query q) : Fold(std::move(o)), q_(std::move(q)) {}
  std::optional<Query> query() const override { return q_; }

 private:
  Query q_;
};

// Items: a type of any tags, a tag, two tags together.
Query three_items() {
  return Query{{QueryItem{{"order.Placed"}, {}}, QueryItem{{}, {"user:alice"}},
                QueryItem{{}, {"team:red", "user:bob"}}}};
}

// Event `i` of a mix (payload i): half of them match three_items().
EventData mixed(int i) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kinds{
      {"order.Placed", {}},                        // matches: item 1
      {"user.Renamed", {"user:alice"}},            // item 2
      {"user.Renamed", {"team:red", "user:bob"}},  // item 3
      {"user.Renamed", {"user:bob"}},              // no: one of item 3's tags
      {"order.Placed", {"user:alice"}},            // items 1 and 2
      {"user.Renamed", {"team:red"}},              // no
      {"order.Shipped", {}},                       // no
      {"user.Joined", {"user:dave"}},              // no
  };
  const auto& [type, tags] = kinds[static_cast<std::size_t>(i) % kinds.size()];
  EventData e = make_event(type, std::to_string(i));
  if (!tags.empty()) set_tags(e.metadata, tags);
  return e;
}

void append_mixed(EventStore& store, int first, int n, const std::string& prefix = "s") {
  for (int i = first; i < first + n; ++i) {
    store.append(prefix + "-" + std::to_string(i % 4), ExpectedVersion::any(), mixed(i));
  }
}

// The fold of the log's events the query matches (times `weight`).
Tallies fold_matching(const EventStore& store, const Query& query, std::int64_t weight = 1) {
  Tallies out;
  for (const RecordedEvent& e : store.read_all()) {
    if (!matches(query, e)) continue;
    Tally& t = out[e.stream_id];
    t.n += weight;
    t.total += weight * payload_number(e);
  }
  return out;
}

}  // namespace

TEST_CASE("a projection following a query folds exactly its events, live, and when rebuilt") {
  TempStore t;
  const Query query = three_items();
  append_mixed(t.store, 0, 207);  // ends with an event the query does not match
  {
    ProjectionEngine engine(t.store);
    auto v1 = std::make_shared<QueryFold>(Fold::Options{}, query);
    engine.add(v1, {.batch_size = 16});
    REQUIRE(engine.wait_for("fold", 207, kWait));
    CHECK(read_model(t.store) == fold_matching(t.store, query));
    CHECK(v1->applies == 104);
    append_mixed(t.store, 207, 45);
    REQUIRE(engine.wait_for("fold", 252, kWait));
    CHECK(read_model(t.store) == fold_matching(t.store, query));
    CHECK(read_model(t.store) != fold_log(t.store));
    CHECK(saved_checkpoint(t.store, "fold") == 252);
    CHECK(v1->applies == 127);  // each matching event once
  }
  // A new version rebuilds from position 1 with the new logic, the same events.
  ProjectionEngine engine(t.store);
  auto v2 = std::make_shared<QueryFold>(Fold::Options{.version = 2, .weight = 10}, query);
  engine.add(v2, {.batch_size = 7});
  REQUIRE(engine.wait_for("fold", 252, kWait));
  CHECK(read_model(t.store) == fold_matching(t.store, query, 10));
  CHECK(v2->applies == 127);
  engine.rebuild("fold");  // the same version again, from position 1
  append_mixed(t.store, 252, 8);
  REQUIRE(eventually([&] {
    const ProjectionStatus s = engine.status("fold");
    return s.state == ProjectionState::running && s.checkpoint == 260;
  }));
  CHECK(read_model(t.store) == fold_matching(t.store, query, 10));
}

TEST_CASE("an inline projection following a query shows a matching append when append returns") {
  TempStore t;
  const Query alice = Query::tagged({"user:alice"});
  append_mixed(t.store, 0, 10);
  ProjectionEngine engine(t.store);
  auto fold = std::make_shared<QueryFold>(Fold::Options{}, alice);
  engine.add(fold, {.mode = ProjectionMode::inline_append});
  CHECK(read_model(t.store) == fold_matching(t.store, alice));
  for (int i = 10; i < 26; ++i) {
    t.store.append("s-" + std::to_string(i % 4), ExpectedVersion::any(), mixed(i));
    CHECK(read_model(t.store) == fold_matching(t.store, alice));  // at once
  }
  CHECK(fold->applies == 7);  // mixed(i) for i = 1, 4, 9, 12, 17, 20, 25 (i % 8 of 1 or 4)
  CHECK(saved_checkpoint(t.store, "fold") == 26);
}

TEST_CASE("writer threads appending while a query projection runs: each match applied once") {
  TempStore t;
  const Query query = three_items();
  ProjectionEngine engine(t.store);
  auto fold = std::make_shared<QueryFold>(Fold::Options{}, query);
  engine.add(fold, {.batch_size = 5, .poll_interval = std::chrono::milliseconds(5)});
  const int per_writer = testing_postgres() ? 40 : 120;
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w) {
    writers.emplace_back([&t, w, per_writer] {
      for (int i = 0; i < per_writer; ++i) {
        t.store.append("w" + std::to_string(w) + "-" + std::to_string(i % 3),
                       ExpectedVersion::any(), mixed(i + w));
      }
    });
  }
  for (std::thread& th : writers) th.join();
  const Position head = t.store.head_position();
  REQUIRE(engine.wait_for("fold", head, kWait));
  const Tallies want = fold_matching(t.store, query);
  CHECK(read_model(t.store) == want);
  std::int64_t matched = 0;
  for (const auto& [stream, tally] : want) matched += tally.n;
  CHECK(fold->applies == matched);
}

TEST_CASE("a projection naming event types and a query, or an invalid query, is refused") {
  TempStore t;
  ProjectionEngine engine(t.store);
  CHECK_THROWS_AS(engine.add(std::make_shared<QueryFold>(Fold::Options{.types = {"order.Placed"}},
                                                         Query::tagged({"user:alice"}))),
                  InvalidArgument);
  CHECK_THROWS_AS(
      engine.add(std::make_shared<QueryFold>(Fold::Options{}, Query::tagged({"bad tag"}))),
      InvalidArgument);
  CHECK_NOTHROW(engine.add(std::make_shared<QueryFold>(Fold::Options{}, Query::tagged({"x"}))));
}

TEST_SUITE_END();
