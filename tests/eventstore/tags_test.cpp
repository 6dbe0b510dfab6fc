// Tags on events (tags.hpp), the first part of consistency by query (docs/dcb.md): carried in
// the hashed metadata, indexed in the append's own transaction (and by import), refused when
// malformed, and checked by verify against the log: an edited tag breaks the chain, an index
// changed behind the library's back is tag_index_mismatch. Both backends.
#include <doctest/doctest.h>

#include <set>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"

#include "factum/eventstore/query.hpp"
#include "factum/eventstore/tags.hpp"

using namespace factum;
using factum::test::make_event;
using factum::test::TempStore;

namespace {

EventData tagged(std::vector<std::string> tags, const std::string& type = "test.Claimed") {
  EventData e = make_event(type);
  set_tags(e.metadata, std::move(tags));
  return e;
}

// The index's rows, as "tag@position".
std::set<std::string> index_rows(const EventStore& store) {
  std::set<std::string> out;
  store.read_sql([&](Sql& sql) {
    if (sql.object_type("factum_event_tags") != "table") return;
    sql.query("SELECT tag, position FROM factum_event_tags", {},
              [&](const SqlRow& r) { out.insert(r.text(0) + "@" + std::to_string(r.integer(1))); });
  });
  return out;
}

void drop_event_triggers(EventStore& store) {
  store.write_sql([](Sql& sql) {
    if (sql.dialect() == SqlDialect::postgres) {
      sql.execute("DROP TRIGGER IF EXISTS events_are_immutable ON events");
    } else {
      sql.execute("DROP TRIGGER IF EXISTS events_are_immutable");
    }
  });
}

}  // namespace

TEST_CASE("tags are validated, sorted and kept in the hashed metadata") {
  Metadata m;
  set_tags(m, {"username:alice", "seat:14C", "username:alice"});
  CHECK(m.values.at(kTagsMetadataKey) == "seat:14C,username:alice");
  CHECK(tags_of(m) == std::vector<std::string>{"seat:14C", "username:alice"});
  for (const std::string& bad : {std::string(), std::string("a b"), std::string("a,b"),
                                 std::string("caf\xc3\xa9"), std::string(129, 'x')}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(validate_tag(bad), InvalidArgument);
    Metadata before = m;
    CHECK_THROWS_AS(set_tags(m, {"ok", bad}), InvalidArgument);
    CHECK(m == before);  // unchanged
  }
  std::vector<std::string> many;
  for (int i = 0; i < 33; ++i) many.push_back("t" + std::to_string(i));
  CHECK_THROWS_WITH_AS(set_tags(m, many), doctest::Contains("at most 32"), InvalidArgument);
  set_tags(m, {});
  CHECK_FALSE(m.values.contains(kTagsMetadataKey));
}

TEST_CASE("an append indexes its events' tags in its own transaction") {
  TempStore t;
  t.store.append("user-1", ExpectedVersion::no_stream(), tagged({"username:alice"}));
  t.store.append("plain-1", ExpectedVersion::any(), make_event());
  const std::vector<EventData> batch{tagged({"username:bob", "team:red"}), make_event(),
                                     tagged({"team:red"})};
  t.store.append("user-2", ExpectedVersion::no_stream(), batch);
  CHECK(index_rows(t.store) ==
        std::set<std::string>{"username:alice@1", "username:bob@3", "team:red@3", "team:red@5"});
  const RecordedEvent first = *t.store.read_all().begin();
  CHECK(tags_of(first.metadata) == std::vector<std::string>{"username:alice"});
  CHECK(t.store.verify().ok());

  // A failed append (a version conflict) leaves no row; a malformed value is refused unwritten.
  CHECK_THROWS_AS(t.store.append("user-1", ExpectedVersion::no_stream(), tagged({"username:x"})),
                  ConcurrencyError);
  EventData bad = make_event();
  bad.metadata.values[kTagsMetadataKey] = "b,a";  // not sorted: not what set_tags writes
  CHECK_THROWS_WITH_AS(t.store.append("user-9", ExpectedVersion::any(), bad),
                       doctest::Contains("invalid tags"), InvalidArgument);
  CHECK(t.store.head_position() == 5);
  CHECK(index_rows(t.store).size() == 4);
  // An idempotent retry of a tagged event writes no second row.
  const EventData again = tagged({"username:carol"});
  t.store.append("user-3", ExpectedVersion::no_stream(), again);
  t.store.append("user-3", ExpectedVersion::no_stream(), again);
  CHECK(index_rows(t.store).size() == 5);
  CHECK(t.store.verify().ok());
}

TEST_CASE("threads appending tagged events leave an index that agrees with the log") {
  TempStore t;
  std::vector<std::thread> threads;
  for (int k = 0; k < 3; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 30; ++i) {
        t.store.append("s-" + std::to_string(k), ExpectedVersion::any(),
                       tagged({"thread:" + std::to_string(k), "n:" + std::to_string(i)}));
      }
    });
  }
  // verify runs while they write: what they add meanwhile is not compared.
  for (int i = 0; i < 5; ++i) CHECK(t.store.verify().ok());
  for (auto& th : threads) th.join();
  CHECK(index_rows(t.store).size() == 180);
  CHECK(t.store.verify().ok());
}

