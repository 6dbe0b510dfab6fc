// Append semantics: expected versions, idempotent retries, duplicates, validation, atomicity.
#include <doctest/doctest.h>

#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::TempStore;

TEST_CASE("append to a new stream gives versions 1..n and positions 1..n") {
  TempStore t;
  const auto events = make_events(3);
  const AppendResult r = t.store.append("account-1", ExpectedVersion::no_stream(), events);
  CHECK(r == AppendResult{3, 1, 3});
  CHECK(t.store.stream_version("account-1") == 3);
  CHECK(t.store.head_position() == 3);
  const auto read = t.store.read_stream("account-1").to_vector();
  REQUIRE(read.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(read[i].id == events[i].id);
    CHECK(read[i].stream_version == i + 1);
    CHECK(read[i].position == i + 1);
    CHECK(read[i].payload == events[i].payload);
    CHECK(read[i].stream_id == "account-1");
  }
}

TEST_CASE("positions are global across streams and versions are per stream") {
  TempStore t;
  t.store.append("a-1", ExpectedVersion::any(), make_events(2));
  const auto r = t.store.append("b-1", ExpectedVersion::any(), make_events(2));
  CHECK(r == AppendResult{2, 3, 4});
  const auto r2 = t.store.append("a-1", ExpectedVersion::exact(2), make_event());
  CHECK(r2 == AppendResult{3, 5, 5});
}

TEST_CASE(
    "append with a stale expected version throws ConcurrencyError naming stream and versions") {
  TempStore t;
  t.store.append("account-7", ExpectedVersion::any(), make_events(2));
  try {
    t.store.append("account-7", ExpectedVersion::exact(1), make_event());
    FAIL("expected ConcurrencyError");
  } catch (const ConcurrencyError& e) {
    CHECK(e.stream() == "account-7");
    CHECK(e.actual_version() == 2);
    const std::string what = e.what();
    CHECK(what.find("account-7") != std::string::npos);
    CHECK(what.find("exactly 1") != std::string::npos);
    CHECK(what.find("2") != std::string::npos);
  }
  CHECK(t.store.stream_version("account-7") == 2);
  CHECK(t.store.head_position() == 2);
}

TEST_CASE("no_stream succeeds only when the stream has no events") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::no_stream(), make_event());
  CHECK_THROWS_AS(t.store.append("s-1", ExpectedVersion::no_stream(), make_event()),
                  ConcurrencyError);
}

TEST_CASE("stream_exists succeeds only when the stream has events") {
  TempStore t;
  CHECK_THROWS_AS(t.store.append("s-1", ExpectedVersion::stream_exists(), make_event()),
                  ConcurrencyError);
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  CHECK(t.store.append("s-1", ExpectedVersion::stream_exists(), make_event()).stream_version == 2);
}

TEST_CASE("exact(0) behaves as no_stream") {
  TempStore t;
  CHECK(t.store.append("s-1", ExpectedVersion::exact(0), make_event()).stream_version == 1);
  CHECK_THROWS_AS(t.store.append("s-1", ExpectedVersion::exact(0), make_event()), ConcurrencyError);
}

TEST_CASE(
    "a retried batch returns the first result and writes nothing, whatever its expected version") {
  TempStore t;
  t.store.append("other-1", ExpectedVersion::any(), make_events(2));
  const auto batch = make_events(3);
  const AppendResult first = t.store.append("order-1", ExpectedVersion::no_stream(), batch);
  t.store.append("order-1", ExpectedVersion::exact(3), make_event());
  // The retry's expected version (no_stream) no longer holds, but it is a retry.
  CHECK(t.store.append("order-1", ExpectedVersion::no_stream(), batch) == first);
  CHECK(t.store.append("order-1", ExpectedVersion::exact(99), batch) == first);
  CHECK(t.store.head_position() == 6);
  CHECK(t.store.stream_version("order-1") == 4);
}

