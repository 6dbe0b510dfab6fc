// Runs a program and reports its peak resident set, exactly and its own (the tests' measure of
// the factum command line's memory, tests/tools/cli_runner.cpp).
//
//   factum_peak_memory <report file> <program> [<argument>...]
//
// Starts <program> with fork and exec, waits for it, writes its peak resident set in KiB (the
// ru_maxrss wait4 gives) and a newline to <report file>, and ends as the program ended: its exit
// status, or the signal that killed it raised again. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to
// this process are passed on to the program; if this process dies first, the program is killed.
//
// Why a process in between: the kernel counts into a program's peak the peak of the memory it
// replaced at exec. A child started by posix_spawn (a vfork) replaces its parent's memory, so its
// ru_maxrss starts at the test process's peak; a forked child replaces a copy of its parent's.
// This process is small, so what it passes on is too. Sampling /proc/PID/status instead misses a
// program that ends between two samples, and the spike in the last moments of one that does not.
//
// Exit status when it cannot do its part: 125 bad arguments or the program could not be started
// (the reason on stderr).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace {

// The signals this process passes on to the program.
constexpr int kPassedOn[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

volatile sig_atomic_t child_pid = 0;

void pass_on(int sig) {
  if (child_pid > 0) kill(child_pid, sig);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: factum_peak_memory <report file> <program> [<argument>...]\n");
    return 125;
  }
  // The signals passed on are blocked until their handlers are in place (the child unblocks
  // them before exec): one that came in between would end this process and not the program.
  sigset_t passed;
  sigset_t before;
  sigemptyset(&passed);
  for (const int sig : kPassedOn) sigaddset(&passed, sig);
  sigprocmask(SIG_BLOCK, &passed, &before);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "factum_peak_memory: fork: %s\n", std::strerror(errno));
    return 125;
  }
  if (pid == 0) {
    // Dies with this process (e.g. killed at a test's deadline), and not before it was watched.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    sigprocmask(SIG_SETMASK, &before, nullptr);
    execv(argv[2], argv + 2);
    std::fprintf(stderr, "factum_peak_memory: cannot run %s: %s\n", argv[2], std::strerror(errno));
    _exit(125);
  }
  child_pid = pid;
  struct sigaction action {};
  action.sa_handler = pass_on;
  sigemptyset(&action.sa_mask);
  for (const int sig : kPassedOn) sigaction(sig, &action, nullptr);
  sigprocmask(SIG_SETMASK, &before, nullptr);

  int status = 0;
  struct rusage usage {};
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) {
      std::fprintf(stderr, "factum_peak_memory: wait4: %s\n", std::strerror(errno));
      return 125;
    }
  }
  child_pid = 0;  // reaped: its pid may be another process's from now on
  std::FILE* report = std::fopen(argv[1], "w");
  if (report == nullptr || std::fprintf(report, "%ld\n", usage.ru_maxrss) < 0 ||
      std::fclose(report) != 0) {
    std::fprintf(stderr, "factum_peak_memory: cannot write %s\n", argv[1]);
    return 125;
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    const struct rlimit no_core {};
    setrlimit(RLIMIT_CORE, &no_core);
    raise(sig);
    return 128 + sig;
  }
  return WEXITSTATUS(status);
}
