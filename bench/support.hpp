// bench/support.hpp — what the benchmark programs share: the command line (CLI11), a temporary
// directory, Ctrl-C handling, the timing helpers and a few number formats.
//
// Every bench parses its flags with CLI11 the same way: cli_defaults() first (a repeated option
// keeps its last value), add_positive() for counts and lengths, parse_or_exit() last (--help prints
// every option and exits 0; a bad option or value prints CLI11's message and exits 2).
//
// Thread-safety: check_interrupt() and interrupted() may be called from any thread; the rest
// is used by one thread at a time.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "factum/eventstore/store_options.hpp"

namespace bench {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Command line

// Settings every bench's command line shares: given twice, an option keeps its last value.
// Call before adding the options.
void cli_defaults(CLI::App& app);

// Accepts a number greater than 0 (for counts, lengths and durations).
const CLI::Validator& positive();

// An option NAME TYPE whose value must be positive(), into `value` (whose value is the default).
template <class T>
CLI::Option* add_positive(CLI::App& app, const std::string& name, T& value,
                          const std::string& description, const std::string& type = "N") {
  return app.add_option(name, value, description)->type_name(type)->check(positive());
}

// --durability full|normal, into `durability` (whose value is the default).
CLI::Option* add_durability(CLI::App& app, factum::Durability& durability,
                            const std::string& description);

// Parses the command line. --help prints the help on stdout and exits with status 0; a bad
// option or value prints CLI11's message on stderr and exits with status 2.
void parse_or_exit(CLI::App& app, int argc, char** argv);

// ---------------------------------------------------------------------------------------------
// Interruption: after catch_interrupts(), SIGINT and SIGTERM only set a flag, which the
// benchmark's loops test with check_interrupt() so that its temporary files are removed.

inline std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

struct Interrupted {};

void catch_interrupts();

inline bool interrupted() { return g_interrupted.load(); }

inline void check_interrupt() {
  if (g_interrupted.load(std::memory_order_relaxed)) throw Interrupted{};
}

// Runs a benchmark's body and returns its exit status; on Interrupted it prints
// "PROGRAM: interrupted" and returns 130, on another exception "PROGRAM: what" and returns 1.
int run_reporting(std::string_view program, const std::function<int()>& body);

// ---------------------------------------------------------------------------------------------
// A fresh temporary directory, PARENT/PREFIX-XXXXXX, removed with everything in it when
// destroyed.

class TempDir {
 public:
  // Throws std::runtime_error when the directory cannot be created.
  TempDir(const std::filesystem::path& parent, std::string_view prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A new database file name, never used before in this run: WHAT-N.db.
  std::filesystem::path fresh(std::string_view what);
  // Removes a database file and its WAL and shared-memory files.
  static void remove_db(const std::filesystem::path& file);

 private:
  std::filesystem::path path_;
  int count_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Time

double seconds_since(Clock::time_point start);

// CPU time of the whole process (every thread), in seconds.
double cpu_seconds();

// ---------------------------------------------------------------------------------------------
// Numbers

// `v` with `decimals` digits after the point ("%.*f").
std::string fixed(double v, int decimals);

// `v` as a JSON number (6 significant digits), or null when it is not finite.
std::string json_number(double v);

}  // namespace bench
