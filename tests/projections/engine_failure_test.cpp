// ProjectionEngine: apply failures (policies stop and skip) and external targets (at least
// once, with idempotency keys).
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine_support.hpp"

using namespace factum;
using namespace factum::test;

TEST_SUITE_BEGIN("projection engine");

namespace {

// Positions 1-9 numbers, 10 "boom" (type test.Bad, stream bad-1), 11-15 numbers.
void append_with_boom(EventStore& store) {
  append_numbers(store, 9);
  store.append("bad-1", ExpectedVersion::any(), make_event("test.Bad", "boom"));
  append_numbers(store, 5, 11);
}

struct FailingSetup {
  explicit FailingSetup(EventStore& store, FailurePolicy policy) : engine(store) {
    failing->after_write = boom_while(broken);
    engine.add(failing, {.on_failure = policy, .batch_size = 4});
    engine.add(healthy);
  }
  std::atomic<bool> broken{true};
  std::shared_ptr<Fold> failing =
      std::make_shared<Fold>(Fold::Options{.name = "failing", .table = "failing"});
  std::shared_ptr<Fold> healthy =
      std::make_shared<Fold>(Fold::Options{.name = "healthy", .table = "healthy"});
  ProjectionEngine engine;
};

// An inline projection "failing" that throws on "boom", added and running (handed over to the
// append hook).
struct InlineFailing {
  explicit InlineFailing(EventStore& store) : engine(store) {
    failing->after_write = boom_while(broken);
    engine.add(failing, {.mode = ProjectionMode::inline_append});
    REQUIRE(eventually([&] { return engine.status("failing").state == ProjectionState::running; }));
  }
  std::atomic<bool> broken{true};
  std::shared_ptr<Fold> failing =
      std::make_shared<Fold>(Fold::Options{.name = "failing", .table = "failing"});
  ProjectionEngine engine;
};

bool has_failed(const ProjectionEngine& engine, const std::string& name) {
  return eventually([&] { return engine.status(name).state == ProjectionState::failed; });
}

// Makes every save of checkpoint `name` past 0 take a while (a trigger that counts a
// 3,000 x 3,000 cross join), so that the time between a failure and the commit of the
// checkpoint before it is wide enough for a reader to look in. PostgreSQL's triggers call a
// function: there it sleeps as long (pg_sleep).
void slow_checkpoint_saves(EventStore& store, const std::string& name) {
  store.write_sql([&](Sql& sql) {
    CheckpointStore::create_table(sql);
    if (sql.dialect() == SqlDialect::postgres) {
      sql.execute(
          "CREATE FUNCTION slow_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
          "IF NEW.name = '" +
          name + "' AND NEW.position > 0 THEN PERFORM pg_sleep(0.3); END IF; RETURN NEW; END $$");
      sql.execute(
          "CREATE TRIGGER slow_checkpoint AFTER INSERT OR UPDATE ON factum_checkpoints FOR EACH "
          "ROW EXECUTE FUNCTION slow_checkpoint()");
      return;
    }
    sql.execute("CREATE TABLE slow_rows (x INTEGER)");
    sql.execute(
        "INSERT INTO slow_rows WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
        "WHERE x < 3000) SELECT x FROM c");
    for (const char* when : {"INSERT", "UPDATE"}) {
      sql.execute(std::string("CREATE TRIGGER slow_checkpoint_") + when + " AFTER " + when +
                  " ON factum_checkpoints WHEN NEW.name = '" + name +
                  "' AND NEW.position > 0 BEGIN SELECT count(*) FROM slow_rows a, slow_rows b; "
                  "END");
    }
  });
}

}  // namespace

TEST_CASE("policy stop: the projection fails at the event, recording position, type, message") {
  TempStore t;
  append_with_boom(t.store);
  FailingSetup f(t.store, FailurePolicy::stop);
  REQUIRE(has_failed(f.engine, "failing"));
  const ProjectionStatus s = f.engine.status("failing");
  CHECK(s.checkpoint == 9);
  CHECK(s.head == 15);
  CHECK(s.lag == 6);
  REQUIRE(s.error.has_value());
  CHECK(s.error->position == 10);
  CHECK(s.error->event_type == "test.Bad");
  CHECK(s.error->message == "boom at 10");
  CHECK(s.skipped == 0);
  // The events before it, and nothing of the failed event's partial write.
  CHECK(read_model(t.store, "failing") == fold_log(t.store, {}, 1, 9));
  CHECK(read_model(t.store, "failing").count("bad-1") == 0);
  CHECK_FALSE(f.engine.wait_for("failing", 15, kWait));  // returns at once: failed
  append_numbers(t.store, 2, 30);
  CHECK(f.engine.status("failing").checkpoint == 9);
}

