// Injected storage faults (tests/support/fault_vfs.hpp) on checkpoints and read models written
// in the caller's or the append's transaction: a failed commit advances no checkpoint and
// applies no read-model change, and the next commit works. (The projection and subscription
// threads under faults are in fault_test.cpp.)
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <string>

#include "engine_support.hpp"
#include "support/fault_vfs.hpp"

using namespace factum;
using namespace factum::test;
using factum::test::FaultFile;
using factum::test::FaultInjection;
using factum::test::FaultOp;
namespace codes = factum::test::fault_codes;

TEST_CASE("a checkpoint save whose commit fails throws StorageError and keeps the older position") {
  FaultInjection fault;
  TempStore t;
  CheckpointStore checkpoints(t.store);
  checkpoints.save("mailer", 5);
  fault.fail(FaultOp::write, 1, codes::kIoErrWrite, 1, FaultFile::wal);
  CHECK_THROWS_AS(checkpoints.save("mailer", 9), StorageError);
  CHECK(fault.spent());
  CHECK(checkpoints.load("mailer") == 5);
  checkpoints.save("mailer", 9);
  CHECK(checkpoints.load("mailer") == 9);
}

TEST_CASE(
    "a checkpoint and a read-model change in one transaction: a failed commit applies neither") {
  FaultInjection fault;
  TempStore t;
  t.store.write_sql([](Sql& sql) {
    CheckpointStore::create_table(sql);
    sql.execute("CREATE TABLE totals (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
    sql.execute("INSERT INTO totals VALUES ('all', 10)");
    CheckpointStore::save(sql, "totals", 3);
  });
  fault.fail(FaultOp::write, 1, codes::kFull, FaultInjection::kForever, FaultFile::wal);
  try {
    t.store.write_sql([](Sql& sql) {
      sql.execute("UPDATE totals SET v = v + 5");
      CheckpointStore::save(sql, "totals", 4);
    });
    FAIL("expected StorageError");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::full);
  }
  fault.clear();
  std::int64_t v = 0;
  t.store.read_sql([&](Sql& sql) {
    v = sql.query_integer("SELECT v FROM totals").value();
    CHECK(CheckpointStore::load(sql, "totals") == 3);
  });
  CHECK(v == 10);
}

TEST_CASE("an inline projection's change rolls back with the append whose commit fails") {
  FaultInjection fault;
  TempStore t;
  append_numbers(t.store, 3);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>(), {.mode = ProjectionMode::inline_append});
  REQUIRE(engine.wait_for("fold", 3, kWait));
  REQUIRE(eventually([&] { return engine.status("fold").state == ProjectionState::running; }));
  const Tallies before = read_model(t.store);
  // Armed inside the append's transaction, so that no write of the engine's thread takes it.
  std::atomic<bool> arm{true};
  boost::signals2::scoped_connection c = t.store.on_appending().connect([&](AppendTransaction&) {
    if (arm.exchange(false)) fault.fail(FaultOp::write, 1, codes::kIoErrWrite, 1, FaultFile::wal);
  });
  CHECK_THROWS_AS(t.store.append("s-1", ExpectedVersion::any(), make_event("test.Happened", "7")),
                  StorageError);
  CHECK(fault.spent());
  CHECK(read_model(t.store) == before);
  CHECK(saved_checkpoint(t.store, "fold") == 3);
  CHECK(t.store.head_position() == 3);
  // The next append is applied inline, once.
  t.store.append("s-1", ExpectedVersion::any(), make_event("test.Happened", "7"));
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(saved_checkpoint(t.store, "fold") == 4);
  CHECK(engine.status("fold").state == ProjectionState::running);
}

TEST_CASE("a ProjectionEngine writes nothing when made: its first add() makes the tables") {
  FaultInjection fault;
  TempStore t;
  append_numbers(t.store, 5);
  fault.fail(FaultOp::write, 1, codes::kIoErrWrite, 1, FaultFile::wal);
  ProjectionEngine engine(t.store);
  CHECK_FALSE(fault.spent());
  CHECK_THROWS_AS(engine.add(std::make_shared<Fold>()), StorageError);
  CHECK(fault.spent());
  ProjectionEngine again(t.store);
  again.add(std::make_shared<Fold>());
  CHECK(again.wait_for("fold", 5, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_CASE("adding a projection whose first generation cannot be committed throws StorageError") {
  FaultInjection fault;
  TempStore t;
  append_numbers(t.store, 5);
  ProjectionEngine engine(t.store);
  fault.fail(FaultOp::write, 1, codes::kIoErrWrite, FaultInjection::kForever, FaultFile::wal);
  CHECK_THROWS_AS(engine.add(std::make_shared<Fold>(), {.mode = ProjectionMode::inline_append}),
                  StorageError);
  fault.clear();
  ProjectionEngine again(t.store);
  again.add(std::make_shared<Fold>(), {.mode = ProjectionMode::inline_append});
  CHECK(again.wait_for("fold", 5, kWait));
  t.store.append("s-1", ExpectedVersion::any(), make_event("test.Happened", "100"));
  CHECK(read_model(t.store) == fold_log(t.store));
}
