// Running the factum binary (FACTUM_CLI_PATH) as a child process: its exit code, stdout and
// stderr (captured through files, so a large output never blocks it), with a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace factum::test {

struct CliResult {
  int code = -1;  // the exit status; 128 + N when killed by signal N
  std::string out;
  std::string err;
};

// A started `factum ARGS...`; wait() collects it.
class CliProcess {
 public:
  // `input`: a file for its stdin (empty: /dev/null).
  CliProcess(const std::vector<std::string>& args, const std::filesystem::path& input = {});
  ~CliProcess();
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;

  // Waits for the exit (killing it with SIGKILL after `deadline`).
  CliResult wait(std::chrono::milliseconds deadline = std::chrono::seconds(20));
  void signal(int sig);
  // The stdout captured so far.
  std::string out_so_far() const;

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

// Runs `factum ARGS...` to its end.
CliResult run_cli(const std::vector<std::string>& args, const std::filesystem::path& input = {});

// The non-empty lines of `text`.
std::vector<std::string> lines_of(const std::string& text);

}  // namespace factum::test
