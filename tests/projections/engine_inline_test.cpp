// ProjectionEngine, inline mode: the read model is written inside each append's transaction.
#include <doctest/doctest.h>

#include <memory>

#include "engine_support.hpp"

using namespace factum;
using namespace factum::test;

TEST_SUITE_BEGIN("projection engine");

namespace {

// Adds `projection` inline and waits until its thread has handed over to the append hook.
void add_inline(ProjectionEngine& engine, std::shared_ptr<Projection> projection,
                ProjectionOptions options = {}) {
  const std::string name = projection->name();
  options.mode = ProjectionMode::inline_append;
  engine.add(std::move(projection), options);
  REQUIRE(eventually([&] { return engine.status(name).state == ProjectionState::running; }));
}

}  // namespace

TEST_CASE("inline: once running, the read model shows an event as soon as append returns") {
  TempStore t;
  append_numbers(t.store, 20);
  ProjectionEngine engine(t.store);
  add_inline(engine, std::make_shared<Fold>());
  CHECK(read_model(t.store) == fold_log(t.store));
  for (int i = 0; i < 30; ++i) {
    append_numbers(t.store, 1, 1000 + i);
    REQUIRE(read_model(t.store) == fold_log(t.store));  // no waiting
    REQUIRE(engine.status("fold").checkpoint == t.store.head_position());
  }
  const std::vector<EventData> batch = make_events(4, "7");
  t.store.append("batch-1", ExpectedVersion::any(), batch);
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_CASE("inline: another EventStore's appends are applied first by the next inline append") {
  TempStore t;
  EventStore other = EventStore::open(t.path, TempStore::fast_options());
  append_numbers(t.store, 10);
  ProjectionEngine engine(t.store);
  // No polling: only this process's appends wake the projection's thread.
  add_inline(engine, std::make_shared<Fold>(), {.poll_interval = 0ms});
  append_numbers(other, 6, 500, "other");  // without the projection
  CHECK(engine.status("fold").checkpoint == 10);
  append_numbers(t.store, 1, 900);
  CHECK(engine.status("fold").checkpoint == 17);
  CHECK(read_model(t.store) == fold_log(t.store));
  CHECK(read_model(t.store).at("other-0").n == 2);
}

TEST_CASE("inline: another EventStore's appends are caught up by the projection's thread") {
  TempStore t;
  EventStore other = EventStore::open(t.path, TempStore::fast_options());
  ProjectionEngine engine(t.store);
  add_inline(engine, std::make_shared<Fold>(), {.batch_size = 4, .poll_interval = 10ms});
  append_numbers(other, 25, 1, "other");
  REQUIRE(engine.wait_for("fold", 25, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
  // A gap longer than batch_size: the append leaves it to the thread.
  append_numbers(other, 9, 100, "other");
  append_numbers(t.store, 1, 200);
  REQUIRE(engine.wait_for("fold", 35, kWait));
  CHECK(read_model(t.store) == fold_log(t.store));
}

TEST_CASE("event_types: only listed types are applied, the checkpoint moves over the others") {
  const std::vector<std::string> types{"test.Counted", "test.Also"};
  TempStore t;
  append_numbers(t.store, 10, 1, "s", 3, "test.Counted");
  append_numbers(t.store, 10, 11, "s", 3, "test.Ignored");
  append_numbers(t.store, 3, 21, "s", 3, "test.Also");
  ProjectionEngine engine(t.store);
  auto fold = std::make_shared<Fold>(Fold::Options{.types = types});

  SUBCASE("async") {
    engine.add(fold, {.batch_size = 4});
    REQUIRE(engine.wait_for("fold", 23, kWait));
    append_numbers(t.store, 7, 30, "s", 3, "test.Ignored");
    REQUIRE(engine.wait_for("fold", 30, kWait));
    CHECK(engine.status("fold").checkpoint == 30);
  }
  SUBCASE("inline") {
    add_inline(engine, fold, {.batch_size = 4});
    CHECK(engine.status("fold").checkpoint == 23);
    append_numbers(t.store, 7, 30, "s", 3, "test.Ignored");
    CHECK(engine.status("fold").checkpoint == 30);
    append_numbers(t.store, 2, 40, "s", 3, "test.Counted");
    CHECK(engine.status("fold").checkpoint == 32);
  }
  const Tallies expected = fold_log(t.store, types);
  CHECK(read_model(t.store) == expected);
  int listed = 0;
  for (const auto& [stream, tally] : expected) listed += static_cast<int>(tally.n);
  CHECK(fold->applies == listed);
}

TEST_CASE("inline: a throwing projection fails alone, the append succeeds and others apply it") {
  TempStore t;
  append_numbers(t.store, 5);
  std::atomic<bool> broken{true};
  ProjectionEngine engine(t.store);
  auto failing = std::make_shared<Fold>(Fold::Options{.name = "failing", .table = "failing"});
  failing->after_write = boom_while(broken);
  add_inline(engine, failing);
  add_inline(engine, std::make_shared<Fold>(Fold::Options{.name = "healthy"}));

  const AppendResult r =
      t.store.append("s-1", ExpectedVersion::any(), make_event("test.X", "boom"));
  CHECK(r.last_position == 6);
  CHECK(t.store.head_position() == 6);
  const ProjectionStatus s = engine.status("failing");
  CHECK(s.state == ProjectionState::failed);
  CHECK(s.checkpoint == 5);
  REQUIRE(s.error.has_value());
  CHECK(s.error->position == 6);
  CHECK(s.error->event_type == "test.X");
  CHECK(s.error->message == "boom at 6");
  CHECK(engine.status("healthy").checkpoint == 6);
  CHECK(read_model(t.store, "failing") == fold_log(t.store, {}, 1, 5));
  CHECK(read_model(t.store, "counts") == fold_log(t.store));

  // The failed projection is no longer applied; the healthy one is, and the file knows.
  append_numbers(t.store, 3, 7);
  CHECK(engine.status("failing").checkpoint == 5);
  CHECK(engine.status("healthy").checkpoint == 9);
  CHECK(ProjectionEngine::recorded(t.store).at(0).state == ProjectionState::failed);

  broken = false;
  engine.restart("failing");
  REQUIRE(engine.wait_for("failing", 9, kWait));
  REQUIRE(eventually([&] { return engine.status("failing").state == ProjectionState::running; }));
  append_numbers(t.store, 1, 10);
  CHECK(engine.status("failing").checkpoint == 10);
  CHECK(read_model(t.store, "failing") == fold_log(t.store));
}

TEST_SUITE_END();
