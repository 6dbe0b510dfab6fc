// Test helpers for child processes: running a program to its end with its output captured,
// and children that signal their progress ("cues", one byte each) on file descriptor 3.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace factum::test {

// A file's whole content ("" when it cannot be read).
std::string slurp(const std::filesystem::path& file);

// Whether `text` contains `part`.
bool contains(const std::string& text, const std::string& part);

// What a program run to its end did.
struct ProgramRun {
  int code = -1;  // its exit status; -1 when it did not exit (killed by a signal)
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] is the program's path) in directory `cwd`, stdin /dev/null, its stdout
// and stderr captured through the files .stdout and .stderr in `cwd`.
ProgramRun run_program(const std::vector<std::string>& argv, const std::filesystem::path& cwd);
// As run_program, with its stdout the file `out_file` instead (e.g. /dev/full, a full disk);
// ProgramRun::out is then empty.
ProgramRun run_program(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                       const std::filesystem::path& out_file);

// Runs `body` in a forked child, which must die by SIGKILL (raised inside the scope of what
// must not be closed); fails the test if it did not (an exception in `body` exits 1, a return 2).
void in_killed_child(const std::function<void()>& body);

// Runs shell text `command` with /bin/sh in `cwd`, captured as run_program does.
ProgramRun run_shell(const std::string& command, const std::filesystem::path& cwd);

// A running child with the read end of its cue pipe (the child writes to its fd 3).
struct CuedChild {
  pid_t pid = -1;
  int cue_fd = -1;   // kept open until the child is reaped (drain_cues closes it)
  std::string cues;  // the cues received so far
};

struct CuedChildOptions {
  std::filesystem::path out = "/dev/null";  // its stdout (truncated first)
  std::filesystem::path err = "/dev/null";  // its stderr (truncated first)
};

// Starts `argv` (argv[0] is the program's path) with stdin /dev/null and the write end of a
// cue pipe as fd 3. REQUIREs that it started.
CuedChild spawn_cued_child(const std::vector<std::string>& argv,
                           const CuedChildOptions& options = {});

// Reads the child's cues until `cue` arrives (true), or the pipe closes (the child died) or
// `deadline` passes (false).
bool await_cue(CuedChild& child, char cue, std::chrono::steady_clock::time_point deadline);

// Once the child is reaped (no writer holds the pipe any more): reads the cues it left, then
// closes the pipe.
void drain_cues(CuedChild& child);

}  // namespace factum::test
