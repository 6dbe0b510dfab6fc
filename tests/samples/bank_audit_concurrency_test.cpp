// tests/samples/bank_audit_concurrency_test.cpp — the bank's audit beside writers: deposits and
// transfers keep landing while it runs, each writer on a store handle and a Bank of its own (as
// another process would be). An audit reads the events and the read models as of one moment,
// so what the writers do meanwhile is never a difference; a real one still is.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "audit.hpp"
#include "bank.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

namespace {

constexpr int kAccounts = 4;  // acc-1 ... acc-4, which the writers use
constexpr int kAudits = 40;

std::string account(int i) { return "acc-" + std::to_string(i); }

// Deposits into and transfers between acc-1 ... acc-4 until stopped, on threads of their own.
class Writers {
 public:
  Writers(const std::filesystem::path& db, int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this, db, i] { run(db, i); });
  }
  ~Writers() { stop(); }
  Writers(const Writers&) = delete;
  Writers& operator=(const Writers&) = delete;

  void stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  // Waits until at least one more operation has landed since the last call, so that each audit
  // runs beside writers that are still writing. False when none lands within 30 s.
  bool await_progress() {
    std::unique_lock lock(mu_);
    const bool moved = landed_cv_.wait_for(lock, std::chrono::seconds(30),
                                           [&] { return landed_ > seen_ || !error_.empty(); });
    seen_ = landed_;
    return moved && error_.empty();
  }

  std::string error() const {
    std::lock_guard lock(mu_);
    return error_;
  }

 private:
  void run(const std::filesystem::path& db, int seed) {
    try {
      factum::EventStore store =
          factum::EventStore::open(db, factum::test::TempStore::fast_options());
      bank::Bank bank(store);
      std::mt19937 random(static_cast<unsigned>(seed));
      std::uniform_int_distribution<int> pick(1, kAccounts);
      while (!stop_) {
        const int from = pick(random), to = pick(random);
        if (from == to) {
          bank.deposit(account(from), bank::Money::parse("1"));
        } else {
          bank.transfer(account(from), account(to), bank::Money::parse("1"));
        }
        landed();
      }
    } catch (const std::exception& e) {
      std::lock_guard lock(mu_);
      error_ = e.what();
      landed_cv_.notify_all();
    }
  }

  void landed() {
    std::lock_guard lock(mu_);
    ++landed_;
    landed_cv_.notify_all();
  }

  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::condition_variable landed_cv_;
  std::uint64_t landed_ = 0;  // guarded by mu_
  std::uint64_t seen_ = 0;    // guarded by mu_
  std::string error_;         // guarded by mu_
  std::vector<std::thread> threads_;
};

// A bank file with acc-1 ... acc-4 (1,000.00 each, so no transfer is ever refused) and acc-9.
struct BankFile {
  BankFile() {
    factum::EventStore store =
        factum::EventStore::open(db, factum::test::TempStore::fast_options());
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
  factum::EventStore store = factum::EventStore::open(db, factum::test::TempStore::fast_options());
  bank::Bank auditor(store);
  Writers writers(db, 2);
  std::vector<std::vector<std::string>> out;
  for (int i = 0; i < kAudits; ++i) {
    REQUIRE_MESSAGE(writers.await_progress(), "the writers stopped: ", writers.error());
    auditor.sync_read_models();
    out.push_back(bank::audit(store, auditor.registry()).differences);
  }
  writers.stop();
  REQUIRE_MESSAGE(writers.error().empty(), writers.error());
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