TEST_CASE("a retry of a single event returns its original result") {
  TempStore t;
  const auto e = make_event();
  const auto first = t.store.append("x-1", ExpectedVersion::any(), e);
  t.store.append("x-1", ExpectedVersion::any(), make_event());
  CHECK(t.store.append("x-1", ExpectedVersion::any(), e) == first);
  CHECK(t.store.head_position() == 2);
}

TEST_CASE("a stored id with other content is refused for every expected version kind") {
  struct Change {
    const char* what;
    void (*apply)(EventData&);
  };
  const Change changes[] = {
      {"payload", [](EventData& e) { e.payload = to_bytes("other"); }},
      {"type", [](EventData& e) { e.type = "test.Other"; }},
      {"schema version", [](EventData& e) { e.schema_version = 2; }},
      {"actor", [](EventData& e) { e.metadata.actor = "mallory"; }},
      {"key/values",
       [](EventData& e) {
         e.metadata.values = {{"k", "v"}};
       }},
      {"correlation id", [](EventData& e) { e.metadata.correlation_id = EventId::generate(); }},
  };
  const ExpectedVersion kinds[] = {ExpectedVersion::any(), ExpectedVersion::no_stream(),
                                   ExpectedVersion::stream_exists(), ExpectedVersion::exact(0),
                                   ExpectedVersion::exact(2)};
  for (const Change& change : changes) {
    for (const ExpectedVersion& expected : kinds) {
      CAPTURE(change.what);
      CAPTURE(expected.to_string());
      TempStore t;
      auto batch = make_events(2);
      t.store.append("order-1", ExpectedVersion::no_stream(), batch);
      change.apply(batch.back());
      try {
        t.store.append("order-1", expected, batch);
        FAIL("expected DuplicateEventError");
      } catch (const DuplicateEventError& err) {
        CHECK(err.event_id() == batch.back().id.to_string());
        CHECK(err.stream() == "order-1");
        CHECK(std::string(err.what()).find("other content") != std::string::npos);
      }
      CHECK(t.store.head_position() == 2);
      CHECK(t.store.read_stream("order-1").to_vector().back().payload == to_bytes("1"));
    }
  }
}

TEST_CASE("a retry whose metadata matches field by field is still a retry") {
  TempStore t;
  auto e = make_event();
  e.metadata.actor = "alice";
  e.metadata.values = {{"b", "2"}, {"a", "1"}};
  e.metadata.causation_id = EventId::generate();
  const auto first = t.store.append("x-1", ExpectedVersion::no_stream(), e);
  const EventData copy = e;
  CHECK(t.store.append("x-1", ExpectedVersion::no_stream(), copy) == first);
  CHECK(t.store.head_position() == 1);
}

TEST_CASE("a batch that partly overlaps stored events throws DuplicateEventError") {
  TempStore t;
  auto batch = make_events(3);
  t.store.append("order-1", ExpectedVersion::any(), batch);
  SUBCASE("prefix of a longer batch") {
    batch.push_back(make_event());
    CHECK_THROWS_AS(t.store.append("order-1", ExpectedVersion::any(), batch), DuplicateEventError);
  }
  SUBCASE("same first id, different order") {
    std::swap(batch[1], batch[2]);
    CHECK_THROWS_AS(t.store.append("order-1", ExpectedVersion::any(), batch), DuplicateEventError);
  }
  SUBCASE("a stored id that is not first in the batch") {
    std::vector<EventData> b2{make_event(), batch[1]};
    CHECK_THROWS_AS(t.store.append("order-1", ExpectedVersion::any(), b2), DuplicateEventError);
  }
  CHECK(t.store.head_position() == 3);
}

TEST_CASE("an id stored in another stream throws DuplicateEventError naming it") {
  TempStore t;
  const auto e = make_event();
  t.store.append("a-1", ExpectedVersion::any(), e);
  try {
    t.store.append("b-1", ExpectedVersion::any(), e);
    FAIL("expected DuplicateEventError");
  } catch (const DuplicateEventError& err) {
    CHECK(err.event_id() == e.id.to_string());
    CHECK(std::string(err.what()).find("a-1") != std::string::npos);
  }
  CHECK(t.store.head_position() == 1);
}