TEST_CASE("policy stop: status shows the failure only with the checkpoint before it (one batch)") {
  TempStore t;
  append_with_boom(t.store);
  slow_checkpoint_saves(t.store, "failing");
  ProjectionEngine engine(t.store);
  auto failing = std::make_shared<Fold>(Fold::Options{.name = "failing", .table = "failing"});
  std::atomic<bool> broken{true};
  failing->after_write = boom_while(broken);
  // One batch holds positions 1-15: its transaction fails at 10 and commits checkpoint 9.
  engine.add(failing, {.on_failure = FailurePolicy::stop, .batch_size = 100});
  CHECK_FALSE(engine.wait_for("failing", 15, kWait));
  const ProjectionStatus s = engine.status("failing");
  CHECK(s.state == ProjectionState::failed);
  CHECK(s.checkpoint == 9);
  CHECK(saved_checkpoint(t.store, "failing") == 9);
}

TEST_CASE("policy stop, inline: status shows the failure only once the append has committed") {
  TempStore t;
  append_numbers(t.store, 5);
  InlineFailing f(t.store);
  ProjectionEngine& engine = f.engine;
  slow_checkpoint_saves(t.store, "failing");
  // Positions 6 (applied) and 7 (fails): the append's transaction moves the checkpoint to 6.
  std::thread appender([&] {
    const std::vector<EventData> batch = {make_event("test.Happened", "6"),
                                          make_event("test.Bad", "boom")};
    t.store.append("bad-1", ExpectedVersion::any(), batch);
    // At once: append() returns after the failure is reported.
    CHECK(engine.status("failing").state == ProjectionState::failed);
  });
  ProjectionStatus s;
  const bool failed = eventually([&] {
    s = engine.status("failing");
    return s.state == ProjectionState::failed;
  });
  appender.join();
  REQUIRE(failed);
  CHECK(s.checkpoint == 6);  // the first status that says failed
  REQUIRE(s.error.has_value());
  CHECK(s.error->position == 7);
}

TEST_CASE("policy stop, inline: a failure rolled back with its append is forgotten") {
  TempStore t;
  append_numbers(t.store, 5);
  InlineFailing f(t.store);
  ProjectionEngine& engine = f.engine;
  // A slot connected after the engine's refuses "boom": the append, and with it the
  // projection's failure, is rolled back.
  const boost::signals2::scoped_connection veto =
      t.store.on_appending().connect([](AppendTransaction& tx) {
        for (const RecordedEvent& e : tx.events()) {
          if (to_string(e.payload) == "boom") throw std::runtime_error("vetoed");
        }
      });
  CHECK_THROWS_WITH(t.store.append("bad-1", ExpectedVersion::any(), make_event("test.Bad", "boom")),
                    "vetoed");
  CHECK(t.store.head_position() == 5);
  CHECK(engine.status("failing").state != ProjectionState::failed);
  // No other append of this process follows: the projection's thread settles it, then
  // follows appends made through another EventStore (as by another process).
  EventStore other = EventStore::open(t.path, TempStore::fast_options());
  append_numbers(other, 2, 6);
  REQUIRE(engine.wait_for("failing", 7, kWait));
  const ProjectionStatus s = engine.status("failing");
  CHECK(s.state == ProjectionState::running);
  CHECK_FALSE(s.error.has_value());
  CHECK(read_model(t.store, "failing") == fold_log(t.store));
  CHECK(ProjectionEngine::recorded(t.store).at(0).state != ProjectionState::failed);
}

