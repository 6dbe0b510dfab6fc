// Catch-up subscriptions on a failing storage (the FaultInjection VFS shim fails the file's lock
// calls) and under allocation failure: no error ends the process; a storage error is reported
// (state retrying, error(), on_error), retried with back-off, and delivery resumes with every
// event once, in order.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "factum/eventstore/query.hpp"
#include "factum/eventstore/tags.hpp"
#include "support/eventually.hpp"
#include "support/fault_vfs.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace std::chrono_literals;
using factum::test::eventually;
using factum::test::FaultInjection;
using factum::test::kWait;
using factum::test::make_event;
using factum::test::TempStore;

namespace {

using State = Subscription::State;

// The positions a handler saw, in order.
class Seen {
 public:
  Subscription::Handler handler() {
    return [this](const RecordedEvent& e) {
      std::lock_guard lock(mu_);
      positions_.push_back(e.position);
    };
  }
  // Whether exactly 1..last were seen, each once, in order.
  bool exactly_one_to(Position last) const {
    std::lock_guard lock(mu_);
    if (positions_.size() != last) return false;
    for (std::size_t i = 0; i < positions_.size(); ++i) {
      if (positions_[i] != i + 1) return false;
    }
    return true;
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return positions_.size();
  }

 private:
  mutable std::mutex mu_;
  std::vector<Position> positions_;
};

void append_n(EventStore& store, int n) {
  for (int i = 0; i < n; ++i) {
    store.append("s-" + std::to_string(i % 3), ExpectedVersion::any(), make_event());
  }
}

}  // namespace

TEST_SUITE_BEGIN("subscription");

TEST_CASE("a batch_size too large to reserve does not end the process: events are delivered") {
  TempStore t;
  append_n(t.store, 10);
  Seen seen;
  Subscription sub(t.store, {.batch_size = std::numeric_limits<std::size_t>::max()},
                   seen.handler());
  CHECK(sub.wait_for(10, kWait));
  sub.stop();
  CHECK(seen.exactly_one_to(10));
}

TEST_CASE("a second of failing storage: the subscription retries, then delivers each event once") {
  FaultInjection faults;
  TempStore t;
  append_n(t.store, 30);
  Seen seen;
  std::atomic<int> reported{0};
  Subscription sub(t.store,
                   {.checkpoint = "sub",
                    .batch_size = 4,
                    .poll_interval = 10ms,
                    .on_error = [&](std::exception_ptr) { ++reported; }},
                   seen.handler());
  REQUIRE(sub.wait_for(30, kWait));
  faults.fail_locks(1, FaultInjection::kForever);
  CHECK(eventually([&] { return sub.state() == State::retrying; }));
  std::this_thread::sleep_for(1s);
  CHECK(sub.state() == State::retrying);
  REQUIRE(sub.error() != nullptr);
  CHECK_THROWS_AS(std::rethrow_exception(sub.error()), StorageError);
  faults.clear();
  CHECK(faults.injected() > 0);
  // At each attempt, with back-off (10, 20, 40 ... ms): a handful in a second.
  CHECK(reported >= 2);
  CHECK(reported <= 20);
  append_n(t.store, 30);
  CHECK(sub.wait_for(60, kWait));
  CHECK(eventually([&] { return sub.state() == State::live; }));
  sub.stop();
  CHECK(seen.exactly_one_to(60));
  CHECK(CheckpointStore(t.store).load("sub") == 60);
}

TEST_CASE("a subscription backing off after storage errors stops promptly") {
  FaultInjection faults;
  TempStore t;
  append_n(t.store, 5);
  Seen seen;
  std::atomic<int> reported{0};
  Subscription sub(t.store,
                   {.poll_interval = 10ms, .on_error = [&](std::exception_ptr) { ++reported; }},
                   seen.handler());
  REQUIRE(sub.wait_for(5, kWait));
  faults.fail_locks(1, FaultInjection::kForever);
  REQUIRE(eventually([&] { return reported >= 8; }));  // the back-off is 640 ms or more now
  const auto before = std::chrono::steady_clock::now();
  sub.stop();
  CHECK(std::chrono::steady_clock::now() - before < 500ms);
  CHECK(sub.state() == State::stopped);
}

TEST_CASE("storage failures while catching up with a checkpoint neither lose nor repeat events") {
  for (const int skip : {0, 1, 2, 3, 5, 8, 13, 30, 60}) {
    CAPTURE(skip);
    FaultInjection faults;
    TempStore t;
    append_n(t.store, 100);
    Seen seen;
    faults.fail_locks(skip + 1, 3);
    try {
      Subscription sub(t.store, {.checkpoint = "sub", .batch_size = 8, .poll_interval = 10ms},
                       seen.handler());
      CHECK(sub.wait_for(100, kWait));
      sub.stop();
    } catch (const StorageError&) {
      continue;  // the failures hit the constructor (loading the checkpoint): the caller's
    }
    CHECK(seen.exactly_one_to(100));
    faults.clear();
    CHECK(CheckpointStore(t.store).load("sub") == 100);
  }
}

TEST_CASE("a query subscription retries after storage errors and delivers each match once") {
  for (const int skip : {0, 1, 2, 5, 13}) {
    CAPTURE(skip);
    FaultInjection faults;
    TempStore t;
    const Query tagged_even = Query::tagged({"even"});
    const auto append_tagged = [&](int first, int n) {
      for (int i = first; i < first + n; ++i) {
        EventData e = make_event();
        if (i % 2 == 0) set_tags(e.metadata, {"even"});
        t.store.append("s-" + std::to_string(i % 3), ExpectedVersion::any(), e);
      }
    };
    append_tagged(0, 60);
    std::mutex mu;
    std::vector<Position> seen;
    faults.fail_locks(skip + 1, 3);
    try {
      Subscription sub(t.store,
                       {.filter = SubscriptionFilter::query(tagged_even),
                        .checkpoint = "sub",
                        .batch_size = 4,
                        .poll_interval = 10ms},
                       [&](const RecordedEvent& e) {
                         std::lock_guard lock(mu);
                         seen.push_back(e.position);
                       });
      CHECK(sub.wait_for(60, kWait));
      faults.clear();
      // Live, then a storage that fails until cleared: retrying, then on after the last event.
      faults.fail_locks(1, FaultInjection::kForever);
      CHECK(eventually([&] { return sub.state() == State::retrying; }));
      faults.clear();
      append_tagged(60, 20);
      CHECK(sub.wait_for(80, kWait));
      CHECK(eventually([&] { return sub.state() == State::live; }));
      sub.stop();
    } catch (const StorageError&) {
      continue;  // the failures hit the constructor (loading the checkpoint): the caller's
    }
    std::vector<Position> want;
    for (Position p = 1; p <= 80; p += 2) want.push_back(p);
    std::lock_guard lock(mu);
    CHECK(seen == want);
    CHECK(CheckpointStore(t.store).load("sub") == 80);
  }
}

TEST_SUITE_END();
