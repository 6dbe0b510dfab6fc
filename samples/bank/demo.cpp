// samples/bank/demo.cpp — the made-up year of banking behind `factum-bank demo`.
#include "demo.hpp"

#include <array>
#include <chrono>
#include <random>
#include <set>

#include "bank.hpp"

namespace bank {
namespace {

constexpr std::array kFirstNames{"Ada",       "Alan", "Grace",    "Edsger",  "Barbara", "Donald",
                                 "Frances",   "Ken",  "Margaret", "Niklaus", "Radia",   "Tony",
                                 "Katherine", "John", "Hedy",     "Dennis",  "Lynn",    "Leslie"};
constexpr std::array kLastNames{"Lovelace", "Turing", "Hopper",   "Dijkstra", "Liskov",
                                "Knuth",    "Allen",  "Thompson", "Hamilton", "Wirth",
                                "Perlman",  "Hoare",  "Johnson",  "Backus",   "Lamarr",
                                "Ritchie",  "Conway", "Lamport"};

// A kind of payment: its memo and the range of its amounts, in whole units.
struct Kind {
  const char* memo;
  std::int64_t low;
  std::int64_t high;
};
constexpr std::array kDeposits{Kind{"salary", 1800, 4500}, Kind{"cash deposit", 20, 400},
                               Kind{"refund", 5, 150}};
constexpr std::array kWithdrawals{Kind{"rent", 600, 1500}, Kind{"groceries", 15, 180},
                                  Kind{"ATM", 20, 300}, Kind{"card payment", 5, 250},
                                  Kind{"electricity", 40, 160}};
constexpr std::array kTransfers{Kind{"dinner", 10, 120}, Kind{"rent share", 200, 700},
                                Kind{"loan repayment", 50, 500}, Kind{"gift", 20, 300}};

class HistoryMaker {
 public:
  HistoryMaker(factum::EventStore& store, const DemoOptions& options)
      : options_(options),
        rng_(options.seed),
        clock_(std::chrono::sys_days(std::chrono::year(2024) / 1 / 1) + std::chrono::hours(8)),
        step_(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::days(360)) /
              static_cast<std::int64_t>(demo_steps(options))),
        bank_(store, BankOptions{"demo", [this] { return clock_; }, 50}) {}

  DemoSummary run(const std::function<void()>& step) {
    for (int i = 1; i <= options_.accounts; ++i) {
      open_one("acc-" + std::to_string(i));
      tick(step);
    }
    for (int i = 0; i < options_.operations; ++i) {
      operate();
      tick(step);
    }
    return summary_;
  }

 private:
  void tick(const std::function<void()>& step) {
    clock_ += step_ / 2 + std::chrono::microseconds(static_cast<std::int64_t>(
                              rng_() % static_cast<std::uint64_t>(step_.count())));
    if (step) step();
  }

  std::uint64_t below(std::uint64_t n) { return rng_() % n; }
  const std::string& any_account() { return ids_[below(ids_.size())]; }
  Money amount(const Kind& k) {
    const auto span = static_cast<std::uint64_t>((k.high - k.low) * 100);
    return Money::from_minor(k.low * 100 + static_cast<std::int64_t>(below(span)));
  }
  template <class Kinds>
  const Kind& pick(const Kinds& kinds) {
    return kinds[below(kinds.size())];
  }

  void open_one(const std::string& id) {
    static constexpr std::array kLimits{0, 0, 0, 0, 0, 25000, 50000, 100000};
    const std::string owner = std::string(kFirstNames[below(kFirstNames.size())]) + " " +
                              kLastNames[below(kLastNames.size())];
    bank_.open(id, owner, Money::from_minor(kLimits[below(kLimits.size())]));
    bank_.deposit(id, amount(Kind{"opening deposit", 50, 2000}), "opening deposit");
    ids_.push_back(id);
    ++summary_.opened;
  }

  void operate() {
    const std::uint64_t r = below(100);
    try {
      if (r < 34) {
        deposit();
      } else if (r < 64) {
        withdraw();
      } else if (r < 97) {
        transfer();
      } else {
        close_one();
      }
    } catch (const Refused& refused) {
      ++summary_.refused;
      if (reasons_seen_.insert(refused.reason()).second) {
        summary_.refusals.emplace_back(refused.what());  // one example of each rule
      }
    }
  }

  void deposit() {
    const Kind& k = pick(kDeposits);
    // A salary comes with the employer's payment reference (SAL-0001, ...): booked once.
    const bool salary = &k == &kDeposits.front();
    const std::string reference = salary ? "SAL-" + four_digits(++salaries_) : std::string();
    bank_.deposit(any_account(), amount(k), k.memo, reference);
    if (salary && summary_.salary_reference.empty()) summary_.salary_reference = reference;
    ++summary_.deposits;
  }

  static std::string four_digits(int n) {
    const std::string digits = std::to_string(n);
    return std::string(digits.size() < 4 ? 4 - digits.size() : 0, '0') + digits;
  }

  void withdraw() {
    const Kind& k = pick(kWithdrawals);
    bank_.withdraw(any_account(), amount(k), k.memo);
    ++summary_.withdrawals;
  }

  void transfer() {
    const Kind& k = pick(kTransfers);
    const std::string& from = any_account();
    const std::string& to = any_account();
    if (from == to) return;
    const TransferResult t = bank_.transfer(from, to, amount(k), k.memo);
    ++(t.completed() ? summary_.transfers : summary_.reversed);
  }

  // Closes one open account (a few a year): its balance moves to another account first.
  void close_one() {
    if (summary_.closed >= options_.accounts / 25) return;
    const std::string id = any_account();
    const Account a = bank_.load(id);
    if (!a.is_open()) return;
    if (a.balance().positive()) {
      const std::string& heir = any_account();
      if (heir == id || !bank_.load(heir).is_open()) return;
      bank_.transfer(id, heir, a.balance(), "closing transfer");
    } else if (a.balance() < Money{}) {
      bank_.deposit(id, -a.balance(), "closing settlement");
    }
    bank_.close(id);
    ++summary_.closed;
  }

  DemoOptions options_;
  std::mt19937_64 rng_;
  factum::Timestamp clock_;
  std::chrono::microseconds step_;
  Bank bank_;
  std::vector<std::string> ids_;
  std::set<Refused::Reason> reasons_seen_;
  int salaries_ = 0;
  DemoSummary summary_;
};

}  // namespace

std::uint64_t demo_steps(const DemoOptions& options) {
  const int steps = options.accounts + options.operations;
  return steps > 0 ? static_cast<std::uint64_t>(steps) : 1;
}

DemoSummary create_history(factum::EventStore& store, const DemoOptions& options,
                           const std::function<void()>& step) {
  HistoryMaker maker(store, options);
  return maker.run(step);
}

}  // namespace bank