TEST_CASE("policy stop: the other projections of the engine go on to the head") {
  TempStore t;
  append_with_boom(t.store);
  FailingSetup f(t.store, FailurePolicy::stop);
  REQUIRE(f.engine.wait_for("healthy", 15, kWait));
  append_numbers(t.store, 4, 40);
  REQUIRE(f.engine.wait_for("healthy", 19, kWait));
  CHECK(read_model(t.store, "healthy") == fold_log(t.store));
  CHECK(f.engine.status("healthy").state != ProjectionState::failed);
  REQUIRE(has_failed(f.engine, "failing"));
  CHECK_FALSE(f.engine.wait_idle(kWait));
}

TEST_CASE("policy stop: restart after a fix resumes at the failed event") {
  TempStore t;
  append_with_boom(t.store);
  FailingSetup f(t.store, FailurePolicy::stop);
  REQUIRE(has_failed(f.engine, "failing"));
  f.broken = false;
  const int before = f.failing->applies;
  f.engine.restart("failing");
  REQUIRE(f.engine.wait_for("failing", 15, kWait));
  CHECK(f.failing->applies - before == 6);  // 10..15, each once
  CHECK(read_model(t.store, "failing") == fold_log(t.store));
  REQUIRE(eventually([&] { return f.engine.status("failing").state == ProjectionState::running; }));
  append_numbers(t.store, 3, 50);
  REQUIRE(f.engine.wait_idle(kWait));
  CHECK(read_model(t.store, "failing") == fold_log(t.store));
  CHECK(ProjectionEngine::recorded(t.store).at(0).checkpoint == 18);
}

TEST_CASE("policy stop: rebuild() of a failed projection waits for restart()") {
  TempStore t;
  append_with_boom(t.store);
  FailingSetup f(t.store, FailurePolicy::stop);
  REQUIRE(has_failed(f.engine, "failing"));
  f.engine.rebuild("failing");
  std::this_thread::sleep_for(100ms);  // the thread is woken; it must leave the request be
  CHECK(f.engine.status("failing").state == ProjectionState::failed);
  CHECK(f.engine.status("failing").generation == 1);
  CHECK_FALSE(schema_has(t.store, "table", "failing__g2"));

  f.broken = false;
  f.engine.restart("failing");  // now the rebuild runs, and swaps in
  REQUIRE(eventually([&] {
    const ProjectionStatus s = f.engine.status("failing");
    return s.generation == 2 && s.state == ProjectionState::running && s.checkpoint == 15;
  }));
  CHECK(read_model(t.store, "failing") == fold_log(t.store));
}

TEST_CASE("policy skip: the failing event is skipped, counted and recorded, the rest applied") {
  TempStore t;
  append_with_boom(t.store);
  FailingSetup f(t.store, FailurePolicy::skip);
  REQUIRE(f.engine.wait_for("failing", 15, kWait));
  t.store.append("bad-2", ExpectedVersion::any(), make_event("test.Bad", "boom"));
  append_numbers(t.store, 2, 60);
  REQUIRE(f.engine.wait_for("failing", 18, kWait));

  const ProjectionStatus s = f.engine.status("failing");
  CHECK(s.state != ProjectionState::failed);
  CHECK(s.skipped == 2);
  REQUIRE(s.error.has_value());
  CHECK(s.error->position == 16);  // the last failure
  CHECK(s.error->event_type == "test.Bad");
  Tallies expected = fold_log(t.store);
  expected.erase("bad-1");
  expected.erase("bad-2");
  CHECK(read_model(t.store, "failing") == expected);
  CHECK(ProjectionEngine::recorded(t.store).at(0).skipped == 2);
}

namespace {

// On "boom", a statement the database refuses (NULL into a NOT NULL column) after the event's
// row is written. PostgreSQL then refuses every later statement of the transaction until it
// rolls back to a savepoint; SQLite goes on. Either way the failure must stay the event's own.
Fold::Hook refused_sql_on_boom() {
  return [](const RecordedEvent& e, ProjectionContext& ctx) {
    if (to_string(e.payload) != "boom") return;
    ctx.sql().execute("INSERT INTO " + ctx.table("failing") + " VALUES ('x', NULL, 0)");
  };
}

}  // namespace

