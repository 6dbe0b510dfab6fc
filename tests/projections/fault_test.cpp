// Injected storage faults (tests/support/fault_vfs.hpp) under the threads of the projection
// engine and of subscriptions: a batch whose commit fails advances neither the checkpoint nor
// the read model; a read or checkpoint that fails is reported (state, error, on_error) or
// retried, never terminates the process; once the fault is gone every event takes effect
// exactly once (projections in the store) or at least once (subscriptions).
//
// Each case accepts either way of surviving a storage error: reporting it (state failed, the
// caller restarts) or retrying on its own until the fault is gone.
#include <doctest/doctest.h>

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine_support.hpp"
#include "support/fault_vfs.hpp"

using namespace factum;
using namespace factum::test;
using factum::test::FaultFile;
using factum::test::FaultInjection;
using factum::test::FaultOp;
namespace codes = factum::test::fault_codes;

namespace {

bool is_storage_error(const std::exception_ptr& e) {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const StorageError&) {
    return true;
  } catch (...) {
    return false;
  }
}

// Events 1..n, each in its own append.
void append_n(EventStore& store, int n) { append_numbers(store, n); }

// Events with payloads first, first+1, ... in one append to stream "s-1" (a projection gated
// inside its write transaction holds the writer: appends made one by one would wait for it).
void append_batch(EventStore& store, int first, int n) {
  std::vector<EventData> batch;
  for (int i = 0; i < n; ++i)
    batch.push_back(make_event("test.Happened", std::to_string(first + i)));
  store.append("s-1", ExpectedVersion::any(), batch);
}

// Positions delivered to a subscription, in order (on its thread).
class Seen {
 public:
  void add(Position p) {
    std::lock_guard lock(mu_);
    positions_.push_back(p);
  }
  std::vector<Position> positions() const {
    std::lock_guard lock(mu_);
    return positions_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Position> positions_;
};

// Every position 1..n appears, and each run of deliveries is in order.
void check_at_least_once(const std::vector<Position>& seen, Position n) {
  std::vector<bool> found(n + 1, false);
  for (Position p : seen) {
    REQUIRE(p >= 1);
    REQUIRE(p <= n);
    found[p] = true;
  }
  for (Position p = 1; p <= n; ++p) CHECK_MESSAGE(found[p], "position " << p << " not delivered");
}

}  // namespace

// ---- the projection engine ---------------------------------------------------------------