TEST_CASE("the same id twice in one batch throws DuplicateEventError and writes nothing") {
  TempStore t;
  const auto e = make_event();
  std::vector<EventData> batch{e, make_event(), e};
  try {
    t.store.append("a-1", ExpectedVersion::any(), batch);
    FAIL("expected DuplicateEventError");
  } catch (const DuplicateEventError& err) {
    CHECK(std::string(err.what()).find("twice") != std::string::npos);
  }
  CHECK(t.store.head_position() == 0);
  CHECK(t.store.stream_version("a-1") == 0);
}

TEST_CASE("the same id in two streams of one append_multi throws DuplicateEventError") {
  TempStore t;
  const auto e = make_event();
  std::vector<StreamAppend> multi{{"a-1", ExpectedVersion::any(), {e}},
                                  {"b-1", ExpectedVersion::any(), {make_event(), e}}};
  CHECK_THROWS_AS(t.store.append_multi(multi), DuplicateEventError);
  CHECK(t.store.head_position() == 0);
}

TEST_CASE("a partial overlap is a duplicate even when its expected version is stale") {
  TempStore t;
  const auto stored = make_event();
  t.store.append("a-1", ExpectedVersion::any(), make_events(2));
  t.store.append("a-1", ExpectedVersion::any(), stored);
  std::vector<EventData> batch{make_event(), stored};
  CHECK_THROWS_AS(t.store.append("a-1", ExpectedVersion::exact(1), batch), DuplicateEventError);
  CHECK(t.store.head_position() == 3);
}

TEST_CASE("invalid arguments throw InvalidArgument and write nothing") {
  StoreOptions o = TempStore::fast_options();
  o.max_payload_size = 16;
  o.max_stream_id_length = 10;
  TempStore t(o);
  const std::vector<EventData> none;
  CHECK_THROWS_AS(t.store.append("a-1", ExpectedVersion::any(), none), InvalidArgument);
  CHECK_THROWS_AS(t.store.append("", ExpectedVersion::any(), make_event()), InvalidArgument);
  CHECK_THROWS_AS(t.store.append("abcdefghijk", ExpectedVersion::any(), make_event()),
                  InvalidArgument);
  CHECK_THROWS_AS(t.store.append(std::string("a\n1"), ExpectedVersion::any(), make_event()),
                  InvalidArgument);
  CHECK_THROWS_AS(t.store.append(std::string("a\0"
                                             "1",
                                             3),
                                 ExpectedVersion::any(), make_event()),
                  InvalidArgument);
  CHECK_THROWS_AS(t.store.append("-1", ExpectedVersion::any(), make_event()), InvalidArgument);
  CHECK_THROWS_AS(t.store.append("a-1", ExpectedVersion::any(), make_event("")), InvalidArgument);
  CHECK_THROWS_AS(
      t.store.append("a-1", ExpectedVersion::any(), make_event("t", std::string(17, 'x'))),
      InvalidArgument);
  CHECK(t.store.append("abcdefghij", ExpectedVersion::any(), make_event("t", std::string(16, 'x')))
            .stream_version == 1);
  CHECK(t.store.head_position() == 1);
}

