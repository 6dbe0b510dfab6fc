// EventStore::open(const PostgresOptions&): the explicit form of a PostgreSQL location. The
// options name the test server (host, port, user and database parsed from its URI) and a schema
// of their own; the stores they open behave as those opened by URI, every connection in the
// named schema, and the fields they refuse are refused before anything connects.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "support/pg_test.hpp"
#include "support/silent_server.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_events;
using factum::test::pg_test_uri;

namespace {

constexpr const char* kSecret = "s3cret-Pa55word";

// The test server (postgresql://USER@HOST:PORT/DBNAME) as PostgresOptions, without a schema.
PostgresOptions server_options() {
  const std::string uri = factum::test::pg_server_uri();
  const auto authority = uri.find("://") + 3;
  const auto at = uri.find('@', authority);
  const auto colon = uri.find(':', at);
  const auto slash = uri.find('/', colon);
  const auto query = uri.find('?', slash);
  PostgresOptions o;
  o.user = uri.substr(authority, at - authority);
  o.host = uri.substr(at + 1, colon - at - 1);
  o.port = std::stoi(uri.substr(colon + 1, slash - colon - 1));
  o.dbname = uri.substr(slash + 1, query == std::string::npos ? query : query - slash - 1);
  return o;
}

// A fresh, empty schema on the test server (pg_test_uri() creates it).
std::string fresh_schema() {
  const std::string uri = pg_test_uri();
  return uri.substr(uri.rfind("%3D") + 3);
}

// The test server as options, with a fresh schema of its own.
PostgresOptions fresh_store_options() {
  PostgresOptions o = server_options();
  o.schema = fresh_schema();
  return o;
}

// The first column of the first row `sql` returns, as an integer, read through `store`.
std::int64_t query_int(const EventStore& store, const std::string& sql, const SqlValue& value) {
  std::int64_t out = -1;
  store.read_sql(
      [&](Sql& s) { s.query(sql, {value}, [&](const SqlRow& r) { out = r.integer(0); }); });
  return out;
}

std::string show(const EventStore& store, const std::string& setting) {
  std::string out;
  store.read_sql(
      [&](Sql& s) { s.query("SHOW " + setting, {}, [&](const SqlRow& r) { out = r.text(0); }); });
  return out;
}

// The message of the InvalidArgument that opening `o` throws ("" when it throws none).
std::string refusal(const PostgresOptions& o) {
  try {
    EventStore::open(o);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("postgres: a store opened by PostgresOptions appends and reads back") {
  const PostgresOptions where = fresh_store_options();
  {
    EventStore store = EventStore::open(where);
    const AppendResult r = store.append("account-1", ExpectedVersion::no_stream(), make_events(3));
    CHECK(r.last_position == 3);
    CHECK(store.read_stream("account-1").to_vector().size() == 3);
    CHECK(store.verify().ok());
  }
  // Opened again: the same log.
  EventStore again = EventStore::open(where);
  CHECK(again.head_position() == 3);
  again.append("account-1", ExpectedVersion::exact(3), make_events(1));
  CHECK(again.stream_version("account-1") == 4);
}

TEST_CASE("postgres: PostgresOptions::schema puts the tables in that schema, as a URI does") {
  const std::string uri = pg_test_uri();
  PostgresOptions where = server_options();
  where.schema = uri.substr(uri.rfind("%3D") + 3);
  EventStore store = EventStore::open(where);
  store.append("s-1", ExpectedVersion::any(), make_events(2));
  CHECK(query_int(store,
                  "SELECT count(*) FROM information_schema.tables WHERE table_schema = ?1 AND "
                  "table_name IN ('factum_store', 'streams', 'events')",
                  where.schema) == 3);
  CHECK(show(store, "search_path") == where.schema);
  // The URI naming the same schema opens the same store.
  EventStore by_uri = EventStore::open(uri);
  CHECK(by_uri.head() == store.head());
}

TEST_CASE("postgres: two stores in two schemas of one database are independent") {
  EventStore a = EventStore::open(fresh_store_options());
  EventStore b = EventStore::open(fresh_store_options());
  a.append("s-1", ExpectedVersion::no_stream(), make_events(2));
  b.append("s-1", ExpectedVersion::no_stream(), make_events(5));
  b.append("t-1", ExpectedVersion::no_stream(), make_events(1));
  CHECK(a.head_position() == 2);
  CHECK(a.stream_version("s-1") == 2);
  CHECK(a.stream_version("t-1") == 0);
  CHECK(b.head_position() == 6);
  CHECK(b.stream_version("s-1") == 5);
  CHECK(a.head() != b.head());
  CHECK(a.verify().ok());
  CHECK(b.verify().ok());
}

TEST_CASE("postgres: a PostgresOptions schema that does not exist is refused, not created") {
  PostgresOptions where = server_options();
  where.schema = "factum_no_such_schema";
  try {
    EventStore::open(where);
    FAIL("opened a store in a schema that does not exist");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::not_a_store);
  }
  EventStore other = EventStore::open(fresh_store_options());
  CHECK(query_int(other, "SELECT count(*) FROM pg_namespace WHERE nspname = ?1", where.schema) ==
        0);
}

TEST_CASE("postgres: every connection of a PostgresOptions store uses its schema and options") {
  PostgresOptions where = fresh_store_options();
  where.application_name = "factum_options_" + where.schema.substr(2);
  // The schema's search_path wins over the caller's.
  where.parameters["options"] = "-c statement_timeout=7000 -c search_path=public";
  where.connect_timeout = std::chrono::seconds(10);
  EventStore store = EventStore::open(where);
  store.append("s-1", ExpectedVersion::any(), make_events(1));  // the writer
  auto watcher = store.watch();                                 // a watcher
  CHECK_FALSE(watcher->changed());
  store.append("s-1", ExpectedVersion::any(), make_events(1));
  CHECK(watcher->changed());  // it reads the commit counter of this schema's store
  CHECK(show(store, "search_path") == where.schema);
  CHECK(show(store, "statement_timeout") == "7s");
  // The reader, the writer and the watcher: three sessions under the store's name.
  CHECK(query_int(store, "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?1",
                  where.application_name) == 3);
}

TEST_CASE("postgres: a refused connection is a StorageError whose message holds no password") {
  PostgresOptions where = fresh_store_options();
  where.password = kSecret;
  SUBCASE("an unknown role") { where.user = "factum_no_such_role"; }
  SUBCASE("a port where no server listens") {
    where.host = "127.0.0.1";
    where.port = 1;
  }
  try {
    EventStore::open(where);
    FAIL("connected with a wrong user or port");
  } catch (const StorageError& e) {
    const std::string message = e.what();
    CHECK(e.kind() == StorageError::Kind::io);
    CHECK(message.find(kSecret) == std::string::npos);
    CHECK(message.find("password=***") != std::string::npos);
  }
}

TEST_CASE(
    "postgres: PostgresOptions without connect_timeout fail open in time on a silent server") {
  // connect_timeout 0: factum's default (10 s) ends the wait, and the message names the host.
  factum::test::SilentServer server;
  PostgresOptions where;
  where.host = "127.0.0.1";
  where.port = server.port();
  where.user = "factum";
  where.dbname = "postgres";
  const std::string message =
      factum::test::error_connecting(server, [&] { EventStore::open(where); });
  CHECK(message.find("timeout expired") != std::string::npos);
  CHECK(message.find("host=127.0.0.1 port=" + std::to_string(server.port())) != std::string::npos);
  CHECK(message.find("[io]") != std::string::npos);
}

TEST_CASE("postgres: path() of a PostgresOptions store names it without the password") {
  PostgresOptions where = fresh_store_options();
  where.password = kSecret;  // the test server trusts its clients: any password is accepted
  where.parameters["sslpassword"] = kSecret;
  const EventStore store = EventStore::open(where);
  const std::string path = store.path().string();
  CHECK(path.find(kSecret) == std::string::npos);
  CHECK(path.find("dbname=" + where.dbname) != std::string::npos);
  CHECK(path.find("options='-c search_path=" + where.schema + "'") != std::string::npos);
}

namespace {

// A field set to a value open() refuses, and the field the refusal must name.
struct Refused {
  const char* what;
  void (*set)(PostgresOptions&);
  const char* field;
};

constexpr Refused kRefused[] = {
    {"port 0", [](PostgresOptions& o) { o.port = 0; }, "port"},
    {"port past 65535", [](PostgresOptions& o) { o.port = 65536; }, "port"},
    {"negative timeout", [](PostgresOptions& o) { o.connect_timeout = std::chrono::seconds(-1); },
     "connect_timeout"},
    {"unknown sslmode", [](PostgresOptions& o) { o.sslmode = "always"; }, "sslmode"},
    {"capitals", [](PostgresOptions& o) { o.schema = "Bank"; }, "schema"},
    {"leading digit", [](PostgresOptions& o) { o.schema = "1bank"; }, "schema"},
    {"space and quote", [](PostgresOptions& o) { o.schema = "bank\" cascade"; }, "schema"},
    {"PostgreSQL's own", [](PostgresOptions& o) { o.schema = "pg_catalog"; }, "schema"},
    {"64 characters", [](PostgresOptions& o) { o.schema = std::string(64, 'a'); }, "schema"},
    {"NUL in password", [](PostgresOptions& o) { o.password += '\0'; }, "password"},
    {"a field's keyword", [](PostgresOptions& o) { o.parameters["password"] = kSecret; },
     "parameters"},
    {"unknown keyword", [](PostgresOptions& o) { o.parameters["no_such_keyword"] = "1"; },
     "parameters"},
    {"empty keyword", [](PostgresOptions& o) { o.parameters[""] = "1"; }, "parameters"},
};

}  // namespace

TEST_CASE("postgres: PostgresOptions fields are refused before connecting, naming the field") {
  // Every other field names the running test server: only the refusal stops the open.
  PostgresOptions server = fresh_store_options();
  server.password = kSecret;
  for (const Refused& r : kRefused) {
    CAPTURE(r.what);
    PostgresOptions where = server;
    r.set(where);
    const std::string message = refusal(where);
    CHECK(message.find(std::string("PostgresOptions::") + r.field) != std::string::npos);
    CHECK(message.find(kSecret) == std::string::npos);
  }
}

TEST_CASE("postgres: a schema of a-z, 0-9, _ and $ up to 63 characters is accepted") {
  PostgresOptions where = server_options();
  where.schema = "_x$9" + std::string(59, 'z');
  try {
    EventStore::open(where);
    FAIL("opened a store in a schema that does not exist");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::not_a_store);  // accepted, then not found
  }
}