TEST_CASE(
    "an async projection whose batch commits keep failing advances neither checkpoint nor read "
    "model") {
  FaultInjection fault;
  TempStore t;
  append_n(t.store, 5);
  auto fold = std::make_shared<Fold>();
  Gate gate;
  fold->after_write = [&](const RecordedEvent& e, ProjectionContext&) {
    if (e.position == 6) gate.arrive_and_wait();
  };
  ProjectionEngine engine(t.store);
  engine.add(fold, {.batch_size = 100, .poll_interval = std::chrono::milliseconds(10)});
  REQUIRE(engine.wait_for("fold", 5, kWait));
  const Tallies at5 = read_model(t.store);
  append_batch(t.store, 6, 5);
  REQUIRE(gate.wait_reached());
  // The batch 6..10 is being applied; its commit (and every retry of it) fails.
  fault.fail(FaultOp::write, 1, codes::kIoErrWrite, FaultInjection::kForever, FaultFile::wal);
  gate.open();
  REQUIRE(eventually([&] {
    return engine.status("fold").state == ProjectionState::failed || fault.injected() >= 3;
  }));
  CHECK(saved_checkpoint(t.store, "fold") == 5);
  CHECK(read_model(t.store) == at5);
  const ProjectionStatus failing = engine.status("fold");
  CHECK(failing.checkpoint == 5);
  if (failing.state == ProjectionState::failed) {
    REQUIRE(failing.error);
    CHECK(failing.error->message.find(t.path.string()) != std::string::npos);
  }
  // Once the disk is back: resumed (by restart() after a reported failure, or by its own
  // retries) and every event applied exactly once.
  fault.clear();
  if (engine.status("fold").state == ProjectionState::failed) engine.restart("fold");
  CHECK(engine.wait_for("fold", 10, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(saved_checkpoint(t.store, "fold") == 10);
}

TEST_CASE("an async projection whose batch commit fails once applies the batch exactly once") {
  FaultInjection fault;
  TempStore t;
  append_n(t.store, 5);
  auto fold = std::make_shared<Fold>();
  Gate gate;
  fold->after_write = [&](const RecordedEvent& e, ProjectionContext&) {
    if (e.position == 6) gate.arrive_and_wait();
  };
  ProjectionEngine engine(t.store);
  engine.add(fold, {.batch_size = 100, .poll_interval = std::chrono::milliseconds(10)});
  REQUIRE(engine.wait_for("fold", 5, kWait));
  append_batch(t.store, 6, 5);
  REQUIRE(gate.wait_reached());
  fault.fail(FaultOp::write, 1, codes::kIoErrWrite, 1, FaultFile::wal);
  gate.open();
  if (!engine.wait_for("fold", 10, std::chrono::seconds(2)) &&
      engine.status("fold").state == ProjectionState::failed) {
    engine.restart("fold");
  }
  CHECK(engine.wait_for("fold", 10, kWait));
  CHECK(fault.spent());
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(saved_checkpoint(t.store, "fold") == 10);
}

TEST_CASE("an async projection whose reads fail reports or retries, then catches up") {
  FaultInjection fault;
  TempStore t;
  append_n(t.store, 5);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>(), {.poll_interval = std::chrono::milliseconds(10)});
  REQUIRE(engine.wait_for("fold", 5, kWait));
  // Reading the WAL fails: the writer appends from its cache, the projection cannot read the
  // new events (nor can status(), which reads the head: it is asked only once the disk is back).
  fault.fail(FaultOp::read, 1, codes::kIoErrRead, FaultInjection::kForever, FaultFile::wal);
  append_batch(t.store, 6, 5);
  REQUIRE(eventually([&] { return fault.injected() >= 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  fault.clear();
  CHECK(saved_checkpoint(t.store, "fold") == 5);
  const ProjectionStatus status = engine.status("fold");
  if (status.state == ProjectionState::failed) {
    REQUIRE(status.error);
    CHECK(status.error->message.find(t.path.string()) != std::string::npos);
    engine.restart("fold");
  }
  CHECK(engine.wait_for("fold", 10, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
}

// ---- subscriptions -----------------------------------------------------------------------

TEST_CASE("a subscription whose reads fail reports a StorageError or retries, never terminates") {
  FaultInjection fault;
  TempStore t;
  append_n(t.store, 5);
  Seen seen;
  std::atomic<int> errors{0};
  Subscription sub(t.store,
                   SubscriptionOptions{.batch_size = 2,
                                       .poll_interval = std::chrono::milliseconds(10),
                                       .on_error = [&](std::exception_ptr) { ++errors; }},
                   [&](const RecordedEvent& e) { seen.add(e.position); });
  REQUIRE(sub.wait_for(5, kWait));
  // Reading the WAL fails: the writer appends from its cache, the subscription cannot read.
  fault.fail(FaultOp::read, 1, codes::kIoErrRead, FaultInjection::kForever, FaultFile::wal);
  append_batch(t.store, 6, 5);
  REQUIRE(eventually(
      [&] { return sub.state() == Subscription::State::failed || fault.injected() >= 5; }));
  CHECK(sub.position() == 5);
  if (sub.state() == Subscription::State::failed) {
    CHECK(is_storage_error(sub.error()));
    CHECK(errors == 1);
  }
  fault.clear();
  if (sub.state() == Subscription::State::failed) {
    // Reported: a new subscription from where it stopped delivers the rest.
    Subscription again(t.store, SubscriptionOptions{.from = sub.position()},
                       [&](const RecordedEvent& e) { seen.add(e.position); });
    CHECK(again.wait_for(10, kWait));
    again.stop();
  } else {
    CHECK(sub.wait_for(10, kWait));
  }
  sub.stop();
  CHECK(seen.positions() == std::vector<Position>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
}

TEST_CASE(
    "a subscription whose checkpoint save fails does not advance it and the batch comes again") {
  FaultInjection fault;
  TempStore t;
  append_n(t.store, 10);
  Seen seen;
  Gate gate;
  auto handler = [&](const RecordedEvent& e) {
    if (e.position == 6) gate.arrive_and_wait();
    seen.add(e.position);
  };
  const SubscriptionOptions options{
      .checkpoint = "mailer", .batch_size = 5, .poll_interval = std::chrono::milliseconds(10)};
  Subscription sub(t.store, options, handler);
  REQUIRE(gate.wait_reached());
  CHECK(CheckpointStore(t.store).load("mailer") == 5);
  // The batch 6..10 is being handled; its checkpoint save (and every retry) fails.
  fault.fail(FaultOp::write, 1, codes::kIoErrWrite, FaultInjection::kForever, FaultFile::wal);
  gate.open();
  REQUIRE(eventually(
      [&] { return sub.state() == Subscription::State::failed || fault.injected() >= 3; }));
  CHECK(saved_checkpoint(t.store, "mailer") == 5);
  CHECK(sub.position() == 5);
  if (sub.state() == Subscription::State::failed) CHECK(is_storage_error(sub.error()));
  fault.clear();
  if (sub.state() == Subscription::State::failed) {
    sub.stop();
    Subscription again(t.store, options, handler);  // resumes from the checkpoint: 6..10 again
    CHECK(again.wait_for(10, kWait));
    again.stop();
  } else {
    CHECK(sub.wait_for(10, kWait));
    sub.stop();
  }
  CHECK(saved_checkpoint(t.store, "mailer") == 10);
  check_at_least_once(seen.positions(), 10);
}
