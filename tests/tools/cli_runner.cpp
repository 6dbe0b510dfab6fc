// Running the factum binary as a child process (see cli_runner.hpp).
#include "cli_runner.hpp"
#include "support/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace factum::test {
namespace {

std::filesystem::path fresh_dir() {
  static std::atomic<int> counter{0};
  auto dir = std::filesystem::temp_directory_path() /
             ("factum-cli-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  return dir;
}

// This process's environment with `changes` (NAME=VALUE) added or replacing the same NAME.
std::vector<std::string> environment_with(const std::vector<std::string>& changes) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) out.emplace_back(*e);
  for (const std::string& change : changes) {
    const std::string name = change.substr(0, change.find('=') + 1);
    std::erase_if(out, [&](const std::string& e) { return e.rfind(name, 0) == 0; });
    out.push_back(change);
  }
  return out;
}

// The peak factum_peak_memory wrote to `report` (0 when it wrote none: it was killed).
long reported_peak_kib(const std::filesystem::path& report) {
  std::ifstream in(report);
  long kib = 0;
  return in >> kib ? kib : 0;
}

CliOptions make_options(const std::filesystem::path& input) {
  CliOptions o;
  o.input = input;
  return o;
}

}  // namespace

CliProcess::CliProcess(const std::vector<std::string>& args, const std::filesystem::path& input)
    : CliProcess(args, make_options(input)) {}

CliProcess::CliProcess(const std::vector<std::string>& args, const CliOptions& options)
    : dir_(fresh_dir()), sample_memory_(options.sample_memory) {
  std::vector<std::string> argv_storage;
  if (sample_memory_) {
    // It runs factum and writes factum's own peak memory to the file (support/peak_memory.cpp).
    argv_storage = {FACTUM_PEAK_MEMORY_PATH, (dir_ / "peak").string()};
  }
  argv_storage.emplace_back(FACTUM_CLI_PATH);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage = environment_with(options.env);
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  const std::string out = (dir_ / "out").string();
  std::string err = (dir_ / "err").string();
  if (options.stderr_terminal) {
    terminal_ = posix_openpt(O_RDWR | O_NOCTTY);
    if (terminal_ < 0 || grantpt(terminal_) != 0 || unlockpt(terminal_) != 0) {
      throw std::runtime_error("cannot open a pseudo-terminal");
    }
    err = ptsname(terminal_);
  }
  const std::string in = options.input.empty() ? std::string("/dev/null") : options.input.string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
  if (options.output.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  } else {
    posix_spawn_file_actions_addopen(&actions, 1, options.output.c_str(), O_WRONLY, 0);
  }
  if (options.stderr_terminal) {
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_RDWR | O_NOCTTY, 0);
    posix_spawn_file_actions_addclose(&actions, terminal_);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  }
  const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(std::string("cannot run factum: ") + std::strerror(rc));
  if (terminal_ >= 0) {
    // Drained as the program writes, so it never blocks on a full terminal buffer; the read
    // fails (EIO) once the program has exited and closed the other side.
    terminal_reader_ = std::thread([this] {
      char buffer[4096];
      for (;;) {
        const ssize_t n = read(terminal_, buffer, sizeof buffer);
        if (n > 0) {
          terminal_text_.append(buffer, static_cast<std::size_t>(n));
        } else if (n < 0 && errno == EINTR) {
          continue;
        } else {
          break;
        }
      }
    });
  }
}

CliProcess::~CliProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  collect_terminal();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

CliResult CliProcess::wait(std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      // With sample_memory this kills factum_peak_memory, and factum with it.
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(dir_ / "out");
  if (terminal_ >= 0) {
    collect_terminal();
    r.err = terminal_text_;
  } else {
    r.err = slurp(dir_ / "err");
  }
  if (sample_memory_) r.peak_rss_kib = reported_peak_kib(dir_ / "peak");
  return r;
}

void CliProcess::collect_terminal() {
  if (terminal_reader_.joinable()) terminal_reader_.join();
  if (terminal_ >= 0) close(terminal_);
  terminal_ = -1;
}

void CliProcess::signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

std::string CliProcess::out_so_far() const { return slurp(dir_ / "out"); }

CliResult run_cli(const std::vector<std::string>& args, const std::filesystem::path& input) {
  CliProcess p(args, input);
  return p.wait();
}

CliResult run_cli(const std::vector<std::string>& args, const CliOptions& options) {
  CliProcess p(args, options);
  return p.wait(options.deadline);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace factum::test