// PostgreSQL keeps stream ids, types and actors in text columns, which hold UTF-8 only.
TEST_CASE("a stream id, type or actor that is not UTF-8 is refused before it reaches the server" *
          doctest::test_suite("postgres-only")) {
  TempStore t;
  const std::string bad = "caf\xff";
  const auto refusal = [&](const std::string& stream, const EventData& e) -> std::string {
    try {
      t.store.append(stream, ExpectedVersion::any(), e);
    } catch (const InvalidArgument& error) {
      return error.what();
    }
    return "accepted";
  };
  EventData with_actor = make_event();
  with_actor.metadata.actor = bad;
  EventData with_nul_actor = make_event();
  with_nul_actor.metadata.actor = std::string("a\0b", 3);
  CHECK(refusal("a-" + bad, make_event()).find("the stream id 'a-caf\\xff'") != std::string::npos);
  CHECK(refusal("a-1", make_event(bad)).find("the type 'caf\\xff'") != std::string::npos);
  CHECK(refusal("a-1", with_actor).find("the actor 'caf\\xff'") != std::string::npos);
  CHECK(refusal("a-1", with_nul_actor).find("the actor 'a\\x00b'") != std::string::npos);
  CHECK(t.store.head_position() == 0);
  CHECK(t.store.stream_version("a-" + bad) == 0);
  CHECK(t.store.read_stream("a-" + bad).to_vector().empty());
}

// SQLite keeps them as the bytes given (docs/storage-format.md): no UTF-8 check.
TEST_CASE("a stream id, type or actor that is not UTF-8 is stored as its bytes" *
          doctest::test_suite("sqlite-only")) {
  TempStore t;
  const std::string bad = "caf\xff";
  EventData e = make_event(bad);
  e.metadata.actor = std::string("a\0\xff", 3);
  t.store.append("a-" + bad, ExpectedVersion::no_stream(), e);
  const auto read = t.store.read_stream("a-" + bad).to_vector();
  REQUIRE(read.size() == 1);
  CHECK(read[0].stream_id == "a-" + bad);
  CHECK(read[0].type == bad);
  CHECK(read[0].metadata.actor == e.metadata.actor);
  CHECK(t.store.verify().ok());
}

TEST_CASE("a batch with one bad event writes none of its events") {
  StoreOptions o = TempStore::fast_options();
  o.max_payload_size = 4;
  TempStore t(o);
  std::vector<EventData> batch{make_event("t", "ok"), make_event("t", "too long")};
  CHECK_THROWS_AS(t.store.append("a-1", ExpectedVersion::any(), batch), InvalidArgument);
  CHECK(t.store.head_position() == 0);
}

TEST_CASE("a compensating event names an event of its own stream") {
  TempStore t;
  const auto wrong = make_event("bank.Deposited", "100");
  t.store.append("account-1", ExpectedVersion::any(), wrong);
  auto fix = make_event("bank.DepositReversed", "100");
  fix.metadata.compensates = wrong.id;
  t.store.append("account-1", ExpectedVersion::any(), fix);
  const auto comps = t.store.compensations_of(wrong.id);
  REQUIRE(comps.size() == 1);
  CHECK(comps[0].id == fix.id);
  CHECK(comps[0].metadata.compensates == wrong.id);
  CHECK(t.store.compensations_of(fix.id).empty());
}

TEST_CASE("compensating an event of another stream, or no event, throws InvalidArgument") {
  TempStore t;
  const auto e = make_event();
  t.store.append("account-1", ExpectedVersion::any(), e);
  auto fix = make_event();
  fix.metadata.compensates = e.id;
  CHECK_THROWS_AS(t.store.append("account-2", ExpectedVersion::any(), fix), InvalidArgument);
  fix.metadata.compensates = EventId::generate();
  CHECK_THROWS_AS(t.store.append("account-1", ExpectedVersion::any(), fix), InvalidArgument);
  CHECK(t.store.head_position() == 1);
  CHECK(t.store.stream_version("account-2") == 0);
}

TEST_CASE("an event may compensate an earlier event of the same batch") {
  TempStore t;
  auto a = make_event();
  auto b = make_event();
  b.metadata.compensates = a.id;
  std::vector<EventData> batch{a, b};
  CHECK(t.store.append("s-1", ExpectedVersion::any(), batch).stream_version == 2);
}

