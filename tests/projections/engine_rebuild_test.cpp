// ProjectionEngine, rebuilds: a new generation is built from position 1 while the old one
// serves queries, then both swap in one transaction.
#include <doctest/doctest.h>

#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine_support.hpp"

using namespace factum;
using namespace factum::test;

TEST_SUITE_BEGIN("projection engine");

namespace {

// Builds generation 1 of "fold" (version 1, weight 1) over the store's history, then stops.
void build_version_1(EventStore& store) {
  ProjectionEngine engine(store);
  engine.add(std::make_shared<Fold>());
  REQUIRE(engine.wait_for("fold", store.head_position(), kWait));
}

std::int64_t tables_registered(const EventStore& store, std::uint64_t generation) {
  std::int64_t n = -1;
  store.read_sql([&](Sql& sql) {
    n = sql.query_integer("SELECT count(*) FROM factum_projection_tables WHERE generation = ?1",
                          {static_cast<std::int64_t>(generation)})
            .value_or(-1);
  });
  return n;
}

bool has_checkpoint(EventStore& store, const std::string& name) {
  for (const Checkpoint& c : CheckpointStore(store).list())
    if (c.name == name) return true;
  return false;
}

}  // namespace

TEST_CASE("a version bump rebuilds while the old generation serves, then swaps it in") {
  TempStore t;
  append_numbers(t.store, 100);
  build_version_1(t.store);

  Gate gate;
  auto v2 = std::make_shared<Fold>(Fold::Options{.version = 2, .weight = 10});
  v2->after_write = [&](const RecordedEvent& e, ProjectionContext&) {
    if (e.position == 60) gate.arrive_and_wait();
  };
  ProjectionEngine engine(t.store);
  engine.add(v2, {.batch_size = 16});
  REQUIRE(gate.wait_reached());

  // Mid-rebuild (the thread holds the write lock): old values, old version, both generations.
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(schema_has(t.store, "table", "counts__g1"));
  CHECK(schema_has(t.store, "table", "counts__g2"));
  ProjectionStatus s = engine.status("fold");
  CHECK(s.state == ProjectionState::rebuilding);
  CHECK(s.version == 1);
  CHECK(s.generation == 1);
  CHECK(s.checkpoint == 100);
  CHECK(s.rebuild_checkpoint == 48);               // three batches of 16 committed
  CHECK_FALSE(engine.wait_for("fold", 100, 0ms));  // not built by this code yet
  gate.open();

  REQUIRE(engine.wait_for("fold", 100, kWait));
  CHECK(read_model(t.store) == fold_log(t.store, {}, 10));
  REQUIRE(eventually([&] { return engine.status("fold").state == ProjectionState::running; }));
  s = engine.status("fold");
  CHECK(s.version == 2);
  CHECK(s.generation == 2);
  CHECK(s.checkpoint == 100);
  CHECK(s.lag == 0);
  CHECK(s.rebuild_checkpoint == 0);
  CHECK_FALSE(schema_has(t.store, "table", "counts__g1"));
  CHECK(schema_has(t.store, "table", "counts__g2"));
  CHECK(schema_has(t.store, "view", "counts"));
  CHECK(tables_registered(t.store, 1) == 0);
  CHECK(tables_registered(t.store, 2) == 1);
  CHECK_FALSE(has_checkpoint(t.store, "fold#rebuild"));
  CHECK(v2->applies == 100);

  append_numbers(t.store, 5, 200);  // the new logic follows the log
  REQUIRE(engine.wait_for("fold", 105, kWait));
  CHECK(read_model(t.store) == fold_log(t.store, {}, 10));
}

TEST_CASE("rebuild at the same version keeps the old generation current until the swap") {
  TempStore t;
  append_numbers(t.store, 500);
  std::atomic<bool> hold{true};
  auto fold = std::make_shared<Fold>();
  fold->after_write = [&](const RecordedEvent&, ProjectionContext& ctx) {
    if (ctx.generation() == 2 && hold) std::this_thread::sleep_for(20ms);  // a slow rebuild
  };
  ProjectionEngine engine(t.store);
  engine.add(fold, {.batch_size = 4});
  REQUIRE(engine.wait_for("fold", 500, kWait));

  engine.rebuild("fold");
  REQUIRE(eventually([&] { return engine.status("fold").state == ProjectionState::rebuilding; }));
  append_numbers(t.store, 12, 1000);
  REQUIRE(engine.wait_for("fold", 512, kWait));  // the serving generation keeps up
  CHECK(read_model(t.store) == fold_log(t.store));
  ProjectionStatus s = engine.status("fold");
  CHECK(s.state == ProjectionState::rebuilding);
  CHECK(s.generation == 1);
  CHECK(s.rebuild_checkpoint < 512);
  CHECK(schema_has(t.store, "table", "counts__g2"));

  hold = false;
  REQUIRE(eventually([&] {
    const ProjectionStatus now = engine.status("fold");
    return now.generation == 2 && now.state == ProjectionState::running;
  }));
  s = engine.status("fold");
  CHECK(s.version == 1);
  CHECK(s.checkpoint == 512);
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK_FALSE(schema_has(t.store, "table", "counts__g1"));
  CHECK(tables_registered(t.store, 1) == 0);
  CHECK(fold->resets == 2);
}

