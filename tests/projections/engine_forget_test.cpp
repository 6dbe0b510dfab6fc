// Projections and forgotten subjects (personal.hpp): the engine hands each factum.SubjectForgotten
// fact to Projection::forget, in the transaction that moves the checkpoint, whatever types the
// projection asked for, so a read model can purge the subject's rows; a rebuild never brings
// them back. Inline and async modes, both backends.
#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "engine_support.hpp"
#include "factum/eventstore/personal.hpp"
#include "factum/eventstore/query.hpp"

using namespace factum;
using namespace factum::test;

namespace {

struct Joined {
  static constexpr std::string_view event_type = "test.Joined";
  std::string user;
  Personal<std::string> name;
  template <class A>
  void serialize(A& ar, unsigned) {
    ar& user& name;
  }
};

// A read model of names by user, kept only for subjects not forgotten.
class Names : public Projection {
 public:
  Names(const EventRegistry& registry, std::uint32_t version) : registry_(registry), v_(version) {}
  std::string name() const override { return "names"; }
  std::uint32_t version() const override { return v_; }
  std::vector<std::string> event_types() const override { return {"test.Joined"}; }
  void reset(ProjectionContext& ctx) override {
    ctx.sql().execute("CREATE TABLE " + ctx.table("names") +
                      " (member TEXT PRIMARY KEY, subject TEXT NOT NULL, name TEXT NOT NULL)");
  }
  void apply(const RecordedEvent& e, ProjectionContext& ctx) override {
    ++applied;
    const Joined j = registry_.decode<Joined>(e);
    if (!j.name.has_value()) return;  // erased: nothing to show
    ctx.sql().execute("INSERT INTO " + ctx.table("names") + " VALUES (?1, ?2, ?3)",
                      {j.user, j.name.subject(), j.name.value()});
  }
  void forget(std::string_view subject, ProjectionContext& ctx) override {
    ++forgotten;
    ctx.sql().execute("DELETE FROM " + ctx.table("names") + " WHERE subject = ?1",
                      {std::string(subject)});
  }
  std::atomic<int> applied{0};
  std::atomic<int> forgotten{0};

 private:
  const EventRegistry& registry_;
  std::uint32_t v_;
};

std::vector<std::string> names(const EventStore& store) {
  std::vector<std::string> out;
  store.read_sql([&](Sql& sql) {
    sql.query("SELECT name FROM names ORDER BY member", {},
              [&](const SqlRow& r) { out.push_back(r.text(0)); });
  });
  return out;
}

struct Fixture {
  TempDir dir;
  std::filesystem::path kek = dir.file("kek.bin");
  std::filesystem::path location = temp_store_location(dir);
  EventStore store = open();
  EventRegistry registry;

  EventStore open() {
    std::ofstream(kek, std::ios::binary) << std::string(32, 'p');
    StoreOptions o = TempStore::fast_options();
    o.personal_data.key_provider = std::make_shared<FileKeyProvider>(kek);
    return EventStore::open(location, o);
  }
  Fixture() { registry.add<Joined>().use_keyring(store.keyring()); }
  void join(const std::string& user, const std::string& name) {
    store.append("member-" + user, ExpectedVersion::any(), registry,
                 Joined{user, {"user:" + user, name}});
  }
};

}  // namespace

TEST_CASE("an async projection purges a forgotten subject's rows, and a rebuild keeps them out") {
  Fixture f;
  f.join("1", "Ann");
  f.join("2", "Bob");
  ForgetResult r;
  {
    ProjectionEngine engine(f.store);
    auto names_v1 = std::make_shared<Names>(f.registry, 1);
    engine.add(names_v1);
    REQUIRE(engine.wait_for("names", f.store.head_position(), kWait));
    CHECK(names(f.store) == std::vector<std::string>{"Ann", "Bob"});
    r = f.store.forget("user:1");
    REQUIRE(engine.wait_for("names", r.position, kWait));
    CHECK(names(f.store) == std::vector<std::string>{"Bob"});
    CHECK(names_v1->forgotten == 1);
    CHECK(names_v1->applied == 2);  // the fact is not a type it asked for: forget() only
  }
  // A rebuild from position 1 (a new version): the subject's value decodes as erased, and
  // forget runs again when the fact is reached.
  ProjectionEngine engine(f.store);
  auto names_v2 = std::make_shared<Names>(f.registry, 2);
  engine.add(names_v2);
  REQUIRE(engine.wait_for("names", r.position, kWait));
  CHECK(names(f.store) == std::vector<std::string>{"Bob"});
  CHECK(names_v2->forgotten == 1);
}

TEST_CASE("an inline projection purges in the forget's own transaction") {
  Fixture f;
  f.join("1", "Ann");
  ProjectionEngine engine(f.store);
  ProjectionOptions inline_mode;
  inline_mode.mode = ProjectionMode::inline_append;
  auto n = std::make_shared<Names>(f.registry, 1);
  engine.add(n, inline_mode);
  f.join("2", "Bob");
  CHECK(names(f.store) == std::vector<std::string>{"Ann", "Bob"});
  f.store.forget("user:2");
  CHECK(names(f.store) == std::vector<std::string>{"Ann"});  // when forget returns
}

namespace {

// Names following a query (a types-only item) instead of event types: the forget facts are not
// in the query, and still reach forget().
class QueryNames : public Names {
 public:
  using Names::Names;
  std::vector<std::string> event_types() const override { return {}; }
  std::optional<Query> query() const override { return Query::of({"test.Joined"}); }
};

}  // namespace

TEST_CASE("a projection following a query is told of forgotten subjects, async and rebuilt") {
  Fixture f;
  f.join("1", "Ann");
  f.join("2", "Bob");
  f.store.append("other-1", ExpectedVersion::any(), make_event("test.Other"));
  ForgetResult r;
  {
    ProjectionEngine engine(f.store);
    auto v1 = std::make_shared<QueryNames>(f.registry, 1);
    engine.add(v1, {.batch_size = 1});
    REQUIRE(engine.wait_for("names", f.store.head_position(), kWait));
    CHECK(names(f.store) == std::vector<std::string>{"Ann", "Bob"});
    r = f.store.forget("user:1");
    f.join("3", "Cy");
    REQUIRE(engine.wait_for("names", f.store.head_position(), kWait));
    CHECK(names(f.store) == std::vector<std::string>{"Bob", "Cy"});
    CHECK(v1->forgotten == 1);
    CHECK(v1->applied == 3);  // the fact and test.Other are not in its query
  }
  ProjectionEngine engine(f.store);
  auto v2 = std::make_shared<QueryNames>(f.registry, 2);
  engine.add(v2);
  REQUIRE(engine.wait_for("names", f.store.head_position(), kWait));
  CHECK(names(f.store) == std::vector<std::string>{"Bob", "Cy"});
  CHECK(v2->forgotten == 1);
  CHECK(v2->applied == 3);
}
