// Reads never load the log whole: reading a million events takes flat memory.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::TempStore;

namespace {

// Resident set size of this process in KiB (VmRSS), or its peak (VmHWM).
std::int64_t status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux: "5" > /proc/self/clear_refs).
bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

TEST_CASE("reading a million events keeps peak memory flat") {
  constexpr std::size_t kEvents = 1'000'000;
  constexpr std::size_t kBatch = 2'000;
  TempStore t;
  std::vector<EventData> batch(kBatch);
  for (std::size_t done = 0; done < kEvents; done += kBatch) {
    for (auto& e : batch) {
      e.id = EventId::generate();
      e.type = "test.Small";
      e.payload = to_bytes("0123456789abcdef");
    }
    t.store.append("s-" + std::to_string(done / 100'000), ExpectedVersion::any(), batch);
  }
  batch.clear();
  batch.shrink_to_fit();
  REQUIRE(t.store.head_position() == kEvents);

  REQUIRE(reset_peak());
  const std::int64_t before = status_kib("VmRSS");
  std::size_t count = 0;
  Position last = 0;
  std::int64_t sampled_peak = before;
  for (const RecordedEvent& e : t.store.read_all()) {
    REQUIRE(e.position == last + 1);
    last = e.position;
    if (++count % 100'000 == 0) sampled_peak = std::max(sampled_peak, status_kib("VmRSS"));
  }
  const std::int64_t peak = std::max(status_kib("VmHWM"), sampled_peak);
  CHECK(count == kEvents);
  MESSAGE("RSS before reading: " << before << " KiB, peak while reading: " << peak << " KiB");
  CHECK(peak - before < 64 * 1024);
}
