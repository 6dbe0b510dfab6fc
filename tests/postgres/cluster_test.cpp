// The PostgreSQL test harness: the server that the fixture postgres_cluster_start started
// (scripts/pg-test-cluster.sh) answers, is PostgreSQL 15 or newer, and each pg_test_uri() is a
// schema of its own, empty, that unqualified names resolve to.
#include <doctest/doctest.h>
#include <libpq-fe.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "support/pg_test.hpp"

using factum::test::pg_test_uri;

namespace {

// A libpq connection for the checks below; every query must succeed.
class Connection {
 public:
  explicit Connection(const std::string& uri) : conn_(PQconnectdb(uri.c_str()), &PQfinish) {
    if (PQstatus(conn_.get()) != CONNECTION_OK)
      throw std::runtime_error("cannot connect to " + uri + ": " + PQerrorMessage(conn_.get()));
  }
  // Runs `sql`; returns the first column of its first row ("" when it returns no row).
  std::string query(const std::string& sql) {
    const std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn_.get(), sql.c_str()),
                                                          &PQclear);
    const ExecStatusType status = PQresultStatus(r.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
      throw std::runtime_error(sql + ": " + PQerrorMessage(conn_.get()));
    if (status != PGRES_TUPLES_OK || PQntuples(r.get()) == 0) return "";
    return PQgetvalue(r.get(), 0, 0);
  }

 private:
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

// The schema a pg_test_uri() names (what follows its "search_path%3D").
std::string schema_of(const std::string& uri) {
  const std::string marker = "search_path%3D";
  const auto at = uri.find(marker);
  REQUIRE(at != std::string::npos);
  return uri.substr(at + marker.size());
}

std::string objects_in(Connection& c, const std::string& schema) {
  return c.query(
      "SELECT count(*) FROM pg_class k JOIN pg_namespace n ON n.oid = k.relnamespace "
      "WHERE n.nspname = '" +
      schema + "'");
}

}  // namespace

TEST_CASE("the test server is PostgreSQL 15 or newer, reached over TCP on 127.0.0.1") {
  const std::string uri = pg_test_uri();
  MESSAGE("test URI: ", uri);
  CHECK(uri.starts_with("postgresql://factum@127.0.0.1:"));
  Connection c(uri);
  const std::string version = c.query("SHOW server_version_num");
  MESSAGE("server_version_num: ", version);
  CHECK(std::stoi(version) >= 150000);
  CHECK(c.query("SELECT current_user") == "factum");
  CHECK(c.query("SELECT host(inet_server_addr())") == "127.0.0.1");
  // The fast settings of the test server.
  CHECK(c.query("SHOW fsync") == "off");
  CHECK(std::stoi(c.query("SHOW max_connections")) >= 300);
}

TEST_CASE("two pg_test_uri() calls give two distinct, empty schemas") {
  const std::string first = pg_test_uri();
  const std::string second = pg_test_uri();
  const std::string a = schema_of(first);
  const std::string b = schema_of(second);
  CHECK(a != b);
  CHECK(a.starts_with("t_"));
  Connection c(first);
  for (const std::string& schema : {a, b}) {
    CAPTURE(schema);
    CHECK(c.query("SELECT count(*) FROM pg_namespace WHERE nspname = '" + schema + "'") == "1");
    CHECK(objects_in(c, schema) == "0");
  }
}

TEST_CASE("the URI's search_path option puts unqualified names in its schema") {
  const std::string uri = pg_test_uri();
  const std::string schema = schema_of(uri);
  Connection c(uri);
  CHECK(c.query("SELECT current_schema()") == schema);
  c.query("CREATE TABLE harness_probe (n integer)");
  c.query("INSERT INTO harness_probe VALUES (42)");
  CHECK(c.query("SELECT table_schema FROM information_schema.tables "
                "WHERE table_name = 'harness_probe'") == schema);
  CHECK(c.query("SELECT n FROM " + schema + ".harness_probe") == "42");
  // Another test's schema does not see it.
  Connection other(pg_test_uri());
  CHECK(other.query("SELECT to_regclass('harness_probe') IS NULL") == "t");
}

TEST_CASE("without the fixture's URI file, pg_test_uri() says how to run the test") {
  const char* saved = std::getenv("FACTUM_TEST_PG_URI_FILE");
  REQUIRE(saved != nullptr);
  const std::string file = saved;
  ::unsetenv("FACTUM_TEST_PG_URI_FILE");
  std::string unset_message;
  try {
    pg_test_uri();
  } catch (const std::runtime_error& e) {
    unset_message = e.what();
  }
  ::setenv("FACTUM_TEST_PG_URI_FILE", (file + ".missing").c_str(), 1);
  std::string missing_message;
  try {
    pg_test_uri();
  } catch (const std::runtime_error& e) {
    missing_message = e.what();
  }
  ::setenv("FACTUM_TEST_PG_URI_FILE", file.c_str(), 1);
  for (const std::string& message : {unset_message, missing_message}) {
    CAPTURE(message);
    CHECK(message.find("FACTUM_TEST_PG_URI_FILE") != std::string::npos);
    CHECK(message.find("ctest -L postgres") != std::string::npos);
  }
}
