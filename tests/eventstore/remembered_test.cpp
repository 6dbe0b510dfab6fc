// The SQLite writer remembers each stream's key and version and the log's head between its
// commits (writer.hpp, Writer::Remembered). These cases change the log behind what it remembers
// (another store object, another process, write_sql on its own connection, failed appends) and
// check that the next append works from the log as it is: no false ConcurrencyError, no refused
// insert, no position or version written twice.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::TempStore;

namespace {

std::int64_t stream_rows(const EventStore& store) {
  std::optional<std::int64_t> rows;
  store.read_sql([&](Sql& sql) { rows = sql.query_integer("SELECT count(*) FROM streams"); });
  return rows.value_or(-1);
}

}  // namespace

TEST_CASE("a writer sees another store object's appends before its next append") {
  TempStore t;
  EventStore other = EventStore::open(t.path, TempStore::fast_options());
  CHECK(t.store.append("s", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 1, 1});
  // What t's writer remembers (s at version 1, the head at 1) goes stale here.
  CHECK(other.append("s", ExpectedVersion::exact(1), make_event()) == AppendResult{2, 2, 2});
  CHECK(other.append("u", ExpectedVersion::no_stream(), make_events(2)) == AppendResult{2, 3, 4});

  CHECK_THROWS_AS(t.store.append("s", ExpectedVersion::exact(1), make_event()), ConcurrencyError);
  CHECK(t.store.append("s", ExpectedVersion::exact(2), make_event()) == AppendResult{3, 5, 5});
  CHECK(t.store.append("u", ExpectedVersion::exact(2), make_event()) == AppendResult{3, 6, 6});
  CHECK(other.append("s", ExpectedVersion::exact(3), make_event()) == AppendResult{4, 7, 7});
  CHECK(t.store.append("s", ExpectedVersion::any(), make_event()) == AppendResult{5, 8, 8});

  CHECK(t.store.head_position() == 8);
  CHECK(stream_rows(t.store) == 2);
  CHECK(t.store.verify().ok());
}

TEST_CASE("a writer sees another process's appends before its next append") {
  TempStore t;
  CHECK(t.store.append("s", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 1, 1});
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int code = 0;
    try {
      EventStore mine = EventStore::open(t.path, TempStore::fast_options());
      mine.append("s", ExpectedVersion::exact(1), make_events(3));
      mine.append("v", ExpectedVersion::no_stream(), make_event());
    } catch (...) {
      code = 1;
    }
    _exit(code);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  CHECK(t.store.append("s", ExpectedVersion::exact(4), make_event()) == AppendResult{5, 6, 6});
  CHECK(t.store.append("v", ExpectedVersion::exact(1), make_event()) == AppendResult{2, 7, 7});
  CHECK(t.store.verify().ok());
}

TEST_CASE("after write_sql the writer reads the log again") {
  // write_sql runs on the writer's own connection, which no data version tells apart: a stream
  // row inserted there (as the insert guard allows) must be found, and the head it moves must be
  // read again, or the next append would be refused at a taken position.
  TempStore t;
  t.store.append("s", ExpectedVersion::no_stream(), make_event());
  t.store.write_sql([&](Sql& sql) {
    sql.execute("INSERT INTO streams (stream_id, category) VALUES ('w', 'w')");
    sql.execute(
        "INSERT INTO events (position, stream_key, stream_version, event_id, type, "
        "schema_version, payload, recorded_at, hash) SELECT 2, stream_key, 2, randomblob(16), "
        "'test.Raw', 1, x'00', 0, zeroblob(32) FROM streams WHERE stream_id = 's'");
  });
  REQUIRE(t.store.head_position() == 2);
  CHECK(t.store.append("s", ExpectedVersion::exact(2), make_event()) == AppendResult{3, 3, 3});
  CHECK(t.store.append("w", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 4, 4});
  CHECK(stream_rows(t.store) == 2);
}

TEST_CASE("after a failed append the same stream appends at its stored version") {
  TempStore t;
  t.store.append("s", ExpectedVersion::no_stream(), make_events(2));
  // Fails before writing (version), after creating a stream row (compensation of no event),
  // and in its first insert (an id stored in another stream).
  CHECK_THROWS_AS(t.store.append("s", ExpectedVersion::exact(5), make_event()), ConcurrencyError);
  EventData ghost = make_event();
  ghost.metadata.compensates = EventId::generate();
  CHECK_THROWS_AS(t.store.append("g", ExpectedVersion::no_stream(), ghost), InvalidArgument);
  const EventData stored = make_event();
  t.store.append("o", ExpectedVersion::no_stream(), stored);
  CHECK_THROWS_AS(t.store.append("n", ExpectedVersion::no_stream(), stored), DuplicateEventError);
  CHECK(stream_rows(t.store) == 2);  // neither g nor n was left behind

  CHECK(t.store.append("s", ExpectedVersion::exact(2), make_event()) == AppendResult{3, 4, 4});
  CHECK(t.store.append("n", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 5, 5});
  CHECK(t.store.verify().ok());
}

TEST_CASE("a retry right after its commit returns the first result, whatever it expected") {
  // With a matching expected version the writer does not look the ids up before inserting: the
  // refused first insert is what tells it a retry.
  TempStore t;
  const auto batch = make_events(3);
  const AppendResult first = t.store.append("s", ExpectedVersion::any(), batch);
  CHECK(t.store.append("s", ExpectedVersion::any(), batch) == first);
  CHECK(t.store.append("s", ExpectedVersion::no_stream(), batch) == first);
  CHECK(t.store.append("s", ExpectedVersion::exact(3), batch) == first);
  CHECK(t.store.append("s", ExpectedVersion::stream_exists(), batch) == first);
  CHECK(t.store.head_position() == 3);
  CHECK(t.store.append("s", ExpectedVersion::exact(3), make_event()) == AppendResult{4, 4, 4});
}
