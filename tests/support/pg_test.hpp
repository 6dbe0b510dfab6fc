// The PostgreSQL test server, for the tests built with factum_add_postgres_test (label
// "postgres"): ctest's fixture postgres_cluster_start starts a private server
// (scripts/pg-test-cluster.sh) and names the file holding its URI in FACTUM_TEST_PG_URI_FILE.
// Compiled into factum_test_support when factum has its PostgreSQL backend (libpq).
#pragma once

#include <chrono>
#include <string>

namespace factum::test {

// The test server's URI as the fixture wrote it: postgresql://factum@127.0.0.1:PORT/postgres.
// Throws std::runtime_error, naming FACTUM_TEST_PG_URI_FILE and `ctest -L postgres`, when the
// variable is unset or its file cannot be read (the server is not started).
std::string pg_server_uri();

// A fresh, empty schema on the test server (t_<pid>_<counter>_<random>), created now, and the
// server's URI with "?options=-csearch_path%3D<schema>" appended: a store opened on it (or any
// connection made with it) creates its tables in that schema, apart from every other test's.
// Thread-safe. Throws std::runtime_error as pg_server_uri() does, or with libpq's message when
// the server cannot be reached or refuses the schema. The schemas go with the server.
std::string pg_test_uri();

// `uri` (a URI of the test server) with application_name=`name` added: every session of a store
// opened on it carries that name, so the test can find them (pg_await_sessions_gone). `name` is
// [A-Za-z0-9_] only, at most 63 characters.
std::string pg_with_application_name(const std::string& uri, const std::string& name);

// Runs `sql` (statements without parameters) on a connection of its own to `uri` (a store's
// URI: pg_test_uri's search path included), outside any store: a change behind the library's
// back that no factum counter sees. Throws std::runtime_error with the server's message.
void pg_execute(const std::string& uri, const std::string& sql);

// Waits until the test server has no session whose application_name is `name` (true), or
// `deadline` passes (false). The sessions of a client killed with SIGKILL outlive it until the
// server notices the closed connection, and one may be committing meanwhile: once they are gone,
// what they did is committed or rolled back for good. Throws std::runtime_error as pg_test_uri()
// does.
bool pg_await_sessions_gone(const std::string& name,
                            std::chrono::steady_clock::time_point deadline);

}  // namespace factum::test