TEST_CASE("a statement the database refuses fails its event alone (policies stop and skip)") {
  TempStore t;
  append_with_boom(t.store);  // boom at 10 of 15
  ProjectionEngine engine(t.store);
  auto failing = std::make_shared<Fold>(Fold::Options{.name = "failing", .table = "failing"});
  failing->after_write = refused_sql_on_boom();

  SUBCASE("async, policy stop: the checkpoint before it commits, nothing of the event") {
    engine.add(failing, {.on_failure = FailurePolicy::stop, .batch_size = 4});
    REQUIRE(has_failed(engine, "failing"));
    const ProjectionStatus s = engine.status("failing");
    CHECK(s.checkpoint == 9);
    REQUIRE(s.error.has_value());
    CHECK(s.error->position == 10);
    CHECK(read_model(t.store, "failing") == fold_log(t.store, {}, 1, 9));
  }
  SUBCASE("async, policy skip: the rest of the batch and the log are applied") {
    engine.add(failing, {.on_failure = FailurePolicy::skip, .batch_size = 100});
    REQUIRE(engine.wait_for("failing", 15, kWait));
    CHECK(engine.status("failing").skipped == 1);
    Tallies expected = fold_log(t.store);
    expected.erase("bad-1");
    CHECK(read_model(t.store, "failing") == expected);
  }
}

TEST_CASE("inline: a statement the database refuses fails its projection, the append commits") {
  TempStore t;
  append_numbers(t.store, 5);
  ProjectionEngine engine(t.store);
  auto failing = std::make_shared<Fold>(Fold::Options{.name = "failing", .table = "failing"});
  failing->after_write = refused_sql_on_boom();
  for (const auto& fold : {failing, std::make_shared<Fold>(Fold::Options{.name = "healthy"})}) {
    engine.add(fold, {.mode = ProjectionMode::inline_append});
    REQUIRE(
        eventually([&] { return engine.status(fold->name()).state == ProjectionState::running; }));
  }
  // Positions 6 (applied) and 7 (refused), in the append's transaction with the other projection.
  const std::vector<EventData> batch = {make_event("test.Happened", "6"),
                                        make_event("test.Bad", "boom")};
  const AppendResult r = t.store.append("bad-1", ExpectedVersion::any(), batch);
  CHECK(r.last_position == 7);
  const ProjectionStatus s = engine.status("failing");
  CHECK(s.state == ProjectionState::failed);
  CHECK(s.checkpoint == 6);
  REQUIRE(s.error.has_value());
  CHECK(s.error->position == 7);
  CHECK(read_model(t.store, "failing") == fold_log(t.store, {}, 1, 6));
  CHECK(engine.status("healthy").checkpoint == 7);
  CHECK(read_model(t.store, "counts") == fold_log(t.store));
}

// --- A hole in the log -----------------------------------------------------------------------

namespace {

// Positions 1-9, payloads 1-9, then position 5 deleted behind the library's back (its trigger
// dropped first, in each backend's SQL): every read of the log that reaches it throws
// CorruptStoreError (eventstore/src/walk_check.hpp), which names position 5 in its message.
void append_with_hole_at_5(EventStore& store) {
  append_numbers(store, 9);
  store.write_sql([&](Sql& sql) {
    if (sql.dialect() == SqlDialect::postgres) {
      sql.execute("DROP TRIGGER IF EXISTS events_are_immutable ON events");
    } else {
      sql.execute("DROP TRIGGER IF EXISTS events_are_permanent");
    }
    sql.execute("DELETE FROM events WHERE position = 5");
  });
}

// Pages of 2 events: the projection's batches read (and commit) the events before the hole.
StoreOptions small_pages() {
  StoreOptions o = TempStore::fast_options();
  o.read_page_size = 2;
  return o;
}

bool names_the_hole(const ProjectionStatus& s) {
  return s.error && s.error->position == 5 &&
         s.error->message.find("positions 5 to 5 are missing") != std::string::npos;
}

// The read model holds the events at positions 1 to `checkpoint` (payload = position), each once.
void check_folds_up_to(const EventStore& store, Position checkpoint) {
  std::int64_t n = 0;
  std::int64_t total = 0;
  for (const auto& [stream, tally] : read_model(store)) {
    n += tally.n;
    total += tally.total;
  }
  const auto c = static_cast<std::int64_t>(checkpoint);
  CHECK(n == c);
  CHECK(total == c * (c + 1) / 2);
}

}  // namespace

