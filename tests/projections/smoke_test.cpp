#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "support/temp_dir.hpp"

using namespace factum;
using namespace std::chrono_literals;

namespace {

class Counter : public Projection {
 public:
  explicit Counter(std::uint32_t v = 1, std::string name = "counter")
      : v_(v), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::uint32_t version() const override { return v_; }
  void reset(ProjectionContext& ctx) override {
    ctx.sql().execute("CREATE TABLE " + ctx.table("counts") +
                      " (stream TEXT PRIMARY KEY, n INTEGER NOT NULL)");
  }
  void apply(const RecordedEvent& e, ProjectionContext& ctx) override {
    ctx.sql().execute("INSERT INTO " + ctx.table("counts") +
                          " VALUES (?1, ?2) ON CONFLICT (stream) DO UPDATE SET n = n + ?2",
                      {e.stream_id, std::int64_t{v_}});
  }
  std::uint32_t v_;
  std::string name_;
};

std::int64_t total(EventStore& store) {
  std::int64_t n = 0;
  store.read_sql([&](Sql& sql) {
    n = sql.query_integer("SELECT coalesce(sum(n),0) FROM counts").value_or(-1);
  });
  return n;
}

}  // namespace

TEST_CASE("smoke: subscription catch-up then live") {
  test::TempStore t;
  for (int i = 0; i < 10; ++i)
    t.store.append("s-" + std::to_string(i % 3), ExpectedVersion::any(), test::make_event());
  std::atomic<int> seen{0};
  Position last = 0;
  bool order_ok = true;
  Subscription sub(t.store, {}, [&](const RecordedEvent& e) {
    if (e.position != last + 1) order_ok = false;
    last = e.position;
    ++seen;
  });
  CHECK(sub.wait_for(10, 5s));
  for (int i = 0; i < 10; ++i) t.store.append("s-1", ExpectedVersion::any(), test::make_event());
  CHECK(sub.wait_for(20, 5s));
  sub.stop();
  CHECK(seen == 20);
  CHECK(order_ok);
}

TEST_CASE("smoke: async and inline projections, rebuild") {
  test::TempStore t;
  for (int i = 0; i < 100; ++i)
    t.store.append("s-" + std::to_string(i % 3), ExpectedVersion::any(), test::make_event());
  {
    ProjectionEngine engine(t.store);
    engine.add(std::make_shared<Counter>());
    CHECK(engine.wait_for("counter", 100, 5s));
    CHECK(total(t.store) == 100);
    for (int i = 0; i < 10; ++i) t.store.append("s-1", ExpectedVersion::any(), test::make_event());
    CHECK(engine.wait_for("counter", 110, 5s));
    CHECK(total(t.store) == 110);
  }
  {
    ProjectionEngine engine(t.store);
    engine.add(std::make_shared<Counter>(2), {.mode = ProjectionMode::inline_append});
    CHECK(engine.wait_for("counter", 110, 5s));
    CHECK(total(t.store) == 220);
    auto s = engine.status("counter");
    CHECK(s.version == 2);
    CHECK(s.generation == 2);
    // wait until active
    for (int i = 0; i < 200 && engine.status("counter").state != ProjectionState::running; ++i)
      std::this_thread::sleep_for(5ms);
    t.store.append("s-1", ExpectedVersion::any(), test::make_event());
    CHECK(total(t.store) == 222);
  }
}
