// Injected storage faults (tests/support/fault_vfs.hpp) under the threads of the projection
// engine and of subscriptions: a batch whose commit fails advances neither the checkpoint nor
// the read model; a read or checkpoint that fails is reported (state, error, on_error) or
// retried, never terminates the process; once the fault is gone every event takes effect
// exactly once (projections in the store) or at least once (subscriptions).
//
// A storage error is transient: the thread reports it (state retrying, the error, on_error) and
// retries on its own, with back-off, until the fault is gone; no restart() is needed.
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
  // Retried, and failed again. The faults can all come from the first attempt (its commit, the
  // seal after it, the careful second try) before the runner reports the error: wait for the
  // report too, not only for the faults.
  REQUIRE(eventually([&] {
    return fault.injected() >= 3 && engine.status("fold").state == ProjectionState::retrying;
  }));
  CHECK(saved_checkpoint(t.store, "fold") == 5);
  CHECK(read_model(t.store) == at5);
  const ProjectionStatus failing = engine.status("fold");
  CHECK(failing.checkpoint == 5);
  CHECK(failing.state == ProjectionState::retrying);
  REQUIRE(failing.error);
  CHECK(failing.error->message.find(t.path.string()) != std::string::npos);
  // Once the disk is back: resumed by its own retries, every event applied exactly once.
  fault.clear();
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
  CHECK(engine.wait_for("fold", 10, kWait));  // retried on its own
  CHECK(fault.spent());
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(saved_checkpoint(t.store, "fold") == 10);
}

TEST_CASE("an async projection whose reads fail retries, then catches up") {
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
  CHECK(engine.status("fold").state != ProjectionState::failed);
  CHECK(engine.wait_for("fold", 10, kWait));  // no restart() needed
  CHECK(read_model(t.store) == fold_log(t.store));
}

// ---- subscriptions -----------------------------------------------------------------------

TEST_CASE("a subscription whose reads fail reports a StorageError and retries, never terminates") {
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
  REQUIRE(eventually([&] { return fault.injected() >= 5; }));  // retried, and failed again
  CHECK(sub.position() == 5);
  CHECK(sub.state() == Subscription::State::retrying);
  CHECK(is_storage_error(sub.error()));
  CHECK(errors >= 1);
  fault.clear();
  CHECK(sub.wait_for(10, kWait));  // resumed on its own
  sub.stop();
  CHECK(seen.positions() == std::vector<Position>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
}

TEST_CASE(
    "a subscription whose checkpoint save fails keeps the old checkpoint until a retry saves it") {
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
  REQUIRE(eventually([&] { return fault.injected() >= 3; }));  // retried, and failed again
  CHECK(saved_checkpoint(t.store, "mailer") == 5);
  // The batch was handled (position() says so); only its checkpoint is not saved yet.
  CHECK(sub.position() == 10);
  CHECK(sub.state() == Subscription::State::retrying);
  CHECK(is_storage_error(sub.error()));
  fault.clear();
  // The save is made again once the disk works, without delivering the batch again.
  REQUIRE(eventually([&] { return saved_checkpoint(t.store, "mailer") == 10; }));
  sub.stop();
  CHECK(seen.positions() == std::vector<Position>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
}
