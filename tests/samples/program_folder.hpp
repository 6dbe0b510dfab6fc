// tests/samples/program_folder.hpp — a temporary folder to run a sample program in, for the
// end-to-end tests of factum-bank and factum-feed (their cli and forget tests).
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace factum::test {

#ifdef FACTUM_BANK_BIN
// factum-bank's commands as argument lists; the store is bank.db in the folder.
class BankFolder {
 public:
  std::filesystem::path db() const { return dir_.file("bank.db"); }

  // Runs factum-bank with `args` in the folder, capturing stdout and stderr.
  ProgramRun run(std::initializer_list<std::string> args) const {
    std::vector<std::string> argv{FACTUM_BANK_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_program(argv, dir_.path());
  }

  // Runs a command that must succeed; returns what it printed.
  std::string ok(std::initializer_list<std::string> args) const {
    const ProgramRun r = run(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return r.out;
  }

  // Checks a refusal: exit 1, nothing on stdout, `part` on stderr.
  void refused(std::initializer_list<std::string> args, const std::string& part) const {
    const ProgramRun r = run(args);
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK_MESSAGE(contains(r.err, part), r.err);
  }

  const TempDir& dir() const noexcept { return dir_; }

 private:
  TempDir dir_;
};
#endif

#ifdef FACTUM_FEED_BIN
// factum-feed's commands as shell text (quote what needs it); the store is feed.db in the folder.
struct FeedFolder {
  TempDir dir;

  ProgramRun run(const std::string& args) const {
    return run_shell("'" FACTUM_FEED_BIN "' " + args, dir.path());
  }
  // Runs `args`, which must succeed, with nothing on stderr; returns what it printed.
  std::string ok(const std::string& args) const {
    const ProgramRun r = run(args);
    INFO(args, "\n", r.err);
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    return r.out;
  }
  // Runs `args` at 2024-05-01 `clock` (UTC).
  std::string ok_at(const std::string& clock, const std::string& args) const {
    return ok("--at 2024-05-01T" + clock + "Z " + args);
  }
  std::filesystem::path db() const { return dir.file("feed.db"); }
};
#endif

}  // namespace factum::test
