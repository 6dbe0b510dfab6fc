// tools/cli.hpp — what the commands of the `factum` command line share: the exit codes, the
// error a command raises to end with a one-line message, and how each command group registers
// its subcommands with CLI11 (docs/cli.md). The options and validators the commands share are in
// options.hpp.
//
// A command's CLI11 callback only records what to run (an Action); main() runs it after
// parsing through run_command (run_command.hpp), so every failure goes through one place that
// prints "factum: <message>" and picks the exit code.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

// Declared only: CLI11 (2.1) compiles its whole parser into every file that includes it (~5 s at
// -O2), and most files of the command line need only the errors and exit codes below. The files
// that build or parse a command line include <CLI/CLI.hpp> themselves (through options.hpp).
namespace CLI {
class App;
class Error;
}  // namespace CLI

namespace factum {
class AnchorSink;  // factum/eventstore/anchor.hpp
}  // namespace factum

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

// Where `factum anchor --to` and `verify --anchors` keep anchors: a postgresql:// URI is the
// table factum_anchors of that database (PostgresAnchorSink), kafka://BROKERS/TOPIC a topic of
// one partition (factum::kafka::KafkaAnchorSink; CliError in a build without the Kafka bridge),
// anything else a file (AnchorFile).
inline constexpr const char* kKafkaScheme = "kafka://";
bool is_kafka_location(const std::string& where);
std::unique_ptr<AnchorSink> open_anchor_sink(const std::string& where);

// What the selected command runs once the command line is parsed; returns the exit code.
using Action = std::function<int()>;

// Each command group adds its subcommands to `app`; the one selected sets `action`.
void add_info_commands(CLI::App& app, Action& action);        // info, stats
void add_read_commands(CLI::App& app, Action& action);        // streams, read, tail
void add_verify_command(CLI::App& app, Action& action);       // verify
void add_anchor_command(CLI::App& app, Action& action);       // anchor
void add_personal_commands(CLI::App& app, Action& action);    // forget, subjects
void add_audit_command(CLI::App& app, Action& action);        // audit
void add_export_command(CLI::App& app, Action& action);       // export
void add_import_command(CLI::App& app, Action& action);       // import
void add_projection_commands(CLI::App& app, Action& action);  // projections, checkpoint reset
#ifdef FACTUM_HAVE_KAFKA
void add_kafka_commands(CLI::App& app, Action& action);  // relay, ingest (docs/kafka.md)
#endif

}  // namespace factum::cli
