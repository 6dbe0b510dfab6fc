// tests/samples/bank_read_models_test.cpp — the bank sample's read models, audit and
// replay-with-new-logic through its API: projections equal to a fold of the events, exact
// month-end numbers under the new rule, and tampering found by the audit.
#include <doctest/doctest.h>

#include "audit.hpp"
#include "bank_fixture.hpp"
#include "demo.hpp"
#include "new_rule.hpp"
#include "personal_store.hpp"
#include "support/raw_sql.hpp"

using bank::Money;
using bank::test::BankFixture;
using bank::test::day;

namespace {

// A small made-up history, the same every time.
bank::DemoSummary small_history(BankFixture& f) {
  return bank::create_history(f.store(), bank::DemoOptions{20, 300, 7}, {});
}

bool mentions(const bank::AuditReport& report, const std::string& text) {
  for (const std::string& d : report.differences) {
    if (d.find(text) != std::string::npos) return true;
  }
  return false;
}

const bank::RuleRow& row_of(const bank::RuleComparison& c, const std::string& account) {
  for (const bank::RuleRow& r : c.rows) {
    if (r.account == account) return r;
  }
  throw std::runtime_error("no row for " + account);
}

}  // namespace

TEST_CASE("after a command returns, the read models already show it") {
  BankFixture f;
  f.open_with("acc-1", "10.50");
  // Straight from the tables, without waiting for anything: the projections are inline.
  const auto row = bank::read_account(f.store(), "acc-1");
  REQUIRE(row);
  CHECK(row->balance == BankFixture::m("10.50"));
  CHECK(row->status == "open");
  CHECK(bank::read_statement(f.store(), "acc-1").size() == 2);
}

TEST_CASE("a statement has a line per event with the running balance") {
  BankFixture f;
  f.open_with("acc-1", "100");
  f.open_with("acc-2", "0");
  f.now = day(3);
  f.bank.withdraw("acc-1", BankFixture::m("20"), "groceries");
  f.bank.transfer("acc-1", "acc-2", BankFixture::m("30"), "dinner");
  const std::vector<bank::StatementLine> lines = f.bank.statement("acc-1");
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].entry.kind == "opened");
  CHECK(lines[1].entry.kind == "deposit");
  CHECK(lines[2].entry.kind == "withdrawal");
  CHECK(lines[2].entry.amount == -BankFixture::m("20"));
  CHECK(lines[2].entry.memo == "groceries");
  CHECK(lines[2].at == day(3));
  CHECK(lines[3].entry.kind == "transfer out");
  CHECK(lines[3].entry.counterparty == "acc-2");
  CHECK(lines[3].balance_after == BankFixture::m("50"));
  CHECK(f.bank.statement("acc-2").back().entry.kind == "transfer in");
}

TEST_CASE("the read models equal a fold of every account's events, exactly") {
  BankFixture f;
  small_history(f);
  const std::vector<bank::AccountRow> rows = f.bank.accounts();
  REQUIRE(rows.size() == 20);
  for (const bank::AccountRow& row : rows) {
    CAPTURE(row.account);
    const bank::Account a = f.bank.load(row.account);  // the events, through the repository
    CHECK(row.balance == a.balance());
    CHECK(row.status == a.status());
    CHECK(row.owner == a.owner());
    CHECK(row.version == f.store().stream_version(bank::stream_of(row.account)));
    const std::vector<bank::StatementLine> lines = f.bank.statement(row.account);
    REQUIRE(lines.size() == row.version);
    CHECK(lines.back().balance_after == a.balance());
    Money sum;
    for (const bank::StatementLine& l : lines) sum += l.entry.amount;
    CHECK(sum == a.balance());
  }
}

TEST_CASE("the demo history obeys the bank's rules, and the audit passes") {
  BankFixture f;
  const bank::DemoSummary s = small_history(f);
  CHECK(s.opened == 20);
  CHECK(s.refused > 0);
  CHECK(s.deposits + s.withdrawals + s.transfers + s.reversed + s.refused <= 300);
  const bank::AuditReport report = bank::audit(f.store(), f.bank.registry());
  CHECK(report.ok());
  CHECK(report.accounts == 20);
  CHECK(report.events == f.store().head_position());
  CHECK(report.verdict().rfind("audit: OK — ", 0) == 0);
}

