// ProjectionEngine on a failing storage: a hiccup (every lock call of the file failing for a
// while, through the FaultInjection VFS shim) is reported, retried with back-off and survived
// with every event applied exactly once; stop() is prompt while backing off; concurrent
// restart() and stop() calls neither hang nor crash.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine_support.hpp"
#include "support/fault_vfs.hpp"
#include "support/raw_sql.hpp"

using namespace factum;
using namespace factum::test;

TEST_SUITE_BEGIN("projection engine");

namespace {

// Runs `fn` on a thread of its own; when it has not returned within `timeout`, the test process
// ends with a failure (a hung call cannot be unwound).
void finishes_within(const std::function<void()>& fn, std::chrono::milliseconds timeout,
                     const char* what) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread([fn, done] {
    fn();
    done->set_value();
  }).detach();
  if (finished.wait_for(timeout) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: %s did not return within %lld ms (hung)\n", what,
                 static_cast<long long>(timeout.count()));
    std::fflush(stderr);
    std::_Exit(EXIT_FAILURE);
  }
}

}  // namespace

// What EngineOptions::on_error was called with.
struct Errors {
  // Engine options whose on_error records here (this object must outlive the engine).
  EngineOptions engine_options() {
    return {.on_error = [this](std::string_view name, std::exception_ptr e) { record(name, e); }};
  }
  void record(std::string_view projection, std::exception_ptr error) {
    std::lock_guard lock(mu);
    names.emplace_back(projection);
    try {
      std::rethrow_exception(error);
    } catch (const StorageError&) {
      ++storage;
    } catch (...) {
    }
  }
  std::size_t count() const {
    std::lock_guard lock(mu);
    return names.size();
  }
  mutable std::mutex mu;
  std::vector<std::string> names;
  std::size_t storage = 0;
};

