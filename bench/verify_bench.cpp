// bench/verify_bench.cpp — EventStore::verify (and `factum verify`) over a 1,000,000-event
// log, against the raw ceiling measured in the same run.
//
// Builds a log of --events events (1,000,000) once, in a temporary file (or reuses --store
// FILE): 10,000 streams (`account-0` ...), a --payload-byte payload (64), a correlation id,
// an actor and one metadata key/value per event, appended with append_multi in large batches
// under Durability::normal (setup speed; the time is printed). Then, alternating, --repeat
// times each (the best run of each side counts):
//   - factum: EventStore::open(read_only) + verify() of the whole chain;
//   - raw:    the ceiling — plain sqlite3 on the same file, one `SELECT <the hashed columns>
//             ... JOIN streams ORDER BY position` scan, the hash input of
//             docs/storage-format.md laid out in one reused buffer per row, and one SHA-256
//             (OpenSSL EVP, a reused context) compared with the stored hash: the same bytes
//             read and hashed, with nothing copied into objects and no checks beyond the
//             chain itself;
//   - cli:    `factum verify FILE` run as a child process (process start and open included),
//             when the bench was built with the tools (FACTUM_CLI is defined) or --cli names
//             the binary; with --export, `factum export FILE` (JSON Lines to /dev/null) once,
//             for information (export checks each hash link and writes base64 JSON).
// Target: factum's verify at least 500,000 events/s (and its ratio against the raw ceiling
// is printed).
//
//   verify_bench [--events N] [--repeat N] [--payload BYTES] [--store FILE] [--dir DIR]
//                [--cli PATH | --no-cli] [--export] [--json] [--strict]
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "factum/factum.hpp"
#include "support.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using bench::cpu_seconds;
using bench::seconds_since;
using bench::TempDir;

constexpr double kTargetEventsPerSecond = 500'000;
constexpr std::size_t kStreams = 10'000;
constexpr std::size_t kEventsPerCall = 2'000;

struct Config {
  std::uint64_t events = 1'000'000;
  int repeat = 3;
  std::size_t payload = 64;
  fs::path store;  // reuse this file (built when missing) instead of a temporary one
  fs::path dir;
  std::string cli;
  bool export_too = false;
  bool json = false;
  bool strict = false;
};

Config parse(int argc, char** argv) {
  Config c;
#ifdef FACTUM_CLI
  c.cli = FACTUM_CLI;
#endif
  std::string store;
  std::string dir;
  std::uint64_t repeat = static_cast<std::uint64_t>(c.repeat);
  bool no_cli = false;
  CLI::App app("measures EventStore::verify against a raw sqlite3 scan + SHA-256", "verify_bench");
  bench::cli_defaults(app);
  bench::add_positive(app, "--events", c.events, "events in the log (default 1000000)");
  bench::add_positive(app, "--repeat", repeat,
                      "timed runs per side, best counts (default 3; at most 100)");
  bench::add_positive(app, "--payload", c.payload, "payload size of each event (default 64)",
                      "BYTES");
  app.add_option("--store", store, "use this store (built there when missing, kept afterwards)")
      ->type_name("FILE");
  app.add_option("--dir", dir, "where the temporary store goes (default $TMPDIR or /tmp)")
      ->type_name("DIR");
  CLI::Option* cli = app.add_option("--cli", c.cli,
                                    "time `PATH verify FILE` too (default: the factum built with "
                                    "the bench, when the tools are built); --no-cli skips it")
                         ->type_name("PATH");
  app.add_flag("--no-cli", no_cli, "do not time `factum verify` (see --cli)")->excludes(cli);
  app.add_flag("--export", c.export_too, "also time `factum export FILE` (to /dev/null) once");
  app.add_flag("--json", c.json, "print the results as JSON");
  app.add_flag("--strict", c.strict, "exit with status 1 when the target is missed");
  bench::parse_or_exit(app, argc, argv);
  c.repeat = static_cast<int>(std::min<std::uint64_t>(repeat, 100));
  if (no_cli) c.cli.clear();
  c.store = store;
  c.dir = dir.empty() ? fs::temp_directory_path() : fs::path(dir);
  return c;
}