TEST_CASE("the new rule settles interest, then the fee, at every month end") {
  BankFixture f;
  f.open_with("rich", "2000");  // January
  f.open_with("poor", "500");
  f.now = day(47);  // 2024-03-02: January and February are over
  f.bank.deposit("rich", BankFixture::m("1"));
  f.bank.sync_read_models();
  bank::build_new_rule(f.store(), f.bank.registry(), false, {});
  const bank::RuleComparison c = bank::compare_new_rule(f.store());
  CHECK(c.settled_through == "2024-02");
  const bank::RuleRow& rich = row_of(c, "rich");  // 2000.00 -> 2002.00 -> 2004.00, + 1.00
  CHECK(rich.today == BankFixture::m("2001"));
  CHECK(rich.with_rule == BankFixture::m("2005"));
  CHECK(rich.interest == BankFixture::m("4"));
  CHECK(rich.fees == Money{});
  const bank::RuleRow& poor = row_of(c, "poor");  // 500 +0.50 -2.00 = 498.50 +0.49 -2.00
  CHECK(poor.with_rule == BankFixture::m("496.99"));
  CHECK(poor.interest == BankFixture::m("0.99"));
  CHECK(poor.fees == BankFixture::m("4"));
  CHECK(poor.difference() == -BankFixture::m("3.01"));
  CHECK(c.totals.difference() == BankFixture::m("0.99"));
  CHECK(c.rows.front().account == "rich");  // the largest change first
}

TEST_CASE("the new rule rebuilt from scratch gives the same numbers, and follows new events") {
  BankFixture f;
  small_history(f);
  f.bank.sync_read_models();
  bank::build_new_rule(f.store(), f.bank.registry(), false, {});
  const bank::RuleComparison first = bank::compare_new_rule(f.store());
  factum::Position reported = 0;
  bank::build_new_rule(f.store(), f.bank.registry(), true,
                       [&](factum::Position done, factum::Position) { reported = done; });
  const bank::RuleComparison again = bank::compare_new_rule(f.store());
  CHECK(reported == f.store().head_position());
  CHECK(again.totals.with_rule == first.totals.with_rule);
  CHECK(again.settled_through == first.settled_through);
  std::string open_account;
  for (const bank::AccountRow& r : f.bank.accounts()) {
    if (r.status == "open") open_account = r.account;
  }
  f.bank.deposit(open_account, BankFixture::m("1"));  // dated before the newest month: no settling
  f.bank.sync_read_models();
  bank::build_new_rule(f.store(), f.bank.registry(), false, {});
  CHECK(bank::compare_new_rule(f.store()).totals.with_rule ==
        first.totals.with_rule + BankFixture::m("1"));
}

TEST_CASE("the audit reports a balance changed in the read model behind the bank's back") {
  BankFixture f;
  small_history(f);
  factum::test::raw_exec(f.temp.path,
                         "UPDATE balances__g1 SET balance = balance + 100 WHERE account = 'acc-3'");
  const bank::AuditReport report = bank::audit(f.store(), f.bank.registry());
  CHECK_FALSE(report.ok());
  CHECK(report.chain_intact);
  CHECK(report.differences.size() == 1);
  CHECK(mentions(report, "acc-3: balance"));
  CHECK(report.verdict() == "audit: FAILED — 1 difference");
}

TEST_CASE("the audit reports a statement line changed in the read model") {
  BankFixture f;
  small_history(f);
  factum::test::raw_exec(f.temp.path,
                         "UPDATE statements__g1 SET amount = amount + 1 WHERE account = 'acc-5'"
                         " AND line = 2");
  const bank::AuditReport report = bank::audit(f.store(), f.bank.registry());
  CHECK(mentions(report, "acc-5: statement line 2 says"));
}

