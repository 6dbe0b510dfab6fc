// Test helpers: a temporary directory removed at the end of the test, and event factories.
#pragma once

#include <factum/factum.hpp>
#include <filesystem>
#include <string>
#include <vector>

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

// A temp dir with a store file in it ("store.db"), opened with `options`.
struct TempStore {
  explicit TempStore(const StoreOptions& options = fast_options());
  TempDir dir;
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
