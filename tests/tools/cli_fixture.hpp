// The store the command-line tests run against: three streams, eight events with known ids,
// causation and correlation links and one compensation, built with the EventStore API.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "support/child_process.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

namespace factum::test {

using Json = nlohmann::json;

inline EventId id(int n) {
  char text[40];
  std::snprintf(text, sizeof text, "0190f5a2-7c3e-7a11-8b22-%012d", n);
  return EventId::parse(text);
}
inline std::string sid(int n) { return id(n).to_string(); }

// Ids: 1 opens account-1, 2 deposits (caused by 1), 3 deposits; 4 opens account-2, 5 withdraws
// from it (caused by 2); 6 places order-7, 7 charges it (caused by 6), 8 reverses 7
// (compensates 7). 6, 7 and 8 share correlation id 100; 2 and 5 carry correlation id 1.
struct SampleStore {
  TempDir dir;
  std::filesystem::path path = dir.file("sample.db");
  Head head;

  SampleStore() {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    auto event = [](int n, const std::string& type, const std::string& payload) {
      EventData e;
      e.id = id(n);
      e.type = type;
      e.payload = to_bytes(payload);
      e.metadata.actor = "teller-7";
      return e;
    };
    EventData opened = event(1, "bank.AccountOpened", R"({"owner":"Ada"})");
    opened.metadata.values = {{"channel", "web"}, {"ip", "10.0.0.1"}};
    EventData deposit = event(2, "bank.MoneyDeposited", R"({"cents":500})");
    deposit.metadata.causation_id = id(1);
    deposit.metadata.correlation_id = id(1);
    store.append("account-1", ExpectedVersion::no_stream(),
                 std::vector<EventData>{opened, deposit,
                                        event(3, "bank.MoneyDeposited", R"({"cents":70})")});
    EventData withdrawn = event(5, "bank.MoneyWithdrawn", R"({"cents":20})");
    withdrawn.metadata.causation_id = id(2);
    withdrawn.metadata.correlation_id = id(1);
    store.append(
        "account-2", ExpectedVersion::no_stream(),
        std::vector<EventData>{event(4, "bank.AccountOpened", R"({"owner":"Bob"})"), withdrawn});
    EventData placed = event(6, "shop.OrderPlaced", R"({"sku":"mug"})");
    placed.metadata.correlation_id = id(100);
    EventData charged = event(7, "shop.CardCharged", std::string("\x01\x02\x03", 3));
    charged.metadata.correlation_id = id(100);
    charged.metadata.causation_id = id(6);
    EventData reversed = event(8, "shop.ChargeReversed", "");
    reversed.metadata.correlation_id = id(100);
    reversed.metadata.compensates = id(7);
    store.append("order-7", ExpectedVersion::no_stream(),
                 std::vector<EventData>{placed, charged, reversed});
    head = store.head();
  }
  std::string file() const { return path.string(); }
  // Raw SQL behind factum's back (the triggers dropped first).
  void tamper(const std::string& sql) const { raw_exec(path, std::string(kDropTriggers) + sql); }
};

inline std::string file_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

// Every event of the store at `file`, opened read-only.
inline std::vector<RecordedEvent> all_events(const std::filesystem::path& file) {
  StoreOptions options;
  options.read_only = true;
  return EventStore::open(file, options).read_all().to_vector();
}

// The names of the files of `dir` that start with `prefix`.
inline std::vector<std::string> files_starting(const std::filesystem::path& dir,
                                               const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  return out;
}

// Lines as text, each ended by a newline.
inline std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

// Waits until the child has printed something (a tail printing its history is then past reading
// the head: what is appended now is new to it).
inline void wait_for_output(const CliProcess& p) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (p.out_so_far().empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// One line on stderr, starting "factum: ".
inline bool one_line_error(const CliResult& r) {
  return r.err.rfind("factum: ", 0) == 0 && lines_of(r.err).size() == 1;
}

// Options for a run whose peak memory a test measures (CliResult::peak_rss_kib). ASan keeps freed
// memory in quarantine (256 MiB by default), which would look like growth: the programs measured
// run with a small one. Without ASan the variable is ignored.
inline CliOptions measured() {
  CliOptions o;
  o.sample_memory = true;
  o.deadline = std::chrono::minutes(5);
  const char* asan = std::getenv("ASAN_OPTIONS");
  o.env.push_back(std::string("ASAN_OPTIONS=") + (asan ? std::string(asan) + ":" : "") +
                  "quarantine_size_mb=1:thread_local_quarantine_size_kb=64");
  return o;
}

}  // namespace factum::test