TEST_CASE("a hole in the log fails the projection, naming the position, checkpoint before it") {
  TempStore t(small_pages());
  append_with_hole_at_5(t.store);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>(), {.batch_size = 2});
  REQUIRE(has_failed(engine, "fold"));  // not retrying: the hole does not go away by waiting
  const ProjectionStatus s = engine.status("fold");
  CHECK(names_the_hole(s));
  CHECK(s.checkpoint < 5);
  check_folds_up_to(t.store, s.checkpoint);
  // Recorded in the file too (status() shows it first).
  CHECK(eventually([&] {
    const ProjectionStatus r = ProjectionEngine::recorded(t.store).at(0);
    return r.state == ProjectionState::failed && r.error == s.error;
  }));
}

TEST_CASE("a projection failed at a hole in the log fails there again on restart()") {
  TempStore t(small_pages());
  append_with_hole_at_5(t.store);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>(), {.batch_size = 2});
  REQUIRE(has_failed(engine, "fold"));
  const Position before = engine.status("fold").checkpoint;
  append_numbers(t.store, 3, 10);
  engine.restart("fold");
  REQUIRE(has_failed(engine, "fold"));
  const ProjectionStatus s = engine.status("fold");
  CHECK(names_the_hole(s));
  CHECK(s.checkpoint == before);
  check_folds_up_to(t.store, s.checkpoint);
}

// --- External targets ----------------------------------------------------------------------

namespace {

// An external target: keys delivered, and a sum made idempotent by key.
struct Sink {
  std::mutex mu;
  std::vector<std::string> delivered;  // every delivery, in order
  std::vector<Position> positions;
  std::set<std::string> keys;
  std::int64_t total = 0;
};

class Mailer : public Projection {
 public:
  explicit Mailer(Sink& sink) : sink_(sink) {}
  std::string name() const override { return "mailer"; }
  std::uint32_t version() const override { return 1; }
  void reset(ProjectionContext& ctx) override {
    ++resets;
    if (refuses_sql(ctx)) ++sql_refused;
    std::lock_guard lock(sink_.mu);
    sink_.keys.clear();
    sink_.total = 0;
  }
  void apply(const RecordedEvent& e, ProjectionContext& ctx) override {
    if (before_apply) before_apply(e);
    if (refuses_sql(ctx)) ++sql_refused;
    if (ctx.key().position != e.position || ctx.key().id != e.id) ++wrong_keys;
    const std::string key = ctx.key().to_string();
    std::lock_guard lock(sink_.mu);
    sink_.delivered.push_back(key);
    sink_.positions.push_back(e.position);
    if (sink_.keys.insert(key).second) sink_.total += payload_number(e);
  }

  std::function<void(const RecordedEvent&)> before_apply;  // set before add()
  std::atomic<int> resets{0};
  std::atomic<int> sql_refused{0};
  std::atomic<int> wrong_keys{0};

 private:
  static bool refuses_sql(ProjectionContext& ctx) {
    try {
      ctx.sql();
    } catch (const InvalidArgument&) {
      return true;
    }
    return false;
  }
  Sink& sink_;
};

constexpr ProjectionOptions kExternal{.target = ProjectionTarget::external, .batch_size = 8};

std::int64_t payload_sum(const EventStore& store) {
  std::int64_t sum = 0;
  for (const RecordedEvent& e : store.read_all()) sum += payload_number(e);
  return sum;
}

}  // namespace

TEST_CASE("external: apply gets the key \"position:id\" and no SQL handle") {
  TempStore t;
  append_numbers(t.store, 20);
  Sink sink;
  auto mailer = std::make_shared<Mailer>(sink);
  ProjectionEngine engine(t.store);
  engine.add(mailer, kExternal);
  REQUIRE(engine.wait_for("mailer", 20, kWait));

  std::vector<std::string> expected;
  for (const RecordedEvent& e : t.store.read_all())
    expected.push_back(std::to_string(e.position) + ":" + e.id.to_string());
  std::lock_guard lock(sink.mu);
  CHECK(sink.delivered == expected);
  CHECK(sink.delivered.front().size() == std::string("1:").size() + 36);
  CHECK(mailer->wrong_keys == 0);
  CHECK(mailer->resets == 1);
  CHECK(mailer->sql_refused == 21);  // reset and every apply
  CHECK_FALSE(schema_has(t.store, "view", "counts"));
  CHECK(engine.status("mailer").checkpoint == 20);
}

