// Test helpers: a temporary directory removed at the end of the test, and event factories.
#pragma once

#include <factum/factum.hpp>
#include <filesystem>
#include <string>
#include <vector>

#ifdef FACTUM_TEST_HAVE_POSTGRES
#include "support/pg_test.hpp"
#endif

namespace factum::test {

// A fresh directory under the system temp dir; removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }
  std::filesystem::path file(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Whether this test runs on the PostgreSQL backend: its case was registered for PostgreSQL
// (factum_add_test's POSTGRES, factum_add_postgres_test), which ctest says by running it with
// FACTUM_TEST_BACKEND=postgres. Throws std::runtime_error for any other value but "sqlite" or
// empty, and for "postgres" in a build without the backend.
bool testing_postgres();

// Where a TempStore's store is: the file "store.db" in `dir`; when testing_postgres(), a fresh
// schema of the PostgreSQL test server, as a URI (pg_test.hpp).
std::filesystem::path temp_store_location(const TempDir& dir);

// A temp dir and a fresh store (temp_store_location), opened with `options`.
struct TempStore {
  explicit TempStore(const StoreOptions& options = fast_options())
      : path(temp_store_location(dir)), store(EventStore::open(path, options)) {}
  TempDir dir;
  // The store's file, or its PostgreSQL URI: EventStore::open(path) opens the same store again.
  std::filesystem::path path;
  EventStore store;
  // Durability::normal: tests do not need fsync and run much faster without it.
  static StoreOptions fast_options();
  // Durability::full (an fsync per commit): for tests of what a failed fsync does.
  static StoreOptions durable_options();
};

// An event of `type` whose payload is `payload`.
EventData make_event(const std::string& type = "test.Happened", const std::string& payload = "x");
// `n` events "test.Happened" with payloads "0", "1", ...
std::vector<EventData> make_events(std::size_t n, const std::string& prefix = "");

}  // namespace factum::test