// ---------------------------------------------------------------------------------------------
// The log

void build_log(const Config& c, const fs::path& file) {
  factum::StoreOptions options;
  options.durability = factum::Durability::normal;
  factum::EventStore store = factum::EventStore::open(file, options);
  if (store.head_position() >= c.events) return;
  std::vector<std::string> streams;
  for (std::size_t i = 0; i < kStreams; ++i) streams.push_back("account-" + std::to_string(i));
  const factum::Bytes payload(c.payload, std::byte{0x5a});
  const factum::EventId correlation = factum::EventId::generate();
  std::uint64_t written = store.head_position();
  std::size_t next = 0;
  std::vector<factum::StreamAppend> appends;
  while (written < c.events) {
    appends.clear();
    for (std::size_t n = 0; n < kEventsPerCall && written < c.events; n += 4) {
      factum::StreamAppend& a = appends.emplace_back();
      a.stream = streams[next++ % streams.size()];
      for (int k = 0; k < 4 && written < c.events; ++k, ++written) {
        factum::EventData& e = a.events.emplace_back();
        e.type = "bank.MoneyDeposited";
        e.payload = payload;
        e.metadata.correlation_id = correlation;
        e.metadata.actor = "teller-7";
        e.metadata.values = {{"channel", "web"}};
      }
    }
    store.append_multi(appends);
  }
}

// ---------------------------------------------------------------------------------------------
// The sides

// One timed run: wall-clock and CPU seconds (the CPU figure stays meaningful on a loaded
// machine, where the wall clock mostly measures waiting for a core).
struct Run {
  double seconds = 0;
  double cpu = 0;
  std::uint64_t events = 0;
  double rate() const { return seconds > 0 ? static_cast<double>(events) / seconds : 0; }
  double cpu_rate() const { return cpu > 0 ? static_cast<double>(events) / cpu : 0; }
};

Run run_factum(const fs::path& file) {
  const auto start = Clock::now();
  const double cpu = cpu_seconds();
  factum::StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  const factum::EventStore store = factum::EventStore::open(file, options);
  const factum::VerifyResult r = store.verify();
  const double seconds = seconds_since(start);
  if (!r.ok()) throw std::runtime_error("factum verify failed: " + r.message);
  return {seconds, cpu_seconds() - cpu, r.events_checked};
}

// The raw ceiling's hash input, built in one reused buffer (docs/storage-format.md).
class RawChain {
 public:
  RawChain() : ctx_(EVP_MD_CTX_new()), md_(EVP_MD_fetch(nullptr, "SHA256", nullptr)) {
    if (ctx_ == nullptr || md_ == nullptr) throw std::runtime_error("no SHA-256");
  }
  ~RawChain() {
    EVP_MD_CTX_free(ctx_);
    EVP_MD_free(md_);
  }
  RawChain(const RawChain&) = delete;
  RawChain& operator=(const RawChain&) = delete;

  // Checks the current row of `s`; false when its hash does not follow.
  bool check(sqlite3_stmt* s) {
    buf_.clear();
    put(previous_, 32);
    u64(static_cast<std::uint64_t>(sqlite3_column_int64(s, 0)));
    text(s, 1);
    u64(static_cast<std::uint64_t>(sqlite3_column_int64(s, 2)));
    put(sqlite3_column_blob(s, 3), 16);
    text(s, 4);
    u32(static_cast<std::uint32_t>(sqlite3_column_int64(s, 5)));
    text(s, 6);
    for (int col = 7; col <= 9; ++col) optional_id(s, col);
    text(s, 10);
    if (sqlite3_column_type(s, 11) == SQLITE_NULL) {
      u32(0);
    } else {
      put(sqlite3_column_blob(s, 11), static_cast<std::size_t>(sqlite3_column_bytes(s, 11)));
    }
    u64(static_cast<std::uint64_t>(sqlite3_column_int64(s, 12)));
    unsigned char out[32];
    unsigned int size = 0;
    if (EVP_DigestInit_ex(ctx_, md_, nullptr) != 1 ||
        EVP_DigestUpdate(ctx_, buf_.data(), buf_.size()) != 1 ||
        EVP_DigestFinal_ex(ctx_, out, &size) != 1) {
      throw std::runtime_error("SHA-256 failed");
    }
    const void* stored = sqlite3_column_blob(s, 13);
    if (sqlite3_column_bytes(s, 13) != 32 || std::memcmp(stored, out, 32) != 0) return false;
    std::memcpy(previous_, out, 32);
    return true;
  }