TEST_CASE(
    "verify: an edited tag breaks the chain, an index changed behind the library's back "
    "is tag_index_mismatch") {
  TempStore t;
  t.store.append("user-1", ExpectedVersion::no_stream(), tagged({"username:alice"}));
  t.store.append("user-2", ExpectedVersion::no_stream(), tagged({"username:bob"}));
  t.store.append("user-3", ExpectedVersion::no_stream(), tagged({"username:carol"}));
  REQUIRE(t.store.verify().ok());
  using P = VerifyResult::Problem;
  auto expect = [&](P problem, Position position) {
    const VerifyResult r = t.store.verify();
    CAPTURE(r.message);
    CHECK(r.problem == problem);
    CHECK(r.position == position);
  };

  SUBCASE("an index row removed") {
    t.store.write_sql(
        [](Sql& sql) { sql.execute("DELETE FROM factum_event_tags WHERE tag = 'username:bob'"); });
    expect(P::tag_index_mismatch, 2);
  }
  SUBCASE("an index row added") {
    t.store.write_sql([](Sql& sql) {
      sql.execute("INSERT INTO factum_event_tags (tag, position) VALUES ('username:eve', 3)");
    });
    expect(P::tag_index_mismatch, 3);
  }
  SUBCASE("an index row moved to another event") {
    t.store.write_sql([](Sql& sql) {
      sql.execute("UPDATE factum_event_tags SET position = 1 WHERE tag = 'username:carol'");
    });
    expect(P::tag_index_mismatch, 1);
  }
  SUBCASE("the whole index dropped") {
    t.store.write_sql([](Sql& sql) { sql.execute("DROP TABLE factum_event_tags"); });
    expect(P::tag_index_mismatch, 1);
  }
  SUBCASE("an event's tags edited in the log (another event's metadata copied over it)") {
    drop_event_triggers(t.store);
    t.store.write_sql([](Sql& sql) {
      sql.execute(
          "UPDATE events SET extra = (SELECT extra FROM events WHERE position = 3) "
          "WHERE position = 2");
      sql.execute("UPDATE factum_event_tags SET tag = 'username:carol' WHERE position = 2");
    });
    expect(P::hash_mismatch, 2);
  }
  CHECK(problem_name(P::tag_index_mismatch) == "tag_index_mismatch");
}

TEST_CASE("a tag table dropped behind a writer's back is made again by its next tagged append") {
  TempStore t;
  t.store.append("user-1", ExpectedVersion::no_stream(), tagged({"username:alice"}));
  // The writer has made the table and knows the stream: on PostgreSQL its next append to it
  // takes the one-round-trip way, which sends no CREATE TABLE once the table was made.
  t.store.append("user-1", ExpectedVersion::any(), tagged({"username:bob"}));
  // A conditional append on the stream the writer knows, refused: nothing written.
  const EventData late = tagged({"username:alice"});
  CHECK_THROWS_WITH_AS(t.store.append("user-1", ExpectedVersion::exact(2), {&late, 1},
                                      AppendCondition{Query::tagged({"username:alice"}), 0}),
                       doctest::Contains("at 1"), AppendConditionFailed);
  CHECK(t.store.head_position() == 2);
  // Dropped where no write of the store's is counted (on PostgreSQL a write_sql moves the head
  // row, and the writer would take the careful way anyway).
#ifdef FACTUM_TEST_HAVE_POSTGRES
  if (factum::test::testing_postgres()) {
    factum::test::pg_execute(t.path.string(), "DROP TABLE factum_event_tags");
  } else
#endif
  {
    EventStore other = EventStore::open(t.path, TempStore::fast_options());
    other.write_sql([](Sql& sql) { sql.execute("DROP TABLE factum_event_tags"); });
  }
  const AppendResult r =
      t.store.append("user-1", ExpectedVersion::exact(2), tagged({"username:carol"}));
  CHECK(r.last_position == 3);
  CHECK(index_rows(t.store) == std::set<std::string>{"username:carol@3"});
  // A conditional append on a tag reads and writes the table made again.
  const EventData dave = tagged({"username:dave"});
  t.store.append("user-1", ExpectedVersion::exact(3), {&dave, 1},
                 AppendCondition{Query::tagged({"username:dave"}), 0});
  CHECK(index_rows(t.store) == std::set<std::string>{"username:carol@3", "username:dave@4"});
  // verify names the first event the dropped index lost.
  const VerifyResult v = t.store.verify();
  CHECK(v.problem == VerifyResult::Problem::tag_index_mismatch);
  CHECK(v.position == 1);
}

TEST_CASE("an imported log indexes its tags as the appends did") {
  TempStore source;
  source.store.append("user-1", ExpectedVersion::no_stream(), tagged({"username:alice"}));
  source.store.append("plain-1", ExpectedVersion::any(), make_event());
  source.store.append("user-2", ExpectedVersion::no_stream(), tagged({"username:bob", "vip"}));
  std::vector<RecordedEvent> log;
  for (const RecordedEvent& e : source.store.read_all()) log.push_back(e);
  TempStore copy;
  copy.store.import_events(log);
  CHECK(index_rows(copy.store) == index_rows(source.store));
  CHECK(copy.store.verify().ok());
}
