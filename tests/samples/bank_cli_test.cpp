// tests/samples/bank_cli_test.cpp — factum-bank end to end: runs the built program (its path
// is FACTUM_BANK_BIN) and checks what it prints, its exit codes, and that a failing command
// leaves the store file exactly as it was.
#include <doctest/doctest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "events.hpp"
#include "program_folder.hpp"
#include "sample_cli.hpp"
#include "support/child_process.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

namespace {

using Run = factum::test::ProgramRun;
using factum::test::contains;
using factum::test::slurp;

// A temporary folder to run factum-bank in; the store is bank.db there.
// A temporary folder to run factum-bank in (program_folder.hpp).
class Folder : public factum::test::BankFolder {
 public:
  // Two accounts: acc-1 (100.00, overdraft limit 50.00) and acc-2 (empty).
  void two_accounts() const {
    ok({"open", "acc-1", "Ann Smith", "--limit", "50"});
    ok({"deposit", "acc-1", "100"});
    ok({"open", "acc-2", "Bob Jones"});
  }
};

// One line on stderr naming the program, nothing on stdout.
void check_one_line_error(const Run& r, int code, const std::string& part) {
  CHECK(r.code == code);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("factum-bank: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_MESSAGE(contains(r.err, part), r.err);
}

// Runs a command that must fail with `part` in its message and leave the file unchanged.
void check_refused(const Folder& f, std::initializer_list<std::string> args,
                   const std::string& part) {
  const std::string before = slurp(f.db());
  const std::int64_t head = factum::test::raw_int(f.db(), "SELECT max(position) FROM events");
  check_one_line_error(f.run(args), 1, part);
  CHECK(factum::test::raw_int(f.db(), "SELECT max(position) FROM events") == head);
  CHECK(slurp(f.db()) == before);
}

}  // namespace

TEST_CASE("factum-bank --help lists every command, and each command has --help") {
  Folder f;
  const std::string help = f.ok({"--help"});
  for (const char* command : {"demo", "open", "deposit", "withdraw", "transfer", "close", "balance",
                              "statement", "accounts", "audit", "replay-with-new-logic"}) {
    CHECK_MESSAGE(contains(help, command), command);
  }
  CHECK(contains(help, "--db"));
  CHECK(contains(f.ok({"transfer", "--help"}), "FROM"));
}

TEST_CASE("one step at a time: open, deposit, withdraw, transfer, close, balance") {
  Folder f;
  CHECK(contains(f.ok({"open", "acc-1", "Ann Smith", "--limit", "50"}), "opened acc-1"));
  CHECK(std::filesystem::exists(f.db()));  // the default store: bank.db in the current folder
  CHECK(contains(f.ok({"deposit", "acc-1", "100.00"}), "balance 100.00"));
  CHECK(contains(f.ok({"withdraw", "acc-1", "120.5"}), "balance -20.50"));
  f.ok({"open", "acc-2", "Bob Jones"});
  f.ok({"deposit", "acc-1", "1000"});
  const std::string transfer = f.ok({"transfer", "acc-1", "acc-2", "979.50", "--memo", "rent"});
  CHECK(contains(transfer, "transferred 979.50 from acc-1 to acc-2"));
  CHECK(contains(transfer, "acc-1  Ann Smith  balance 0.00"));
  CHECK(contains(f.ok({"close", "acc-1"}), "closed acc-1"));
  CHECK(contains(f.ok({"balance", "acc-1"}), "closed"));
  CHECK(contains(f.ok({"balance", "acc-2"}), "Bob Jones  balance 979.50"));
}

TEST_CASE("statement and accounts print the read models") {
  Folder f;
  f.two_accounts();
  f.ok({"transfer", "acc-1", "acc-2", "30", "--memo", "dinner"});
  const std::string statement = f.ok({"statement", "acc-1"});
  CHECK(contains(statement, "Statement of acc-1 (Ann Smith, open): 3 lines"));
  CHECK(contains(statement, "transfer out"));
  CHECK(contains(statement, "acc-2: dinner"));
  CHECK(contains(f.ok({"statement", "acc-1", "--last", "1"}), "the last 1"));
  const std::string accounts = f.ok({"accounts"});
  CHECK(contains(accounts, "acc-1"));
  CHECK(contains(accounts, "2 accounts, 100.00 in all"));
}

TEST_CASE("malformed amounts are one-line errors and leave the store unchanged") {
  Folder f;
  f.two_accounts();
  for (const char* bad : {"1e3", "-5", "10.123", "abc", "", "1,000"}) {
    CAPTURE(bad);
    check_refused(f, {"deposit", "acc-1", bad}, "malformed amount");
  }
  check_refused(f, {"open", "acc-3", "Cy", "--limit", "lots"}, "malformed amount");
}

TEST_CASE("unknown accounts are one-line errors and leave the store unchanged") {
  Folder f;
  f.two_accounts();
  check_refused(f, {"deposit", "acc-9", "1"}, "no account acc-9");
  check_refused(f, {"transfer", "acc-1", "acc-9", "1"}, "no account acc-9");
  check_refused(f, {"balance", "acc-9"}, "no account acc-9");
  check_refused(f, {"statement", "acc-9"}, "no account acc-9");
  check_refused(f, {"deposit", "bad/id", "1"}, "invalid account id");
}

TEST_CASE("out-of-order transitions are refused and leave the store unchanged") {
  Folder f;
  f.two_accounts();
  check_refused(f, {"open", "acc-1", "Ann again"}, "account acc-1 exists");
  check_refused(f, {"close", "acc-1"}, "still holds 100.00");
  check_refused(f, {"withdraw", "acc-1", "150.01"}, "insufficient funds in account acc-1");
  f.ok({"close", "acc-2"});
  check_refused(f, {"deposit", "acc-2", "1"}, "account acc-2 is closed");
  check_refused(f, {"close", "acc-2"}, "account acc-2 is closed");
  check_refused(f, {"transfer", "acc-2", "acc-1", "1"}, "account acc-2 is closed");
}

TEST_CASE("a transfer to a closed account fails, and its reversal is in the history") {
  Folder f;
  f.two_accounts();
  f.ok({"close", "acc-2"});
  const std::int64_t head = factum::test::raw_int(f.db(), "SELECT max(position) FROM events");
  const Run r = f.run({"transfer", "acc-1", "acc-2", "25"});
  check_one_line_error(r, 1, "transfer refused by acc-2 (account acc-2 is closed)");
  CHECK(contains(r.err, "compensates debit"));
  CHECK(factum::test::raw_int(f.db(), "SELECT max(position) FROM events") == head + 2);
  CHECK(contains(f.ok({"balance", "acc-1"}), "balance 100.00"));
  CHECK(contains(f.ok({"statement", "acc-1"}), "reversal"));
}

TEST_CASE("usage errors exit 2 with one line") {
  Folder f;
  check_one_line_error(f.run({}), 2, "subcommand");
  check_one_line_error(f.run({"deposit", "acc-1"}), 2, "AMOUNT");
  check_one_line_error(f.run({"deposit", "acc-1", "5", "extra"}), 2, "extra");
  check_one_line_error(f.run({"statement", "acc-1", "--last", "x"}), 2, "--last");
}

TEST_CASE("commands on a missing store neither run nor create it") {
  Folder f;
  check_one_line_error(f.run({"deposit", "acc-1", "5"}), 1, "no bank at 'bank.db'");
  check_one_line_error(f.run({"audit"}), 1, "no bank at");
  CHECK_FALSE(std::filesystem::exists(f.db()));
  check_one_line_error(f.run({"--db", "other.db", "accounts"}), 1, "no bank at 'other.db'");
}

TEST_CASE("audit passes, and names what was tampered with behind the bank's back") {
  Folder f;
  f.two_accounts();
  const std::string ok = f.ok({"audit"});
  CHECK(ok.rfind("audit: OK — 3 events, 2 accounts, hash chain intact (head 3 ", 0) == 0);
  factum::test::raw_exec(f.db(), "UPDATE balances__g1 SET balance = 1 WHERE account = 'acc-2'");
  const Run r = f.run({"audit"});
  CHECK(r.code == 1);
  CHECK(contains(r.out,
                 "audit: acc-2: balance 0.01 in the balances read model, 0.00 from its 1 events"));
  CHECK(contains(r.out, "audit: FAILED — 1 difference\n"));
}

TEST_CASE("audit names the first position of a log edited behind the bank's back") {
  Folder f;
  f.two_accounts();  // positions: 1 acc-1 opened, 2 acc-1 deposit, 3 acc-2 opened
  factum::test::raw_exec(f.db(), std::string(factum::test::kDropTriggers) +
                                     "UPDATE events SET recorded_at = recorded_at + 1"
                                     " WHERE position = 2");
  const Run r = f.run({"audit"});
  CHECK(r.code == 1);
  CHECK(contains(r.out, "audit: hash chain broken at position 2"));
  CHECK(contains(r.out, "audit: acc-1: event 2 (position 2) is unreadable"));
  CHECK(contains(r.out, "audit: acc-1: balance 100.00 in the balances read model, 0.00"));
  CHECK(contains(r.out, "audit: FAILED — "));
}

TEST_CASE("replay-with-new-logic shows each account with the new rule beside today's") {
  Folder f;
  f.two_accounts();
  const std::string out = f.ok({"replay-with-new-logic", "--top", "1"});
  CHECK(contains(out, "New rule: 0.1% monthly interest"));
  CHECK(contains(out, "balance today"));
  CHECK(contains(out, "with new rule"));
  CHECK(contains(out, "... 1 more accounts"));
  CHECK(contains(out, "total     2 accounts"));
  CHECK(contains(f.ok({"replay-with-new-logic", "--rebuild"}), "total"));
}

TEST_CASE("demo makes a history, ends with the audit's verdict, and never mixes histories") {
  Folder f;
  const std::string out = f.ok({"demo", "--accounts", "20", "--operations", "300"});
  CHECK(contains(out, "20 accounts opened"));
  CHECK(contains(out, "Top balances"));
  CHECK(contains(out, "Statement of "));
  // A salary's payment reference booked again to another account (a rule across accounts).
  CHECK(contains(out,
                 " --reference SAL-0001: refused: payment reference SAL-0001 was used "
                 "already, by account acc-"));
  const std::string last = out.substr(out.rfind('\n', out.size() - 2) + 1);
  CHECK_MESSAGE(last.rfind("audit: OK — ", 0) == 0, last);
  const std::string before = slurp(f.db());
  check_one_line_error(f.run({"demo"}), 1, "already holds");
  CHECK(slurp(f.db()) == before);
  CHECK(contains(f.ok({"demo", "--fresh", "--accounts", "10", "--operations", "50"}),
                 "10 accounts opened"));
  check_one_line_error(f.run({"demo", "--accounts", "1"}), 2, "--accounts");
}

namespace {

using factum::test::Refusal;

// factum-bank in a folder of its own, with bank.db made by successful commands: acc-1 (100.00,
// overdraft limit 50.00), acc-2 (empty) and acc-3 (closed).
struct Bank {
  factum::test::SampleFolder folder{"factum-bank", FACTUM_BANK_BIN};
  std::filesystem::path db = folder.file("bank.db");
  Bank() {
    folder.ok({"open", "acc-1", "Ann Smith", "--limit", "50"});
    folder.ok({"deposit", "acc-1", "100"});
    folder.ok({"open", "acc-2", "Bob Jones"});
    folder.ok({"open", "acc-3", "Cy"});
    folder.ok({"close", "acc-3"});
  }
};

}  // namespace

TEST_CASE("factum-bank: every usage error exits 2 and leaves the store byte for byte unchanged") {
  Bank bank;
  factum::test::check_refusals(
      bank.folder, bank.db,
      {
          {{}, 2, "A subcommand is required"},
          {{"frobnicate"}, 2, "unknown command 'frobnicate'"},
          {{"deposit", "acc-1"}, 2, "AMOUNT"},
          {{"deposit", "acc-1", "5", "extra"}, 2, "extra"},
          {{"deposit", "acc-1", "5", "--bogus"}, 2, "--bogus"},
          {{"statement", "acc-1", "--last", "x"}, 2, "--last"},
          {{"statement", "acc-1", "--last", "-1"}, 2, "--last: Value -1 not in range"},
          {{"replay-with-new-logic", "--top", "-1"}, 2, "--top: Value -1 not in range"},
          {{"demo", "--accounts", "1"}, 2, "--accounts"},
          {{"--db"}, 2, "--db"},
      });
}

TEST_CASE("factum-bank: every refused input leaves the store byte for byte unchanged") {
  Bank bank;
  factum::test::check_refusals(
      bank.folder, bank.db,
      {
          {{"deposit", "acc-1", "1e3"}, 1, "malformed amount '1e3'"},
          {{"withdraw", "acc-1", "-5"}, 1, "malformed amount '-5'"},
          {{"transfer", "acc-1", "acc-2", "10.123"}, 1, "malformed amount '10.123'"},
          {{"deposit", "acc-1", ""}, 1, "malformed amount ''"},
          {{"open", "acc-4", "Dee", "--limit", "lots"}, 1, "malformed amount 'lots'"},
          {{"deposit", "bad/id", "1"}, 1, "invalid account id 'bad/id'"},
          {{"open", "acc-4", ""}, 1, "the owner of account acc-4 must be 1-80 characters"},
          {{"deposit", "acc-1", "1", "--memo", "two\nlines"}, 1, "the memo for account acc-1"},
          {{"deposit", "acc-9", "1"}, 1, "no account acc-9"},
          {{"withdraw", "acc-9", "1"}, 1, "no account acc-9"},
          {{"close", "acc-9"}, 1, "no account acc-9"},
          {{"transfer", "acc-1", "acc-9", "1"}, 1, "no account acc-9"},
          {{"transfer", "acc-9", "acc-1", "1"}, 1, "no account acc-9"},
          {{"balance", "acc-9"}, 1, "no account acc-9"},
          {{"statement", "acc-9"}, 1, "no account acc-9"},
      });
}

TEST_CASE("factum-bank: every command the rules refuse leaves the store byte for byte unchanged") {
  Bank bank;
  factum::test::check_refusals(
      bank.folder, bank.db,
      {
          {{"open", "acc-1", "Ann again"}, 1, "account acc-1 exists"},
          {{"withdraw", "acc-1", "150.01"}, 1, "insufficient funds in account acc-1"},
          {{"transfer", "acc-1", "acc-2", "150.01"}, 1, "insufficient funds in account acc-1"},
          {{"transfer", "acc-1", "acc-1", "1"}, 1, "cannot transfer from account acc-1 to itself"},
          {{"close", "acc-1"}, 1, "still holds 100.00"},
          {{"deposit", "acc-3", "1"}, 1, "account acc-3 is closed"},
          {{"close", "acc-3"}, 1, "account acc-3 is closed"},
          {{"transfer", "acc-3", "acc-1", "1"}, 1, "account acc-3 is closed"},
          {{"deposit", "acc-1", "999999999999.99"}, 1, "acc-1"},
          {{"demo"}, 1, "already holds 5 events"},
      });
}

TEST_CASE("factum-bank: a refused read does not first bring lagging read models up to date") {
  Bank bank;
  {  // A deposit appended without the bank's projections (by another program): they lag.
    factum::EventRegistry registry;
    bank::register_events(registry);
    factum::EventStore::open(bank.db).append(
        "account-acc-2", factum::ExpectedVersion::exact(1),
        registry.encode(bank::Deposited{bank::Money::parse("5"), "cash", {}}));
  }
  factum::test::check_refusals(bank.folder, bank.db,
                               {{{"balance", "acc-9"}, 1, "no account acc-9"},
                                {{"statement", "acc-9", "--last", "1"}, 1, "no account acc-9"},
                                {{"balance", "bad/id"}, 1, "invalid account id 'bad/id'"}});
  CHECK(contains(bank.folder.ok({"balance", "acc-2"}), "balance 5.00"));  // caught up now
}

TEST_CASE("factum-bank escapes control characters and bytes that are not UTF-8 in its errors") {
  Bank bank;
  const factum::test::ProgramRun id = bank.folder.run({"deposit", "acc\x1b[31m\x07\xff", "1"});
  factum::test::check_one_line_error(id, "factum-bank", 1,
                                     "invalid account id 'acc\\x1b[31m\\x07\\xff'");
  const factum::test::ProgramRun amount = bank.folder.run({"deposit", "acc-1", "1\x1b]0;x\x07"});
  factum::test::check_one_line_error(amount, "factum-bank", 1,
                                     "malformed amount '1\\x1b]0;x\\x07'");
  const factum::test::ProgramRun usage = bank.folder.run({"frob\x1b[2J\r\n"});
  factum::test::check_one_line_error(usage, "factum-bank", 2,
                                     "unknown command 'frob\\x1b[2J\\x0d\\x0a'");
}