TEST_CASE("a second of failing storage does not end the process: the projection resumes") {
  FaultInjection faults;
  TempStore t;
  append_numbers(t.store, 20);
  Errors errors;
  ProjectionEngine engine(t.store, errors.engine_options());
  auto fold = std::make_shared<Fold>();
  engine.add(fold, {.batch_size = 4, .poll_interval = std::chrono::milliseconds(10)});
  REQUIRE(engine.wait_for("fold", 20, kWait));
  faults.fail_locks(1, FaultInjection::kForever);
  std::this_thread::sleep_for(1s);
  faults.clear();
  CHECK(faults.injected() > 0);
  append_numbers(t.store, 20, 21);
  CHECK(engine.wait_for("fold", 40, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(eventually([&] { return engine.status("fold").state == ProjectionState::running; }));
  // Reported at each attempt, with back-off: 10, 20, 40 ... ms, so a handful in a second.
  {
    std::lock_guard lock(errors.mu);
    CHECK(errors.names.size() >= 2);
    CHECK(errors.names.size() <= 20);
    CHECK(errors.storage == errors.names.size());
    CHECK(std::all_of(errors.names.begin(), errors.names.end(),
                      [](const std::string& n) { return n == "fold"; }));
  }
  const ProjectionStatus s = engine.status("fold");
  REQUIRE(s.error.has_value());  // the last failure is kept
  CHECK(s.error->event_type.empty());
  CHECK(s.error->message.find("I/O error") != std::string::npos);
}

TEST_CASE("an inline projection survives a second of failing storage, exactly once") {
  FaultInjection faults;
  TempStore t;
  append_numbers(t.store, 10);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>(), {.mode = ProjectionMode::inline_append,
                                        .poll_interval = std::chrono::milliseconds(10)});
  REQUIRE(engine.wait_for("fold", 10, kWait));
  faults.fail_locks(1, FaultInjection::kForever);
  CHECK_THROWS_AS(append_numbers(t.store, 1, 11), StorageError);  // the append fails, no more
  std::this_thread::sleep_for(1s);
  faults.clear();
  append_numbers(t.store, 10, 11);
  CHECK(engine.wait_for("fold", 20, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(eventually([&] { return engine.status("fold").state == ProjectionState::running; }));
}

TEST_CASE("while the storage fails the projection is retrying, and stop() returns promptly") {
  FaultInjection faults;
  TempStore t;
  append_numbers(t.store, 5);
  Errors errors;
  ProjectionEngine engine(t.store, errors.engine_options());
  engine.add(std::make_shared<Fold>(), {.poll_interval = std::chrono::milliseconds(10)});
  REQUIRE(engine.wait_for("fold", 5, kWait));
  faults.fail_locks(1, FaultInjection::kForever);
  // 10 + 20 + ... + 640 ms: the back-off is long now.
  REQUIRE(eventually([&] { return errors.count() >= 8; }));
  const auto before = std::chrono::steady_clock::now();
  engine.stop();
  CHECK(std::chrono::steady_clock::now() - before < 500ms);
  faults.clear();
  CHECK(engine.status("fold").state == ProjectionState::stopped);
  engine.restart("fold");
  append_numbers(t.store, 5, 6);
  CHECK(engine.wait_for("fold", 10, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_CASE("while another connection holds the write lock, status() shows retrying with the error") {
  StoreOptions options = TempStore::fast_options();
  options.busy_timeout = std::chrono::milliseconds(20);
  TempStore t(options);
  append_numbers(t.store, 10);
  Errors errors;
  ProjectionEngine engine(t.store, errors.engine_options());
  engine.add(std::make_shared<Fold>());
  REQUIRE(engine.wait_for("fold", 10, kWait));
  engine.stop();
  append_numbers(t.store, 10, 11);
  {
    RawConnection other(t.path);
    other.exec("BEGIN IMMEDIATE");
    engine.restart("fold");  // its thread cannot write: busy
    ProjectionStatus s;
    CHECK(eventually([&] {
      s = engine.status("fold");  // reads still work (WAL)
      return s.state == ProjectionState::retrying;
    }));
    REQUIRE(s.error.has_value());
    INFO(s.error->message);
    CHECK(s.error->message.find("locked") != std::string::npos);
    CHECK(s.checkpoint == 10);
    CHECK(eventually([&] { return errors.count() >= 2; }));
    other.exec("ROLLBACK");
  }
  CHECK(engine.wait_for("fold", 20, kWait));
  CHECK(eventually([&] { return engine.status("fold").state == ProjectionState::running; }));
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_CASE("a rebuild of a new version survives storage failures, exactly once") {
  for (const int skip : {0, 3, 11, 25, 60}) {
    CAPTURE(skip);
    FaultInjection faults;
    TempStore t;
    append_numbers(t.store, 100);
    {
      ProjectionEngine engine(t.store);
      engine.add(std::make_shared<Fold>());
      REQUIRE(engine.wait_for("fold", 100, kWait));
    }
    Errors errors;
    ProjectionEngine engine(t.store, errors.engine_options());
    faults.fail_locks(skip + 1, 4);
    try {
      engine.add(std::make_shared<Fold>(Fold::Options{.version = 2, .weight = 10}),
                 {.batch_size = 8, .poll_interval = std::chrono::milliseconds(10)});
    } catch (const StorageError&) {
      continue;
    }
    REQUIRE(eventually([&] { return faults.spent(); }));
    CHECK(engine.wait_for("fold", 100, kWait));
    CHECK(read_model(t.store) == fold_log(t.store, {}, 10));
    // A batch tries its read and its write twice before the back-off: four failed calls in a
    // row are at most two reported errors (two pauses of 10 and 20 ms).
    CHECK(errors.count() <= 2);
  }
}

TEST_CASE("storage failures in the middle of catching up neither lose nor repeat an event") {
  for (const int skip : {0, 1, 2, 5, 9, 17, 40, 90}) {
    CAPTURE(skip);
    FaultInjection faults;
    TempStore t;
    append_numbers(t.store, 120);
    Errors errors;
    ProjectionEngine engine(t.store, errors.engine_options());
    auto fold = std::make_shared<Fold>();
    faults.fail_locks(skip + 1, 4);
    try {
      engine.add(fold, {.batch_size = 8, .poll_interval = std::chrono::milliseconds(10)});
    } catch (const StorageError&) {
      continue;  // the failures hit add()'s own transaction: reported to the caller
    }
    // The projection's thread (polling every 10 ms) meets every failure; the test's own reads
    // start after.
    REQUIRE(eventually([&] { return faults.spent(); }));
    CHECK(engine.wait_for("fold", 120, kWait));
    CHECK(read_model(t.store) == fold_log(t.store));
    CHECK(errors.count() <= 2);  // as in the rebuild above
  }
}

TEST_CASE("concurrent restart() calls on one projection return and leave it running") {
  TempStore t;
  append_numbers(t.store, 30);
  ProjectionEngine engine(t.store);
  engine.add(std::make_shared<Fold>(), {.batch_size = 4});
  finishes_within(
      [&] {
        for (int round = 0; round < 20; ++round) {
          std::vector<std::thread> threads;
          for (int i = 0; i < 4; ++i) threads.emplace_back([&] { engine.restart("fold"); });
          for (std::thread& th : threads) th.join();
        }
      },
      std::chrono::seconds(60), "concurrent restart()");
  append_numbers(t.store, 5, 31);
  CHECK(engine.wait_for("fold", 35, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_CASE("stop() and the destructor concurrent with restart() neither hang nor crash") {
  TempStore t;
  append_numbers(t.store, 30);
  finishes_within(
      [&] {
        for (int round = 0; round < 10; ++round) {
          ProjectionEngine engine(t.store);
          engine.add(std::make_shared<Fold>(), {.batch_size = 4});
          std::vector<std::thread> threads;
          for (int i = 0; i < 3; ++i) threads.emplace_back([&] { engine.restart("fold"); });
          threads.emplace_back([&] { engine.stop(); });
          for (std::thread& th : threads) th.join();
          engine.restart("fold");
          CHECK(engine.wait_for("fold", 30, kWait));
          threads.clear();
          threads.emplace_back([&] { engine.restart("fold"); });
          threads.emplace_back([&] { engine.stop(); });
          for (std::thread& th : threads) th.join();
        }  // destroyed after the last restart or stop
      },
      std::chrono::seconds(60), "stop() with restart()");
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_SUITE_END();