 private:
  void put(const void* p, std::size_t n) { buf_.append(static_cast<const char*>(p), n); }
  void u32(std::uint32_t v) {
    char b[4];
    for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (24 - 8 * i));
    put(b, 4);
  }
  void u64(std::uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (56 - 8 * i));
    put(b, 8);
  }
  void text(sqlite3_stmt* s, int col) {
    const void* p = sqlite3_column_blob(s, col);
    const auto n = static_cast<std::size_t>(sqlite3_column_bytes(s, col));
    u32(static_cast<std::uint32_t>(n));
    if (n > 0) put(p, n);
  }
  void optional_id(sqlite3_stmt* s, int col) {
    if (sqlite3_column_type(s, col) == SQLITE_NULL) {
      put("\0", 1);
    } else {
      put("\1", 1);
      put(sqlite3_column_blob(s, col), 16);
    }
  }
  EVP_MD_CTX* ctx_;
  EVP_MD* md_;
  std::string buf_;
  unsigned char previous_[32] = {};
};

Run run_raw(const fs::path& file) {
  const auto start = Clock::now();
  const double cpu = cpu_seconds();
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close_v2(db);
    throw std::runtime_error("raw: cannot open " + file.string());
  }
  sqlite3_stmt* s = nullptr;
  const char* sql =
      "SELECT e.position, s.stream_id, e.stream_version, e.event_id, e.type, e.schema_version, "
      "e.payload, e.correlation_id, e.causation_id, e.compensates, e.actor, e.extra, "
      "e.recorded_at, e.hash FROM events e JOIN streams s ON s.stream_key = e.stream_key "
      "ORDER BY e.position";
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) {
    sqlite3_close_v2(db);
    throw std::runtime_error("raw: cannot prepare the scan");
  }
  RawChain chain;
  std::uint64_t events = 0;
  int rc = SQLITE_ROW;
  bool ok = true;
  while (ok && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    ok = chain.check(s);
    ++events;
  }
  sqlite3_finalize(s);
  sqlite3_close_v2(db);
  if (!ok || rc != SQLITE_DONE) throw std::runtime_error("raw: the chain does not verify");
  return {seconds_since(start), cpu_seconds() - cpu, events};
}

// `cli COMMAND FILE` (verify or export), its stdout to /dev/null.
Run run_cli(const std::string& cli, const char* command, const fs::path& file,
            std::uint64_t events) {
  const std::string path = file.string();
  std::vector<char*> argv{const_cast<char*>(cli.c_str()), const_cast<char*>(command),
                          const_cast<char*>(path.c_str()), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const auto start = Clock::now();
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, cli.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot run " + cli + ": " + std::strerror(rc));
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  const double seconds = seconds_since(start);
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(cli + " " + command + " failed (status " + std::to_string(status) +
                             ")");
  }
  return {seconds, secs(usage.ru_utime) + secs(usage.ru_stime), events};
}

// ---------------------------------------------------------------------------------------------
// Report