TEST_CASE("metadata round-trips through the store") {
  TempStore t;
  auto e = make_event();
  e.metadata.correlation_id = EventId::generate();
  e.metadata.causation_id = EventId::generate();
  e.metadata.actor = "alice";
  e.metadata.values = {{"ip", "10.0.0.1"}, {"reason", "refund"}, {"empty", ""}};
  e.schema_version = 7;
  t.store.append("s-1", ExpectedVersion::any(), e);
  const auto got = t.store.read_event(e.id);
  REQUIRE(got.has_value());
  CHECK(got->metadata == e.metadata);
  CHECK(got->schema_version == 7);
  CHECK(got->type == e.type);
  CHECK_FALSE(t.store.read_event(EventId::generate()).has_value());
}

TEST_CASE("an empty payload is stored as an empty payload") {
  TempStore t;
  auto e = make_event("t", "");
  t.store.append("s-1", ExpectedVersion::any(), e);
  CHECK(t.store.read_event(e.id)->payload.empty());
  CHECK(t.store.verify().ok());
}

TEST_CASE("append_multi commits every stream or none") {
  TempStore t;
  t.store.append("b-1", ExpectedVersion::any(), make_event());
  std::vector<StreamAppend> ok{{"a-1", ExpectedVersion::no_stream(), make_events(2)},
                               {"b-1", ExpectedVersion::exact(1), make_events(1)}};
  const auto results = t.store.append_multi(ok);
  REQUIRE(results.size() == 2);
  CHECK(results[0] == AppendResult{2, 2, 3});
  CHECK(results[1] == AppendResult{2, 4, 4});

  std::vector<StreamAppend> bad{{"c-1", ExpectedVersion::no_stream(), make_events(2)},
                                {"b-1", ExpectedVersion::exact(1), make_events(1)}};
  CHECK_THROWS_AS(t.store.append_multi(bad), ConcurrencyError);
  CHECK(t.store.stream_version("c-1") == 0);
  CHECK(t.store.head_position() == 4);
  CHECK(t.store.verify().ok());
  // The failed multi left no stream row behind: c-1 can still be created with no_stream.
  CHECK(t.store.append("c-1", ExpectedVersion::no_stream(), make_event()).first_position == 5);
}

TEST_CASE("append_multi with no streams throws InvalidArgument") {
  TempStore t;
  CHECK_THROWS_AS(t.store.append_multi({}), InvalidArgument);
}

// SQLite only: raw SQL on the store file against its triggers.
TEST_SUITE_BEGIN("sqlite-only");
TEST_CASE("the events table refuses UPDATE and DELETE") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  CHECK_THROWS(factum::test::raw_exec(t.path, "UPDATE events SET type = 'x'"));
  CHECK_THROWS(factum::test::raw_exec(t.path, "DELETE FROM events"));
  CHECK_THROWS(factum::test::raw_exec(t.path, "DELETE FROM streams"));
  CHECK(t.store.head_position() == 1);
  CHECK(t.store.verify().ok());
}