TEST_CASE("the audit reports an account missing from the read model") {
  BankFixture f;
  small_history(f);
  factum::test::raw_exec(f.temp.path, "DELETE FROM balances__g1 WHERE account = 'acc-7'");
  CHECK(mentions(bank::audit(f.store(), f.bank.registry()), "acc-7: missing"));
}

TEST_CASE("the audit reports an event edited in the log: the broken chain and the account") {
  BankFixture f;
  small_history(f);
  const std::int64_t position = factum::test::raw_int(
      f.temp.path,
      "SELECT e.position FROM events e JOIN streams s ON s.stream_key = e.stream_key"
      " WHERE s.stream_id = 'account-acc-2' AND e.type = 'bank.Deposited' LIMIT 1");
  factum::test::raw_exec(f.temp.path, std::string(factum::test::kDropTriggers) +
                                          "UPDATE events SET payload = zeroblob(length(payload))"
                                          " WHERE position = " +
                                          std::to_string(position));
  const bank::AuditReport report = bank::audit(f.store(), f.bank.registry());
  CHECK_FALSE(report.chain_intact);
  CHECK(mentions(report, "hash chain broken at position " + std::to_string(position)));
  CHECK(mentions(report, "acc-2: event "));  // unreadable: its bytes fail their hash
  CHECK(mentions(report, "acc-2: balance"));
  CHECK(report.verdict().rfind("audit: FAILED — ", 0) == 0);
}

TEST_CASE("a read model that lags is one difference, not a difference per event it has not seen") {
  factum::test::TempStore temp{factum::test::personal_options()};
  factum::EventRegistry registry;
  registry.use_keyring(temp.store.keyring());  // the owner's name is personal data
  bank::register_events(registry);
  {
    bank::Bank bank(temp.store);
    bank.open("acc-1", "Ann");
    bank.deposit("acc-1", BankFixture::m("10"));
  }  // its projections stop with it: the deposit below reaches no read model
  temp.store.append(bank::stream_of("acc-1"), factum::ExpectedVersion::exact(2), registry,
                    bank::Deposited{BankFixture::m("5"), "cash", day(1)});
  const bank::AuditReport report = bank::audit(temp.store, registry);
  CHECK(report.differences ==
        std::vector<std::string>{"the balances read model reflects the log up to position 2, its "
                                 "head was at 3 when the audit began",
                                 "the statements read model reflects the log up to position 2, "
                                 "its head was at 3 when the audit began"});
}

namespace {

// The debit of a transfer from acc-1 to acc-2 with no credit or reversal after it, as a writer
// between the two appends, or one that died there, leaves it. Returns its position.
factum::Position lone_debit(BankFixture& f) {
  f.open_with("acc-1", "10");
  f.open_with("acc-2", "0");
  return f.store()
      .append(bank::stream_of("acc-1"), factum::ExpectedVersion::any(), f.bank.registry(),
              bank::TransferDebited{"acc-2", BankFixture::m("5"), "rent", f.now})
      .last_position;
}

}  // namespace

TEST_CASE("the audit counts a debit whose outcome is not in the log yet as a transfer in flight") {
  BankFixture f;
  lone_debit(f);
  const bank::AuditReport report = bank::audit(f.store(), f.bank.registry());
  CHECK(report.ok());
  CHECK(report.transfers_in_flight == 1);
  CHECK(report.verdict().find("hash chain intact, 1 transfer in flight (head 4 ") !=
        std::string::npos);
}

TEST_CASE("the audit reports a debit whose outcome did not come within the time allowed") {
  BankFixture f;
  const factum::Position debit = lone_debit(f);
  const bank::AuditReport report =
      bank::audit(f.store(), f.bank.registry(), {.in_flight = std::chrono::microseconds(0)});
  REQUIRE(report.differences.size() == 1);
  CHECK(mentions(report, "from acc-1 to acc-2 (debit at position " + std::to_string(debit) +
                             ") has 0 credits and 0 reversals; it needs exactly one of them"));
  CHECK(report.transfers_in_flight == 0);
}