TEST_CASE("rebuild progress reports done <= total and one finished report at the end") {
  TempStore t;
  append_numbers(t.store, 300);
  build_version_1(t.store);

  std::mutex mu;
  std::vector<RebuildProgress> reports;
  EngineOptions options;
  options.progress_interval = 0ms;
  options.on_progress = [&](const RebuildProgress& p) {
    std::lock_guard lock(mu);
    reports.push_back(p);
  };
  ProjectionEngine engine(t.store, options);
  engine.add(std::make_shared<Fold>(Fold::Options{.version = 2}), {.batch_size = 16});
  REQUIRE(engine.wait_for("fold", 300, kWait));
  // The finished report follows the swap: wait_for may return just before it.
  REQUIRE(eventually([&] {
    std::lock_guard lock(mu);
    return !reports.empty() && reports.back().finished;
  }));

  std::lock_guard lock(mu);
  REQUIRE(reports.size() >= 2);
  Position previous = 0;
  for (const RebuildProgress& p : reports) {
    CHECK(p.projection == "fold");
    CHECK(p.done <= p.total);
    CHECK(p.done >= previous);
    previous = p.done;
  }
  const RebuildProgress& last = reports.back();
  CHECK(last.finished);
  CHECK(last.done == 300);
  CHECK(last.total == 300);
  CHECK(last.events_per_second > 0);
  CHECK(last.time_left.count() == 0);
  CHECK(std::count_if(reports.begin(), reports.end(),
                      [](const RebuildProgress& p) { return p.finished; }) == 1);
}

TEST_CASE("a rebuild interrupted by the engine's end resumes on restart and completes") {
  TempStore t;
  append_numbers(t.store, 600);
  build_version_1(t.store);

  Gate gate;
  auto first = std::make_shared<Fold>(Fold::Options{.version = 2, .weight = 10});
  first->after_write = [&](const RecordedEvent& e, ProjectionContext&) {
    if (e.position == 200) gate.arrive_and_wait();
    if (e.position > 200) std::this_thread::sleep_for(2ms);  // room for stop() to land
  };
  auto engine = std::make_unique<ProjectionEngine>(t.store);
  engine->add(first, {.batch_size = 16});
  REQUIRE(gate.wait_reached());
  std::thread stopper([&] { engine.reset(); });  // stops the thread, which is in apply
  std::this_thread::sleep_for(50ms);
  gate.open();
  stopper.join();

  // The rebuild is half done: the old generation serves, the file knows where it got.
  const ProjectionStatus half = ProjectionEngine::recorded(t.store).at(0);
  CHECK(half.state == ProjectionState::rebuilding);
  CHECK(half.version == 1);
  CHECK(half.generation == 1);
  CHECK(half.rebuild_checkpoint >= 208);
  CHECK(half.rebuild_checkpoint < 600);
  CHECK(read_model(t.store) == fold_log(t.store));

  auto second = std::make_shared<Fold>(Fold::Options{.version = 2, .weight = 10});
  ProjectionEngine again(t.store);
  again.add(second, {.batch_size = 16});
  REQUIRE(again.wait_for("fold", 600, kWait));
  CHECK(read_model(t.store) == fold_log(t.store, {}, 10));
  CHECK(second->resets == 0);  // the same generation, resumed
  CHECK(second->applies == static_cast<int>(600 - half.rebuild_checkpoint));
  CHECK(first->applies + second->applies == 600);
  const ProjectionStatus s = again.status("fold");
  CHECK(s.version == 2);
  CHECK(s.generation == 2);
  CHECK_FALSE(schema_has(t.store, "table", "counts__g1"));
}

TEST_CASE("inline: add() while a same-version rebuild resumes waits until appends apply it") {
  TempStore t;
  append_numbers(t.store, 300);
  Gate gate;
  auto first = std::make_shared<Fold>();
  first->after_write = [&](const RecordedEvent& e, ProjectionContext& ctx) {
    if (ctx.generation() != 2) return;
    if (e.position == 100) gate.arrive_and_wait();
    if (e.position > 100) std::this_thread::sleep_for(2ms);  // room for stop() to land
  };
  auto engine = std::make_unique<ProjectionEngine>(t.store);
  engine->add(first, {.mode = ProjectionMode::inline_append, .batch_size = 16});
  engine->rebuild("fold");
  REQUIRE(gate.wait_reached());
  std::thread stopper([&] { engine.reset(); });
  std::this_thread::sleep_for(50ms);
  gate.open();
  stopper.join();
  REQUIRE(ProjectionEngine::recorded(t.store).at(0).state == ProjectionState::rebuilding);

  append_numbers(t.store, 40, 301);  // a gap the serving generation catches up first
  auto second = std::make_shared<Fold>();
  second->after_write = [](const RecordedEvent&, ProjectionContext& ctx) {
    if (ctx.generation() == 1) std::this_thread::sleep_for(2ms);
  };
  ProjectionEngine again(t.store);
  again.add(second, {.mode = ProjectionMode::inline_append, .batch_size = 16});
  append_numbers(t.store, 1, 341);
  CHECK(read_model(t.store) == fold_log(t.store));  // applied inside the append
  REQUIRE(again.wait_for("fold", 341, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_SUITE_END();
