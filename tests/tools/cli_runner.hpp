// Running the factum binary (FACTUM_CLI_PATH) as a child process: its exit code, stdout and
// stderr (captured through files, so a large output never blocks it), with a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace factum::test {

struct CliResult {
  int code = -1;  // the exit status; 128 + N when killed by signal N
  std::string out;
  std::string err;
  // With CliOptions::sample_memory: the program's peak resident set in KiB, the kernel's own
  // figure (wait4's ru_maxrss, through factum_peak_memory: support/peak_memory.cpp), including
  // its last moments; 0 when it was killed at the deadline.
  long peak_rss_kib = 0;
};

struct CliOptions {
  std::filesystem::path input;  // a file for its stdin (empty: /dev/null)
  // A file for its stdout (e.g. /dev/full) instead of capturing it; `out` is then empty.
  std::filesystem::path output;
  // Its stderr is a pseudo-terminal (as in an interactive shell); `err` is what it wrote there.
  bool stderr_terminal = false;
  bool sample_memory = false;    // fill CliResult::peak_rss_kib
  std::vector<std::string> env;  // NAME=VALUE pairs added to (or replacing in) its environment
  std::chrono::milliseconds deadline = std::chrono::seconds(20);  // run_cli: then SIGKILL
};

// A started `factum ARGS...`; wait() collects it.
class CliProcess {
 public:
  // `input`: a file for its stdin (empty: /dev/null).
  CliProcess(const std::vector<std::string>& args, const std::filesystem::path& input = {});
  CliProcess(const std::vector<std::string>& args, const CliOptions& options);
  ~CliProcess();
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;

  // Waits for the exit (killing it with SIGKILL after `deadline`).
  CliResult wait(std::chrono::milliseconds deadline = std::chrono::seconds(20));
  void signal(int sig);
  // The stdout captured so far.
  std::string out_so_far() const;

 private:
  void collect_terminal();
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  bool sample_memory_ = false;
  int terminal_ = -1;  // the pseudo-terminal's master side (stderr_terminal)
  std::thread terminal_reader_;
  std::string terminal_text_;  // what the program wrote to the terminal
};

// Runs `factum ARGS...` to its end.
CliResult run_cli(const std::vector<std::string>& args, const std::filesystem::path& input = {});
CliResult run_cli(const std::vector<std::string>& args, const CliOptions& options);

// The non-empty lines of `text`.
std::vector<std::string> lines_of(const std::string& text);

}  // namespace factum::test