namespace {

// The message raw SQL fails with ("" when it succeeds).
std::string refusal(const std::filesystem::path& file, const std::string& sql) {
  try {
    factum::test::raw_exec(file, sql);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("INSERT OR REPLACE cannot rewrite or remove a stored event") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_events(3));
  t.store.append("t-1", ExpectedVersion::any(), make_events(1));
  const auto before = t.store.read_all().to_vector();
  const char* attacks[] = {
      // the same position: REPLACE deletes the stored row first
      "INSERT OR REPLACE INTO events SELECT position, stream_key, stream_version, event_id, "
      "'forged', schema_version, payload, correlation_id, causation_id, compensates, actor, "
      "extra, recorded_at, hash FROM events WHERE position = 2",
      "REPLACE INTO events SELECT * FROM events WHERE position = 1",
      // a new position, but a stored id, or a stored (stream, version): REPLACE deletes those
      "INSERT OR REPLACE INTO events SELECT 5, stream_key, stream_version, event_id, type, "
      "schema_version, payload, correlation_id, causation_id, compensates, actor, extra, "
      "recorded_at, hash FROM events WHERE position = 2",
      "INSERT OR REPLACE INTO events SELECT 5, stream_key, stream_version, randomblob(16), type, "
      "schema_version, payload, correlation_id, causation_id, compensates, actor, extra, "
      "recorded_at, hash FROM events WHERE position = 3",
      // rows outside the chain
      "INSERT INTO events SELECT 0, stream_key, 4, randomblob(16), type, schema_version, payload, "
      "correlation_id, causation_id, compensates, actor, extra, recorded_at, hash FROM events "
      "WHERE position = 3",
      "INSERT INTO events SELECT 9, stream_key, 4, randomblob(16), type, schema_version, payload, "
      "correlation_id, causation_id, compensates, actor, extra, recorded_at, hash FROM events "
      "WHERE position = 3",
      "REPLACE INTO streams (stream_key, stream_id, category) SELECT stream_key, 'x-1', 'x' "
      "FROM streams WHERE stream_id = 's-1'",
      "INSERT OR REPLACE INTO streams (stream_id, category) VALUES ('s-1', 's')",
  };
  for (const char* sql : attacks) {
    CAPTURE(sql);
    // Refused by a factum trigger (not by a typo in the attack).
    CHECK(refusal(t.path, sql).find("factum: ") != std::string::npos);
  }
  CHECK(t.store.read_all().to_vector() == before);
  CHECK(t.store.stream_version("s-1") == 3);
  CHECK(t.store.verify().ok());
  CHECK(t.store.append("s-1", ExpectedVersion::exact(3), make_event()).last_position == 5);
}

TEST_CASE("a stream row with a key below 1 is refused, so new streams still get keys") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  // In a BEFORE INSERT trigger an omitted key reads as -1: a stored -1 must not block them.
  for (const char* key : {"-1", "0"}) {
    CAPTURE(key);
    CHECK(refusal(t.path, std::string("INSERT INTO streams (stream_key, stream_id, category) "
                                      "VALUES (") +
                              key + ", 'x-1', 'x')")
              .find("factum: stream keys start at 1") != std::string::npos);
  }
  CHECK(t.store.append("t-1", ExpectedVersion::no_stream(), make_event()).last_position == 2);
  CHECK(t.store.verify().ok());
}
TEST_SUITE_END();

TEST_CASE("on_appended fires after each commit with the committed events") {
  TempStore t;
  std::vector<RecordedEvent> seen;
  boost::signals2::scoped_connection c =
      t.store.on_appended().connect([&](const std::vector<RecordedEvent>& events) {
        // The events are committed already: a read sees them.
        CHECK(t.store.head_position() >= events.back().position);
        seen.insert(seen.end(), events.begin(), events.end());
      });
  const auto batch = make_events(3);
  t.store.append("s-1", ExpectedVersion::any(), batch);
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].id == batch[0].id);
  CHECK(seen[2].position == 3);
  CHECK(seen == t.store.read_all().to_vector());
  // A retry commits nothing and fires nothing; a failed append fires nothing.
  t.store.append("s-1", ExpectedVersion::any(), batch);
  CHECK_THROWS(t.store.append("s-1", ExpectedVersion::no_stream(), make_event()));
  CHECK(seen.size() == 3);
  c.disconnect();
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  CHECK(seen.size() == 3);
}

TEST_CASE("a slot may append from inside the notification") {
  TempStore t;
  int calls = 0;
  boost::signals2::scoped_connection c =
      t.store.on_appended().connect([&](const std::vector<RecordedEvent>& events) {
        ++calls;
        if (events.front().stream_id == "cmd-1")
          t.store.append("reaction-1", ExpectedVersion::any(), make_event());
      });
  t.store.append("cmd-1", ExpectedVersion::any(), make_event());
  CHECK(calls == 2);
  CHECK(t.store.stream_version("reaction-1") == 1);
}
