// docs/examples/aggregates_example.cpp — the complete program of docs/aggregates.md: an
// aggregate with invariants, a Repository that loads, saves and executes commands, the
// command context as metadata, temporal loads, a stale save, and racing threads retried by
// execute. It checks its own results and exits 1 on any mismatch (ctest runs it, label
// "docs").
#include <factum/factum.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bank {

// The events: plain structs with a type name and a serialize (docs/events.md).
struct AccountOpened {
  static constexpr std::string_view event_type = "bank.AccountOpened";
  std::string owner;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& owner;
  }
};
struct MoneyDeposited {
  static constexpr std::string_view event_type = "bank.MoneyDeposited";
  std::int64_t cents = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& cents;
  }
};
struct MoneyWithdrawn {
  static constexpr std::string_view event_type = "bank.MoneyWithdrawn";
  std::int64_t cents = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& cents;
  }
};

// The domain's own error, thrown by a command that would break an invariant.
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Account : public factum::Aggregate<Account, AccountOpened, MoneyDeposited, MoneyWithdrawn> {
 public:
  static constexpr std::string_view category = "account";  // streams "account-<id>"

  // Commands: check every invariant first, then raise.
  void open(std::string owner) {
    if (open_) throw Refused("account " + id() + " is open already");
    raise(AccountOpened{std::move(owner)});
  }
  void deposit(std::int64_t cents) {
    require_open();
    if (cents <= 0) throw Refused("a deposit must be positive");
    raise(MoneyDeposited{cents});
  }
  void withdraw(std::int64_t cents) {
    require_open();
    if (cents <= 0 || cents > balance_) throw Refused("insufficient funds in " + id());
    raise(MoneyWithdrawn{cents});
  }

  // One apply per event type. They must be public: the base class calls them.
  void apply(const AccountOpened& e) {
    open_ = true;
    owner_ = e.owner;
  }
  void apply(const MoneyDeposited& e) { balance_ += e.cents; }
  void apply(const MoneyWithdrawn& e) { balance_ -= e.cents; }

  const std::string& owner() const { return owner_; }
  std::int64_t balance() const { return balance_; }

 private:
  void require_open() const {
    if (!open_) throw Refused("account " + id() + " is not open");
  }
  bool open_ = false;
  std::string owner_;
  std::int64_t balance_ = 0;
};

}  // namespace bank

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok   " : "FAIL ") << what << "\n";
  if (!ok) ++failures;
}

}  // namespace

int main() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("factum-aggregates-example-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  {
    factum::EventStore store = factum::EventStore::open(dir / "bank.db");
    factum::EventRegistry registry;
    registry.add<bank::AccountOpened>().add<bank::MoneyDeposited>().add<bank::MoneyWithdrawn>();
    registry.validate();
    factum::Repository<bank::Account> accounts(store, registry);

    // load, run commands, save.
    bank::Account a = accounts.load("42");  // no events yet: a fresh aggregate at version 0
    check(a.version() == 0, "a new stream loads at version 0");
    a.open("Ann");
    a.deposit(500);
    check(a.balance() == 500 && a.pending().size() == 2, "raise applies at once, kept pending");
    accounts.save(a);
    check(store.stream_version("account-42") == 2 && a.pending().empty(), "save appends them");

    // execute: load, run, save, retry on conflict. A refused command saves nothing.
    factum::Metadata context;
    context.actor = "teller-7";
    context.correlation_id = factum::EventId::generate();
    accounts.execute(
        "42", [](bank::Account& acc) { acc.withdraw(200); }, {}, context);
    bool refused = false;
    try {
      accounts.execute("42", [](bank::Account& acc) { acc.withdraw(10'000); });
    } catch (const bank::Refused&) {
      refused = true;
    }
    check(refused && store.stream_version("account-42") == 3, "a refused command saves nothing");
    const auto last = store.read_stream("account-42").to_vector().back();
    check(
        last.metadata.actor == "teller-7" && last.metadata.correlation_id == context.correlation_id,
        "the command context is each event's metadata");

    // Temporal loads.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    accounts.execute("42", [](bank::Account& acc) { acc.deposit(1); });
    check(accounts.load("42").balance() == 301, "load gives the current state");
    check(accounts.load_at("42", 2).balance() == 500, "load_at gives the state at a version");
    check(accounts.load_as_of("42", last.recorded_at).balance() == 300,
          "load_as_of gives the state at a time");

    // A stale save throws ConcurrencyError; execute would load again and rerun instead.
    bank::Account first = accounts.load("42");
    bank::Account second = accounts.load("42");
    first.deposit(1);
    second.deposit(2);
    accounts.save(first);
    bool conflict = false;
    try {
      accounts.save(second);
    } catch (const factum::ConcurrencyError&) {
      conflict = true;
    }
    check(conflict, "a save from a stale load throws ConcurrencyError");

    // Racing threads: execute retries each conflict, so no command is lost.
    const std::int64_t before = accounts.load("42").balance();
    factum::RetryPolicy retry;
    retry.max_attempts = 1000;
    retry.backoff = std::chrono::milliseconds(1);
    std::vector<std::thread> tellers;
    for (int t = 0; t < 4; ++t) {
      tellers.emplace_back([&] {
        for (int i = 0; i < 10; ++i)
          accounts.execute(
              "42", [](bank::Account& acc) { acc.deposit(1); }, retry);
      });
    }
    for (auto& t : tellers) t.join();
    check(accounts.load("42").balance() == before + 40, "40 racing deposits, none lost");
    std::cout << "conflicts retried: " << accounts.conflicts_retried() << "\n";
  }
  std::filesystem::remove_all(dir);
  std::cout << (failures == 0 ? "all checks passed\n" : "some checks FAILED\n");
  return failures == 0 ? 0 : 1;
}
