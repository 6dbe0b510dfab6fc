#include "support/temp_dir.hpp"

#include <unistd.h>
#include <atomic>
#include <cstdlib>
#include <random>
#include <stdexcept>

namespace factum::test {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() /
          ("factum-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
           std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool testing_postgres() {
  static const bool postgres = [] {
    const char* value = std::getenv("FACTUM_TEST_BACKEND");
    const std::string backend = value == nullptr ? "" : value;
    if (backend.empty() || backend == "sqlite") return false;
    if (backend != "postgres") {
      throw std::runtime_error("FACTUM_TEST_BACKEND is \"" + backend +
                               "\": expected \"sqlite\" or \"postgres\"");
    }
#ifndef FACTUM_TEST_HAVE_POSTGRES
    throw std::runtime_error(
        "FACTUM_TEST_BACKEND=postgres, but these tests were built without the PostgreSQL backend");
#endif
    return true;
  }();
  return postgres;
}

std::filesystem::path temp_store_location(const TempDir& dir) {
#ifdef FACTUM_TEST_HAVE_POSTGRES
  if (testing_postgres()) return pg_test_uri();
#else
  (void)testing_postgres();  // refuses FACTUM_TEST_BACKEND=postgres
#endif
  return dir.file("store.db");
}

StoreOptions TempStore::fast_options() {
  StoreOptions o;
  o.durability = Durability::normal;
  return o;
}

StoreOptions TempStore::durable_options() {
  StoreOptions o;
  o.durability = Durability::full;
  return o;
}

EventData make_event(const std::string& type, const std::string& payload) {
  EventData e;
  e.type = type;
  e.payload = to_bytes(payload);
  return e;
}

std::vector<EventData> make_events(std::size_t n, const std::string& prefix) {
  std::vector<EventData> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    out.push_back(make_event("test.Happened", prefix + std::to_string(i)));
  return out;
}

}  // namespace factum::test
