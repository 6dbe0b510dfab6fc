// tests/samples/bank_audit_concurrency_test.cpp — the bank's audit beside writers: deposits and
// transfers keep landing while it runs, each writer on a store handle and a Bank of its own (as
// another process would be). An audit reads the events and the read models as of one moment,
// so what the writers do meanwhile is never a difference; a real one still is.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "audit.hpp"
#include "bank.hpp"
#include "personal_store.hpp"
#include "support/background_loop.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

namespace {

constexpr int kAccounts = 4;  // acc-1 ... acc-4, which the writers use
constexpr int kAudits = 40;

std::string account(int i) { return "acc-" + std::to_string(i); }

// A writer on a store handle and a Bank of its own, as another process would be: deposits into
// and transfers between acc-1 ... acc-4 until stopped.
class Writer {
 public:
  Writer(const std::filesystem::path& db, unsigned seed)
      : store_(factum::EventStore::open(db, factum::test::personal_options())),
        bank_(store_),
        random_(seed),
        loop_([this](std::uint64_t) { step(); }) {}

  factum::test::BackgroundLoop& loop() { return loop_; }

 private:
  void step() {
    std::uniform_int_distribution<int> pick(1, kAccounts);
    const int from = pick(random_), to = pick(random_);
    if (from == to) {
      bank_.deposit(account(from), bank::Money::parse("1"));
    } else {
      bank_.transfer(account(from), account(to), bank::Money::parse("1"));
    }
  }

  factum::EventStore store_;
  bank::Bank bank_;
  std::mt19937 random_;
  factum::test::BackgroundLoop loop_;  // last: stops before the members above go
};

// A bank file with acc-1 ... acc-4 (1,000.00 each, so no transfer is ever refused) and acc-9.
struct BankFile {
  BankFile() {
    factum::EventStore store = factum::EventStore::open(db, factum::test::personal_options());
    bank::Bank bank(store);
    for (int i = 1; i <= kAccounts; ++i) {
      bank.open(account(i), "Owner " + std::to_string(i));
      bank.deposit(account(i), bank::Money::parse("1000"));
    }
    bank.open("acc-9", "Nobody writes here");
  }
  factum::test::TempDir dir;
  std::filesystem::path db = dir.file("bank.db");
};

// Runs kAudits audits beside two writers, each after the writers moved on; returns the
// differences each one reported.
std::vector<std::vector<std::string>> audits_beside_writers(const std::filesystem::path& db) {
  factum::EventStore store = factum::EventStore::open(db, factum::test::personal_options());
  bank::Bank auditor(store);
  Writer first(db, 1), second(db, 2);
  std::vector<std::vector<std::string>> out;
  for (int i = 0; i < kAudits; ++i) {
    REQUIRE_MESSAGE(first.loop().await_progress(), "a writer failed: ", first.loop().error());
    auditor.sync_read_models();
    out.push_back(bank::audit(store, auditor.registry()).differences);
  }
  for (Writer* w : {&first, &second}) {
    w->loop().stop();
    REQUIRE_MESSAGE(w->loop().error().empty(), w->loop().error());
  }
  return out;
}

}  // namespace

TEST_CASE("audits beside writers report no difference: events and read models are one snapshot") {
  BankFile file;
  int failed = 0;
  std::string first;
  for (const std::vector<std::string>& differences : audits_beside_writers(file.db)) {
    if (differences.empty()) continue;
    if (++failed == 1) first = differences.front();
  }
  CHECK_MESSAGE(failed == 0, failed, " of ", kAudits, " audits failed, the first with: ", first);
}

TEST_CASE("beside writers, the audit still reports a read model changed behind the bank's back") {
  BankFile file;
  factum::test::raw_exec(file.db,
                         "UPDATE balances__g1 SET balance = balance + 100 WHERE account = 'acc-9'");
  for (const std::vector<std::string>& differences : audits_beside_writers(file.db)) {
    REQUIRE(differences.size() == 1);
    CHECK(differences.front() ==
          "acc-9: balance 1.00 in the balances read model, 0.00 from its 1 events");
  }
}
