#include "support/child_process.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <sstream>

extern char** environ;

namespace factum::test {
namespace {

// posix_spawn file actions, destroyed at the end of the scope.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }
  void open(int fd, const std::filesystem::path& file, int flags) {
    posix_spawn_file_actions_addopen(&actions_, fd, file.c_str(), flags, 0644);
  }

 private:
  posix_spawn_file_actions_t actions_;
};

std::vector<char*> argv_of(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

constexpr int kOutputFlags = O_WRONLY | O_CREAT | O_TRUNC | O_APPEND;

}  // namespace

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ProgramRun run_program(const std::vector<std::string>& argv, const std::filesystem::path& cwd) {
  return run_program(argv, cwd, cwd / ".stdout");
}

ProgramRun run_program(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                       const std::filesystem::path& out_file) {
  REQUIRE(!argv.empty());
  std::vector<std::string> args = argv;
  std::vector<char*> raw = argv_of(args);
  const std::filesystem::path out = cwd / ".stdout", err = cwd / ".stderr";
  FileActions actions;
  posix_spawn_file_actions_addchdir_np(actions.get(), cwd.c_str());
  actions.open(STDIN_FILENO, "/dev/null", O_RDONLY);
  actions.open(STDOUT_FILENO, out_file, kOutputFlags);
  actions.open(STDERR_FILENO, err, kOutputFlags);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, raw[0], actions.get(), nullptr, raw.data(), environ);
  REQUIRE_MESSAGE(rc == 0, "posix_spawn of ", argv[0], " failed: ", rc);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ProgramRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::error_code ec;
  std::filesystem::remove(out, ec);
  std::filesystem::remove(err, ec);
  return r;
}

ProgramRun run_shell(const std::string& command, const std::filesystem::path& cwd) {
  return run_program({"/bin/sh", "-c", command}, cwd);
}

CuedChild spawn_cued_child(const std::vector<std::string>& argv, const CuedChildOptions& options) {
  REQUIRE(!argv.empty());
  int cue[2];
  REQUIRE(::pipe2(cue, O_CLOEXEC) == 0);
  std::vector<std::string> args = argv;
  std::vector<char*> raw = argv_of(args);
  CuedChild child;
  int rc = 0;
  {
    FileActions actions;
    actions.open(STDIN_FILENO, "/dev/null", O_RDONLY);
    actions.open(STDOUT_FILENO, options.out, kOutputFlags);
    actions.open(STDERR_FILENO, options.err, kOutputFlags);
    posix_spawn_file_actions_adddup2(actions.get(), cue[1], 3);
    rc = posix_spawn(&child.pid, raw[0], actions.get(), nullptr, raw.data(), environ);
  }
  ::close(cue[1]);
  child.cue_fd = cue[0];
  if (rc != 0) ::close(cue[0]);
  REQUIRE_MESSAGE(rc == 0, "posix_spawn of ", argv[0], " failed: ", rc);
  return child;
}

bool await_cue(CuedChild& child, char cue, std::chrono::steady_clock::time_point deadline) {
  using namespace std::chrono;
  while (child.cues.find(cue) == std::string::npos) {
    const auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{child.cue_fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000) + 1));
    if (n < 0 && errno != EINTR) FAIL("poll on the cue pipe failed: errno ", errno);
    if (n <= 0) continue;
    char byte = 0;
    const ssize_t got = ::read(child.cue_fd, &byte, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    child.cues.push_back(byte);
  }
  return true;
}

void drain_cues(CuedChild& child) {
  char buffer[8];
  for (;;) {
    const ssize_t got = ::read(child.cue_fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    child.cues.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(child.cue_fd);
  child.cue_fd = -1;
}

void in_killed_child(const std::function<void()>& body) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      body();
    } catch (...) {
      _exit(1);
    }
    _exit(2);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
}

}  // namespace factum::test
