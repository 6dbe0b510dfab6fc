// ProjectionEngine: async projections, exactly once, status, and the errors of its API.
// Rebuilds, inline mode, failures and external targets have files of their own
// (engine_*_test.cpp); the shared projection and helpers are in engine_support.hpp.
#include <doctest/doctest.h>

#include <memory>
#include <thread>
#include <vector>

#include "engine_support.hpp"

using namespace factum;
using namespace factum::test;

TEST_SUITE_BEGIN("projection engine");

// --- Async ---------------------------------------------------------------------------------

TEST_CASE("an async projection builds generation 1 from history into tables served by a view") {
  TempStore t;
  append_numbers(t.store, 50);
  ProjectionEngine engine(t.store);
  auto fold = std::make_shared<Fold>();
  engine.add(fold);
  REQUIRE(engine.wait_for("fold", 50, kWait));
  CHECK(read_model(t.store, "counts") == fold_log(t.store));
  CHECK(read_model(t.store, "counts__g1") == fold_log(t.store));
  CHECK(schema_has(t.store, "view", "counts"));
  CHECK(schema_has(t.store, "table", "counts__g1"));
  CHECK_FALSE(schema_has(t.store, "table", "counts"));
  const ProjectionStatus s = engine.status("fold");
  CHECK(s.version == 1);
  CHECK(s.generation == 1);
  CHECK(s.checkpoint == 50);
  CHECK(fold->resets == 1);
  CHECK(fold->applies == 50);
}

TEST_CASE("an engine and a checkpoint store write nothing until a projection or a save does") {
  TempStore t;
  append_numbers(t.store, 3);
  {
    ProjectionEngine engine(t.store);
    CheckpointStore checkpoints(t.store);
    CHECK(checkpoints.load("nobody") == 0);
    CHECK_FALSE(checkpoints.remove("nobody"));
    CHECK(checkpoints.list().empty());
    CHECK(ProjectionEngine::recorded(t.store).empty());
  }
  CHECK_FALSE(schema_has(t.store, "table", "factum_projections"));
  CHECK_FALSE(schema_has(t.store, "table", "factum_checkpoints"));
  CheckpointStore(t.store).save("reader", 2);
  CHECK(schema_has(t.store, "table", "factum_checkpoints"));
  CHECK(CheckpointStore(t.store).load("reader") == 2);
}

TEST_CASE("an async projection follows live appends") {
  TempStore t;
  append_numbers(t.store, 10);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>());
  REQUIRE(engine.wait_for("fold", 10, kWait));
  for (int round = 0; round < 5; ++round) {
    append_numbers(t.store, 7, 100 + round * 7);
    REQUIRE(engine.wait_for("fold", t.store.head_position(), kWait));
    CHECK(read_model(t.store) == fold_log(t.store));
  }
  CHECK(engine.status("fold").checkpoint == 45);
}