TEST_CASE(
    "external: every event is delivered, a new engine redelivers nothing before the "
    "checkpoint, idempotent handling is exact") {
  TempStore t;
  append_numbers(t.store, 50);
  Sink sink;
  {
    ProjectionEngine engine(t.store);
    engine.add(std::make_shared<Mailer>(sink), kExternal);
    REQUIRE(engine.wait_for("mailer", 50, kWait));
    append_numbers(t.store, 10, 51);
    REQUIRE(engine.wait_for("mailer", 60, kWait));
  }
  const Position checkpoint = saved_checkpoint(t.store, "mailer");
  CHECK(checkpoint == 60);
  std::size_t first_run = 0;
  {
    std::lock_guard lock(sink.mu);
    first_run = sink.positions.size();
  }
  append_numbers(t.store, 15, 61);

  ProjectionEngine engine(t.store);
  auto again = std::make_shared<Mailer>(sink);
  engine.add(again, kExternal);
  REQUIRE(engine.wait_for("mailer", 75, kWait));
  CHECK(again->resets == 0);
  std::lock_guard lock(sink.mu);
  const std::vector<Position> second_run(sink.positions.begin() + static_cast<long>(first_run),
                                         sink.positions.end());
  REQUIRE_FALSE(second_run.empty());
  CHECK(*std::min_element(second_run.begin(), second_run.end()) > checkpoint);
  CHECK(sink.keys.size() == 75);
  CHECK(sink.total == payload_sum(t.store));
}

TEST_CASE("external: rebuild resets the target and replays the log from position 1") {
  TempStore t;
  append_numbers(t.store, 30);
  Sink sink;
  auto mailer = std::make_shared<Mailer>(sink);
  ProjectionEngine engine(t.store);
  engine.add(mailer, kExternal);
  REQUIRE(engine.wait_for("mailer", 30, kWait));
  engine.rebuild("mailer");
  REQUIRE(eventually([&] {
    std::lock_guard lock(sink.mu);
    return sink.delivered.size() == 60;
  }));
  REQUIRE(engine.wait_for("mailer", 30, kWait));
  CHECK(mailer->resets == 2);
  CHECK(engine.status("mailer").generation == 2);
  std::lock_guard lock(sink.mu);
  CHECK(sink.keys.size() == 30);
  CHECK(sink.total == payload_sum(t.store));
  CHECK(sink.positions[30] == 1);
}

TEST_CASE("external: a batch delivered before another engine's rebuild does not save over it") {
  TempStore t;
  append_numbers(t.store, 20);
  Sink sink_a;
  Sink sink_b;
  Gate gate;
  auto a = std::make_shared<Mailer>(sink_a);
  a->before_apply = [&gate](const RecordedEvent& e) {
    if (e.position == 5) gate.arrive_and_wait();
  };
  ProjectionEngine engine_a(t.store);
  engine_a.add(a, kExternal);
  REQUIRE(gate.wait_reached());  // engine A is inside its first batch (1-8), generation 1

  std::atomic<bool> broken{false};
  auto b = std::make_shared<Mailer>(sink_b);
  b->before_apply = [&broken](const RecordedEvent&) {
    if (broken) throw std::runtime_error("the new target refuses");
  };
  ProjectionEngine engine_b(t.store);
  engine_b.add(b, kExternal);
  REQUIRE(engine_b.wait_for("mailer", 20, kWait));
  broken = true;
  engine_b.rebuild("mailer");  // generation 2, target reset, checkpoint 0; fails at 1
  REQUIRE(has_failed(engine_b, "mailer"));
  REQUIRE(saved_checkpoint(t.store, "mailer") == 0);

  gate.open();  // A ends its generation-1 batch: it must not save checkpoint 8 over the reset
  REQUIRE(has_failed(engine_a, "mailer"));
  CHECK(saved_checkpoint(t.store, "mailer") == 0);
  const std::vector<ProjectionStatus> recorded = ProjectionEngine::recorded(t.store);
  REQUIRE(recorded.size() == 1);
  CHECK(recorded[0].generation == 2);
  CHECK(recorded[0].state == ProjectionState::failed);
  CHECK(engine_a.status("mailer").generation == 2);
}

TEST_SUITE_END();
