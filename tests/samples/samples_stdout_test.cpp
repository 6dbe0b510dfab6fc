// tests/samples/samples_stdout_test.cpp — what the three sample programs (factum-bank,
// factum-orders, factum-feed) do when what they print cannot reach stdout (a full disk; here
// /dev/full): every command, --help included, exits 1 with one line on stderr that says why, as
// the `factum` command line does. A command that writes to the store has written by then; only
// its report is lost, and the exit code says so.
#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sample_cli.hpp"

namespace {

using factum::test::SampleFolder;
using Args = std::vector<std::string>;

constexpr const char* kFullDisk = "/dev/full";

// The subcommands `PROGRAM --help` lists (CLI11's "Subcommands:" section).
std::set<std::string> listed_subcommands(const SampleFolder& folder) {
  std::istringstream help(folder.ok({"--help"}));
  std::set<std::string> out;
  bool in_section = false;
  for (std::string line; std::getline(help, line);) {
    if (line == "Subcommands:") {
      in_section = true;
    } else if (in_section && line.rfind("  ", 0) == 0) {
      std::istringstream words(line);
      std::string name;
      words >> name;
      out.insert(name);
    } else {
      in_section = false;
    }
  }
  return out;
}

// The subcommand that `args` run: the first word that is neither an option nor --db's value.
std::string subcommand_of(const Args& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--db") {
      ++i;
    } else if (args[i].rfind("-", 0) != 0) {
      return args[i];
    }
  }
  return {};
}

// Runs `args` with stdout on a full disk: exit 1, and one line naming the reason.
void check_fails_on_full_disk(const SampleFolder& folder, const Args& args) {
  std::string shown;
  for (const std::string& a : args) shown += " " + a;
  INFO(folder.program(), shown);
  factum::test::check_one_line_error(folder.run_into(kFullDisk, args), folder.program(), 1,
                                     "cannot write to stdout: no space left on device");
}

// Runs each of `commands` (which succeed on a disk with room, in this order) into a full disk,
// then --help and each subcommand's --help; and checks that `commands` cover every subcommand
// the program's --help lists.
void check_every_command_on_full_disk(const SampleFolder& folder,
                                      const std::vector<Args>& commands) {
  const std::set<std::string> listed = listed_subcommands(folder);
  REQUIRE(listed.size() >= 5);
  std::set<std::string> covered;
  for (const Args& args : commands) {
    check_fails_on_full_disk(folder, args);
    covered.insert(subcommand_of(args));
  }
  check_fails_on_full_disk(folder, {"--help"});
  for (const std::string& sub : listed) check_fails_on_full_disk(folder, {sub, "--help"});
  for (const std::string& sub : listed) CHECK_MESSAGE(covered.count(sub) == 1, sub);
}

}  // namespace

TEST_CASE("factum-bank: every command, --help too, exits 1 with one line when stdout is full") {
  SampleFolder bank("factum-bank", FACTUM_BANK_BIN);
  bank.ok({"open", "acc-1", "Ann"});
  bank.ok({"open", "acc-2", "Bob"});
  bank.ok({"deposit", "acc-1", "100"});
  check_every_command_on_full_disk(
      bank, {{"open", "acc-3", "Cy"},
             {"deposit", "acc-1", "5"},
             {"withdraw", "acc-1", "1"},
             {"transfer", "acc-1", "acc-2", "1"},
             {"close", "acc-3"},
             {"forget", "acc-3"},
             {"balance", "acc-1"},
             {"statement", "acc-1"},
             {"accounts"},
             {"audit"},
             {"replay-with-new-logic"},
             {"--db", "demo.db", "demo", "--accounts", "2", "--operations", "20"}});
}

TEST_CASE("factum-orders: every command, --help too, exits 1 with one line when stdout is full") {
  SampleFolder orders("factum-orders", FACTUM_ORDERS_BIN);
  orders.ok({"place", "o-1", "ann", "mug-01:1:5"});
  check_every_command_on_full_disk(orders, {{"place", "o-2", "ann", "mug-01:2:5"},
                                            {"pay", "o-2"},
                                            {"ship", "o-2"},
                                            {"deliver", "o-2"},
                                            {"refund", "o-2"},
                                            {"cancel", "o-1"},
                                            {"show", "o-2"},
                                            {"board"},
                                            {"inventory"},
                                            {"outbox"},
                                            {"search", "ann"},
                                            {"--db", "demo.db", "demo", "--orders", "2"}});
}

TEST_CASE("factum-feed: every command, --help too, exits 1 with one line when stdout is full") {
  SampleFolder feed("factum-feed", FACTUM_FEED_BIN);
  feed.ok({"join", "alice"});
  feed.ok({"join", "bob"});
  check_every_command_on_full_disk(feed,
                                   {{"join", "cy"},
                                    {"follow", "bob", "alice"},
                                    {"post", "alice", "hello"},
                                    {"like", "bob", "1"},
                                    {"unfollow", "bob", "alice"},
                                    {"feed", "bob"},
                                    {"stats"},
                                    {"forget", "cy"},
                                    {"--db", "demo.db", "demo", "--users", "2", "--days", "1"}});
}

TEST_CASE("a command whose output reaches stdout still exits 0 with nothing on stderr") {
  SampleFolder bank("factum-bank", FACTUM_BANK_BIN);
  const factum::test::ProgramRun r = bank.run_into("/dev/null", {"open", "acc-1", "Ann"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
}
