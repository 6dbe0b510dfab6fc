#include "support/pg_test.hpp"

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace factum::test {

namespace {

constexpr const char* kUriFileVariable = "FACTUM_TEST_PG_URI_FILE";

struct ConnectionCloser {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct ResultClearer {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};

std::string without_trailing_newline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

using Connection = std::unique_ptr<PGconn, ConnectionCloser>;
using Result = std::unique_ptr<PGresult, ResultClearer>;

// A connection to `server` (the test server's URI), or std::runtime_error.
Connection connect(const std::string& server) {
  const char* const keys[] = {"dbname", "connect_timeout", nullptr};
  const char* const values[] = {server.c_str(), "10", nullptr};
  Connection conn(PQconnectdbParams(keys, values, 1));
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK) {
    throw std::runtime_error("factum tests: cannot connect to the PostgreSQL test server " +
                             server + ": " + (conn ? PQerrorMessage(conn.get()) : "out of memory"));
  }
  return conn;
}

}  // namespace

std::string pg_server_uri() {
  const char* file = std::getenv(kUriFileVariable);
  if (file == nullptr || *file == '\0') {
    throw std::runtime_error(
        std::string("factum tests: ") + kUriFileVariable +
        " is not set: this PostgreSQL test needs the private server that ctest starts first "
        "(fixture postgres_cluster_start); run it with `ctest -L postgres`");
  }
  std::ifstream in(file);
  std::string uri;
  if (!in || !std::getline(in, uri) || without_trailing_newline(uri).empty()) {
    throw std::runtime_error(std::string("factum tests: cannot read the PostgreSQL test server's "
                                         "URI from '") +
                             file + "' (" + kUriFileVariable +
                             "): the server is not started; run the test with `ctest -L "
                             "postgres`, whose fixture postgres_cluster_start starts it");
  }
  return without_trailing_newline(uri);
}

std::string pg_test_uri() {
  const std::string server = pg_server_uri();
  static std::atomic<unsigned> counter{0};
  std::ostringstream schema;
  schema << "t_" << ::getpid() << '_' << counter++ << '_' << std::hex << std::random_device{}();

  pg_execute(server, "CREATE SCHEMA " + schema.str());  // [a-z0-9_] only: no quoting needed
  return server + (server.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" +
         schema.str();
}

void pg_execute(const std::string& uri, const std::string& sql) {
  const Connection conn = connect(uri);
  const Result result(PQexec(conn.get(), sql.c_str()));
  const auto status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    throw std::runtime_error("factum tests: '" + sql + "' failed on " + uri + ": " +
                             PQerrorMessage(conn.get()));
  }
}

std::string pg_with_application_name(const std::string& uri, const std::string& name) {
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + "application_name=" + name;
}

bool pg_await_sessions_gone(const std::string& name,
                            std::chrono::steady_clock::time_point deadline) {
  const std::string server = pg_server_uri();
  const Connection conn = connect(server);
  const char* const params[] = {name.c_str()};
  for (;;) {
    // Each poll is a transaction of its own: pg_stat_activity is read afresh.
    const Result r(PQexecParams(conn.get(),
                                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                                1, nullptr, params, nullptr, nullptr, 0));
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQntuples(r.get()) != 1) {
      throw std::runtime_error("factum tests: cannot read pg_stat_activity on " + server + ": " +
                               PQerrorMessage(conn.get()));
    }
    if (std::string(PQgetvalue(r.get(), 0, 0)) == "0") return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace factum::test