// An idle projection polls and reads, but writes nothing: on PostgreSQL every write transaction
// is a commit that the store's watchers (this projection's own included) see, so an idle
// projection that wrote would wake itself for ever.
TEST_CASE("an idle async projection commits nothing to the store") {
  TempStore t;
  append_numbers(t.store, 10);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>(), {.poll_interval = std::chrono::milliseconds(5)});
  REQUIRE(engine.wait_for("fold", 10, kWait));
  REQUIRE(eventually([&] { return engine.status("fold").state == ProjectionState::running; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a step in flight ends
  const auto watcher = t.store.watch();
  CHECK_FALSE(watcher->changed());                              // the baseline
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // about 60 polls
  CHECK_FALSE(watcher->changed());
  // Still following: a new event is applied.
  append_numbers(t.store, 1, 11);
  REQUIRE(engine.wait_for("fold", 11, kWait));
  CHECK(watcher->changed());
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_CASE("an async projection resumes from its checkpoint when the engine is recreated") {
  TempStore t;
  append_numbers(t.store, 30);
  {
    ProjectionEngine engine(t.store);
    engine.add(std::make_shared<Fold>());
    REQUIRE(engine.wait_for("fold", 30, kWait));
    append_numbers(t.store, 5, 31);
    REQUIRE(engine.wait_for("fold", 35, kWait));
  }
  append_numbers(t.store, 12, 36);  // no engine runs: applied by the next one, once
  CHECK(saved_checkpoint(t.store, "fold") == 35);
  ProjectionEngine engine(t.store);
  auto fold = std::make_shared<Fold>();
  engine.add(fold);
  REQUIRE(engine.wait_for("fold", 47, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(fold->applies == 12);
  CHECK(fold->resets == 0);
  CHECK(engine.status("fold").generation == 1);
}

TEST_CASE("a logical table name with capitals is served, rebuilt and dropped like any other") {
  // The projection names its table unquoted (ctx.table()); the engine quotes the view and
  // the generations' tables in its own SQL. Both must name the same objects on either backend.
  TempStore t;
  append_numbers(t.store, 20);
  {
    ProjectionEngine engine(t.store);
    engine.add(std::make_shared<Fold>(Fold::Options{.table = "DailyCounts"}));
    REQUIRE(engine.wait_for("fold", 20, kWait));
  }
  CHECK(read_model(t.store, "DailyCounts") == fold_log(t.store));
  CHECK(schema_has(t.store, "view", "DailyCounts"));
  ProjectionEngine engine(t.store);
  engine.add(
      std::make_shared<Fold>(Fold::Options{.table = "DailyCounts", .version = 2, .weight = 3}));
  REQUIRE(engine.wait_for("fold", 20, kWait));
  CHECK(read_model(t.store, "DailyCounts") == fold_log(t.store, {}, 3));
  CHECK(engine.status("fold").generation == 2);
  CHECK(schema_has(t.store, "table", "DailyCounts__g2"));
  CHECK_FALSE(schema_has(t.store, "table", "DailyCounts__g1"));
}

// --- Exactly once ----------------------------------------------------------------------------

namespace {

// `threads` threads each append `per_thread` events (payloads unique) through `stores`
// (round robin), to streams shared between threads.
void append_concurrently(std::vector<EventStore*> stores, int threads, int per_thread) {
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&stores, w, per_thread] {
      EventStore& store = *stores[static_cast<std::size_t>(w) % stores.size()];
      for (int i = 0; i < per_thread; ++i) {
        const int value = w * per_thread + i + 1;
        store.append("c-" + std::to_string(value % 7), ExpectedVersion::any(),
                     make_event("test.Happened", std::to_string(value)));
      }
    });
  }
  for (auto& w : workers) w.join();
}

}  // namespace

TEST_CASE("events appended concurrently by several threads are each applied exactly once") {
  TempStore t;
  append_numbers(t.store, 20, 100000);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>(), {.batch_size = 16});
  append_concurrently({&t.store}, 4, 150);
  REQUIRE(t.store.head_position() == 620);
  REQUIRE(engine.wait_for("fold", 620, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_CASE("two engines on one store running the same projection never apply an event twice") {
  TempStore t;
  append_numbers(t.store, 40);
  ProjectionEngine first(t.store);
  ProjectionEngine second(t.store);
  auto a = std::make_shared<Fold>();
  auto b = std::make_shared<Fold>();
  first.add(a, {.batch_size = 8});
  second.add(b, {.batch_size = 8});
  append_concurrently({&t.store}, 3, 100);
  const Position head = t.store.head_position();
  REQUIRE(first.wait_for("fold", head, kWait));
  REQUIRE(second.wait_for("fold", head, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(a->resets + b->resets == 1);
}

TEST_CASE("two EventStore objects on one file, each with an engine, never apply an event twice") {
  TempStore t;
  EventStore other = EventStore::open(t.path, TempStore::fast_options());
  append_numbers(t.store, 25);
  ProjectionEngine first(t.store);
  first.add(std::make_shared<Fold>(), {.batch_size = 8, .poll_interval = 10ms});
  ProjectionEngine second(other);
  second.add(std::make_shared<Fold>(), {.batch_size = 8, .poll_interval = 10ms});
  append_concurrently({&t.store, &other}, 4, 75);
  const Position head = t.store.head_position();
  REQUIRE(head == 325);
  REQUIRE(first.wait_for("fold", head, kWait));
  REQUIRE(second.wait_for("fold", head, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(read_model(other) == fold_log(t.store));
}

// --- Status ----------------------------------------------------------------------------------

TEST_CASE("status reports checkpoint, head, lag, state and mode") {
  TempStore t;
  append_numbers(t.store, 12);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>());
  engine.add(std::make_shared<Fold>(Fold::Options{.name = "inline-fold", .table = "inline_counts"}),
             {.mode = ProjectionMode::inline_append});
  REQUIRE(engine.wait_idle(kWait));
  REQUIRE(eventually([&] {
    for (const auto& s : engine.status())
      if (s.state != ProjectionState::running) return false;
    return true;
  }));

  const std::vector<ProjectionStatus> all = engine.status();
  REQUIRE(all.size() == 2);
  CHECK(all[0].name == "fold");  // by name
  CHECK(all[1].name == "inline-fold");
  CHECK(all[0].mode == ProjectionMode::async);
  CHECK(all[1].mode == ProjectionMode::inline_append);
  for (const ProjectionStatus& s : all) {
    CHECK(s.checkpoint == 12);
    CHECK(s.head == 12);
    CHECK(s.lag == 0);
    CHECK(s.skipped == 0);
    CHECK_FALSE(s.error.has_value());
  }

  engine.stop();
  append_numbers(t.store, 5, 13);
  const ProjectionStatus s = engine.status("fold");
  CHECK(s.state == ProjectionState::stopped);
  CHECK(s.checkpoint == 12);
  CHECK(s.head == 17);
  CHECK(s.lag == 5);
  CHECK(engine.status("inline-fold").checkpoint == 12);  // a stopped inline projection
}

namespace {

void check_same(const ProjectionStatus& file, const ProjectionStatus& live) {
  CHECK(file.name == live.name);
  CHECK(file.version == live.version);
  CHECK(file.generation == live.generation);
  CHECK(file.mode == live.mode);
  CHECK(file.state == live.state);
  CHECK(file.checkpoint == live.checkpoint);
  CHECK(file.head == live.head);
  CHECK(file.lag == live.lag);
  CHECK(file.skipped == live.skipped);
  CHECK(file.error.has_value() == live.error.has_value());
  if (file.error && live.error) {
    CHECK(file.error->position == live.error->position);
    CHECK(file.error->event_type == live.error->event_type);
    CHECK(file.error->message == live.error->message);
  }
}

}  // namespace

TEST_CASE("recorded reads from the file what status shows, without the code, read-only too") {
  TempStore t;
  append_numbers(t.store, 8);
  t.store.append("s-9", ExpectedVersion::any(), make_event("test.Happened", "boom"));
  append_numbers(t.store, 3, 20);
  std::atomic<bool> broken{true};
  ProjectionEngine engine(t.store);
  auto failing = std::make_shared<Fold>(Fold::Options{.name = "failing", .table = "failing"});
  failing->after_write = boom_while(broken);
  engine.add(failing);
  engine.add(std::make_shared<Fold>(Fold::Options{.name = "inline-fold"}),
             {.mode = ProjectionMode::inline_append});
  REQUIRE(engine.wait_for("inline-fold", 12, kWait));
  REQUIRE(eventually([&] { return engine.status("failing").state == ProjectionState::failed; }));
  REQUIRE(eventually([&] {
    return engine.status("inline-fold").state == ProjectionState::running &&
           ProjectionEngine::recorded(t.store).at(1).state == ProjectionState::running;
  }));

  StoreOptions read_only = TempStore::fast_options();
  read_only.read_only = true;
  const EventStore reader = EventStore::open(t.path, read_only);
  const std::vector<ProjectionStatus> live = engine.status();
  for (const EventStore* store : std::initializer_list<const EventStore*>{&t.store, &reader}) {
    const std::vector<ProjectionStatus> file = ProjectionEngine::recorded(*store);
    REQUIRE(file.size() == 2);
    check_same(file[0], live[0]);
    check_same(file[1], live[1]);
  }
  const ProjectionStatus failed = ProjectionEngine::recorded(reader).at(0);
  CHECK(failed.state == ProjectionState::failed);
  CHECK(failed.checkpoint == 8);
  CHECK(failed.lag == 4);
  REQUIRE(failed.error.has_value());
  CHECK(failed.error->position == 9);
}

TEST_CASE("recorded on a file where no engine ever ran is empty") {
  TempStore t;
  append_numbers(t.store, 3);
  CHECK(ProjectionEngine::recorded(t.store).empty());
}

// --- Errors ----------------------------------------------------------------------------------

TEST_CASE("add refuses null, a duplicate name, a bad name, inline external and batch_size 0") {
  TempStore t;
  ProjectionEngine engine(t.store);
  CHECK_THROWS_AS(engine.add(nullptr), InvalidArgument);
  engine.add(std::make_shared<Fold>());
  CHECK_THROWS_AS(engine.add(std::make_shared<Fold>()), InvalidArgument);
  CHECK_THROWS_AS(engine.add(std::make_shared<Fold>(Fold::Options{.version = 2})), InvalidArgument);
  CHECK_THROWS_AS(engine.add(std::make_shared<Fold>(Fold::Options{.name = "a b"})),
                  InvalidArgument);
  CHECK_THROWS_AS(engine.add(std::make_shared<Fold>(Fold::Options{.name = ""})), InvalidArgument);
  CHECK_THROWS_AS(
      engine.add(std::make_shared<Fold>(Fold::Options{.name = "x"}),
                 {.mode = ProjectionMode::inline_append, .target = ProjectionTarget::external}),
      InvalidArgument);
  CHECK_THROWS_AS(engine.add(std::make_shared<Fold>(Fold::Options{.name = "y"}), {.batch_size = 0}),
                  InvalidArgument);
  // None of the refused ones left a trace; the first one still runs at version 1.
  const std::vector<ProjectionStatus> file = ProjectionEngine::recorded(t.store);
  REQUIRE(file.size() == 1);
  CHECK(file[0].name == "fold");
  CHECK(file[0].version == 1);
  CHECK(file[0].generation == 1);
  CHECK(file[0].state != ProjectionState::rebuilding);
  CHECK_FALSE(schema_has(t.store, "table", "counts__g2"));
  CHECK(engine.status().size() == 1);
}

TEST_CASE("rebuild, restart, status and wait_for of an unknown name throw NotFound") {
  TempStore t;
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>());
  CHECK_THROWS_AS(engine.rebuild("nope"), NotFound);
  CHECK_THROWS_AS(engine.restart("nope"), NotFound);
  CHECK_THROWS_AS(engine.status("nope"), NotFound);
  CHECK_THROWS_AS((void)engine.wait_for("nope", 0, 10ms), NotFound);
}

namespace {

// Creates its table, then throws: generation 1 cannot be built.
class BrokenReset : public Fold {
 public:
  void reset(ProjectionContext& ctx) override {
    Fold::reset(ctx);
    ctx.sql().execute("CREATE TABLE " + ctx.table("extra") + " (x INTEGER)");
    throw std::runtime_error("reset failed");
  }
};

}  // namespace

TEST_CASE("a reset that throws on generation 1 makes add throw and leaves nothing behind") {
  TempStore t;
  append_numbers(t.store, 5);
  ProjectionEngine engine(t.store);
  CHECK_THROWS_WITH_AS(engine.add(std::make_shared<BrokenReset>()), "reset failed",
                       std::runtime_error);
  CHECK(engine.status().empty());
  CHECK(ProjectionEngine::recorded(t.store).empty());
  CHECK(CheckpointStore(t.store).list().empty());
  for (const char* name : {"counts", "counts__g1", "extra", "extra__g1"}) {
    CHECK_FALSE(schema_has(t.store, "table", name));
    CHECK_FALSE(schema_has(t.store, "view", name));
  }
  // Not even the engine's own tables: they came with the failed setup's transaction.
  CHECK_FALSE(schema_has(t.store, "table", "factum_projection_tables"));
  // The name is free: the fixed projection builds generation 1.
  engine.add(std::make_shared<Fold>());
  REQUIRE(engine.wait_for("fold", 5, kWait));
  CHECK(engine.status("fold").generation == 1);
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_CASE("add refuses a table name another projection uses, and leaves that one serving") {
  TempStore t;
  append_numbers(t.store, 6);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>(Fold::Options{.name = "first", .table = "counts"}));
  REQUIRE(engine.wait_for("first", 6, kWait));
  for (const char* table : {"counts", "COUNTS"}) {
    CAPTURE(table);
    CHECK_THROWS_WITH_AS(
        engine.add(std::make_shared<Fold>(Fold::Options{.name = "second", .table = table})),
        doctest::Contains("is taken by projection 'first'"), InvalidArgument);
  }
  CHECK(ProjectionEngine::recorded(t.store).size() == 1);
  append_numbers(t.store, 2, 7);
  REQUIRE(engine.wait_for("first", 8, kWait));
  CHECK(read_model(t.store, "counts") == fold_log(t.store));
  CHECK(schema_has(t.store, "table", "counts__g1"));
  // A version bump of the same projection rebuilds under the same name.
  ProjectionEngine next(t.store);
  engine.stop();
  next.add(std::make_shared<Fold>(Fold::Options{.name = "first", .table = "counts", .version = 2}));
  REQUIRE(next.wait_for("first", 8, kWait));
  CHECK(next.status("first").version == 2);
}

TEST_CASE("add refuses a table name that is already a table or view of the file, not a trigger") {
  TempStore t;
  append_numbers(t.store, 3);
  t.store.write_sql([](Sql& sql) {
    sql.execute("CREATE VIEW my_report AS SELECT 1 AS x");
    // A trigger's name is no table name: a projection may use it. (PostgreSQL's trigger calls
    // a function, whose name is no table name either.)
    sql.execute("CREATE TABLE audit_log (x INTEGER)");
    if (sql.dialect() == SqlDialect::postgres) {
      sql.execute(
          "CREATE FUNCTION counts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; "
          "END $$");
      sql.execute(
          "CREATE TRIGGER counts AFTER INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION "
          "counts()");
    } else {
      sql.execute("CREATE TRIGGER counts AFTER INSERT ON audit_log BEGIN SELECT 1; END");
    }
  });
  ProjectionEngine engine(t.store);
  for (const char* table : {"events", "Streams", "my_report"}) {
    CAPTURE(table);
    CHECK_THROWS_WITH_AS(
        engine.add(std::make_shared<Fold>(Fold::Options{.name = "clash", .table = table})),
        doctest::Contains("is already the name of a"), InvalidArgument);
  }
  CHECK(ProjectionEngine::recorded(t.store).empty());
  CHECK(t.store.head_position() == 3);
  CHECK(t.store.verify().ok());
  engine.add(std::make_shared<Fold>(Fold::Options{.name = "fine", .table = "counts"}));
  REQUIRE(engine.wait_for("fine", 3, kWait));
  CHECK(read_model(t.store, "counts") == fold_log(t.store));
}

TEST_SUITE_END();