std::string grouped(double v) {
  // Appended digit by digit (GCC 12 warns falsely, -Wrestrict, on string::insert here).
  const std::string digits = std::to_string(static_cast<std::uint64_t>(v + 0.5));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

int run(const Config& c) {
  std::optional<TempDir> tmp;
  fs::path file = c.store;
  if (file.empty()) {
    tmp.emplace(c.dir, "factum-verifybench");
    file = tmp->path() / "verify.db";
  }
  auto start = Clock::now();
  build_log(c, file);
  std::cerr << "verify_bench: " << grouped(static_cast<double>(c.events)) << "-event log ready in "
            << std::fixed << std::setprecision(1) << seconds_since(start) << " s ("
            << fs::file_size(file) / (1 << 20) << " MiB)\n";

  Run best_factum;
  Run best_raw;
  Run best_cli;
  auto keep = [](Run& best, const Run& r) {
    if (best.events == 0 || r.rate() > best.rate()) best = r;
  };
  for (int i = 0; i < c.repeat; ++i) {
    // Alternate the order so that neither side always runs on a warmer cache.
    if (i % 2 == 0) {
      keep(best_raw, run_raw(file));
      keep(best_factum, run_factum(file));
    } else {
      keep(best_factum, run_factum(file));
      keep(best_raw, run_raw(file));
    }
    if (!c.cli.empty()) keep(best_cli, run_cli(c.cli, "verify", file, best_factum.events));
  }
  Run exported;
  if (c.export_too && c.cli.empty()) {
    std::cerr << "verify_bench: --export needs the factum binary (--cli PATH); not timed\n";
  } else if (c.export_too) {
    exported = run_cli(c.cli, "export", file, best_factum.events);
  }
  const double ratio = best_factum.rate() / best_raw.rate();
  const double cpu_ratio = best_factum.cpu_rate() / best_raw.cpu_rate();
  const bool pass = best_factum.rate() >= kTargetEventsPerSecond;
  if (c.json) {
    auto side = [](const char* name, const Run& r) {
      std::ostringstream s;
      s << "\"" << name << "\": {\"seconds\": " << r.seconds << ", \"cpu_seconds\": " << r.cpu
        << ", \"events_per_s\": " << static_cast<std::uint64_t>(r.rate())
        << ", \"events_per_cpu_s\": " << static_cast<std::uint64_t>(r.cpu_rate()) << "}";
      return s.str();
    };
    std::cout << std::setprecision(3) << "{\"events\": " << best_factum.events << ", "
              << side("factum", best_factum) << ", " << side("raw", best_raw);
    if (best_cli.events != 0) std::cout << ", " << side("cli", best_cli);
    if (exported.events != 0) std::cout << ", " << side("cli_export", exported);
    std::cout << ", \"ratio\": " << ratio << ", \"cpu_ratio\": " << cpu_ratio
              << ", \"target_events_per_s\": " << static_cast<std::uint64_t>(kTargetEventsPerSecond)
              << ", \"pass\": " << (pass ? "true" : "false") << "}\n";
  } else {
    auto line = [](const char* name, const Run& r, const char* note) {
      std::cout << "  " << name << std::setw(12) << grouped(r.rate()) << " events/s  "
                << std::setw(12) << grouped(r.cpu_rate()) << " per CPU-s  (" << std::setprecision(3)
                << r.seconds << " s, CPU " << r.cpu << " s" << note << ")\n";
    };
    std::cout << std::fixed << "verify of " << grouped(static_cast<double>(best_factum.events))
              << " events, best of " << c.repeat << "\n";
    line("factum  EventStore::verify ", best_factum, "");
    line("raw     sqlite3 + SHA-256  ", best_raw, "");
    if (best_cli.events != 0) line("cli     factum verify FILE ", best_cli, ", process included");
    if (exported.events != 0) line("cli     factum export FILE ", exported, ", one run, no target");
    std::cout << "  ratio factum/raw " << std::setprecision(2) << ratio << " (CPU " << cpu_ratio
              << "); target " << grouped(kTargetEventsPerSecond)
              << " events/s: " << (pass ? "PASS" : "MISS") << "\n";
  }
  return c.strict && !pass ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Config config = parse(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  return bench::run_reporting("verify_bench", [&] { return run(config); });
}
