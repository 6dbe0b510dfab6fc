// tools/cli.hpp — what the commands of the `factum` command line share: the exit codes, the
// error a command raises to end with a one-line message, and how each command group registers
// its subcommands with CLI11 (docs/cli.md).
//
// A command's CLI11 callback only records what to run (an Action); main() runs it after
// parsing, so every failure goes through one place that prints "factum: <message>" and picks
// the exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

namespace factum::cli {

// The exit codes of every command (docs/cli.md).
enum ExitCode : int {
  kOk = 0,             // done
  kError = 1,          // an error: a missing file, not a store, an unknown stream, bad input, ...
  kUsage = 2,          // the command line is wrong (reported by CLI11)
  kDamaged = 3,        // the log is damaged: verify found a break, a command met a corrupt event
  kInterrupted = 130,  // stopped by SIGINT/SIGTERM before it finished (import, export)
};

// An error to report as "factum: <message>" (one line) and end with `code`.
class CliError : public std::runtime_error {
 public:
  explicit CliError(const std::string& message, int code = kError)
      : std::runtime_error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

// What the selected command runs once the command line is parsed; returns the exit code.
using Action = std::function<int()>;

// Each command group adds its subcommands to `app`; the one selected sets `action`.
void add_info_commands(CLI::App& app, Action& action);        // info, stats
void add_read_commands(CLI::App& app, Action& action);        // streams, read, tail
void add_verify_command(CLI::App& app, Action& action);       // verify
void add_audit_command(CLI::App& app, Action& action);        // audit
void add_export_command(CLI::App& app, Action& action);       // export
void add_import_command(CLI::App& app, Action& action);       // import
void add_projection_commands(CLI::App& app, Action& action);  // projections, checkpoint reset

// Shared options: the store file (positional DB, required) and --json.
CLI::Option* add_db_argument(CLI::App& command, std::string& path);
CLI::Option* add_json_flag(CLI::App& command, bool& json);

// The largest position, stream version or count an option takes: SQLite's largest integer.
inline constexpr std::uint64_t kMaxNumber = std::numeric_limits<std::int64_t>::max();

// A CLI11 validator for a whole-number option: decimal digits only, from `min` to `max`, else a
// usage error (exit 2) such as "--limit: '-1' is not a whole number from 1 to ...". So a
// negative value never wraps round and a huge one never clamps.
CLI::Validator whole_number(std::uint64_t min, std::uint64_t max = kMaxNumber);
// A CLI11 validator for a duration in seconds: a finite decimal number from 0 to `max` (written
// `max_text` in the message); NaN, infinities and values past `max` are usage errors.
CLI::Validator seconds(double max, const std::string& max_text);

// CLI11 validators for an event id (UUID) and a SHA-256 hash in hexadecimal.
const CLI::Validator& event_id_validator();
const CLI::Validator& hash_validator();

}  // namespace factum::cli
