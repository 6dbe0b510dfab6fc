// Property: for random command sequences, a snapshot never changes a loaded state. Loading
// with snapshots, loading without them, and a plain in-memory model agree after every step
// and at every past version, whatever the snapshot policy, and still agree once every
// snapshot is deleted.
//
// The seed is printed on failure; rerun one with FACTUM_PROPERTY_SEED=<seed> (and
// FACTUM_PROPERTY_RUNS=1 to run only that sequence).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "aggregates/bank_account.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace factum::test::bank;
using factum::test::TempStore;

namespace {

// The model: an account's state as a plain struct, updated by hand.
struct State {
  bool opened = false;
  bool closed = false;
  std::string owner;
  std::int64_t limit = 0;
  std::int64_t balance = 0;
  std::int64_t movements = 0;
  friend bool operator==(const State&, const State&) = default;
  friend std::ostream& operator<<(std::ostream& os, const State& m) {
    return os << "{opened " << m.opened << ", closed " << m.closed << ", owner '" << m.owner
              << "', limit " << m.limit << ", balance " << m.balance << ", movements "
              << m.movements << "}";
  }
};

State state_of(const Account& a) {
  return {a.opened(), a.closed(), a.owner(), a.limit(), a.balance(), a.movements()};
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

// One account under test: its committed history (history[v] is the state at version v),
// and the aggregate being worked on with the model of its pending state.
struct Subject {
  std::vector<State> history{State{}};
  std::optional<Account> working;
  State working_state;
  std::vector<State> pending;  // the model's state after each pending event
};

class Sequence {
 public:
  Sequence(EventStore& store, const EventRegistry& registry, SnapshotStore& snapshots,
           std::uint64_t seed)
      : rng_(seed),
        snapshots_(snapshots),
        prefix_("s" + std::to_string(seed) + "x"),
        options_(random_options()),
        with_(store, registry, snapshots, options_),
        without_(store, registry) {}

  void run() {
    const int steps = pick(10, 60);
    for (int step = 0; step < steps; ++step) {
      CAPTURE(step);
      this->step();
      check_all();
    }
    for (int k = 0; k < kAccounts; ++k) save(k);
    check_all();
    snapshots_.delete_all();
    check_all();
    REQUIRE(with_.snapshots_ignored() == 0);
    REQUIRE(with_.snapshot_failures() == 0);
  }

 private:
  static constexpr int kAccounts = 3;

  std::int64_t pick(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  bool chance(int percent) { return pick(1, 100) <= percent; }
  std::string id(int k) const { return prefix_ + std::to_string(k); }

  RepositoryOptions random_options() {
    RepositoryOptions o;
    if (chance(80)) {
      o.snapshots = SnapshotPolicy::every_n(static_cast<std::uint64_t>(pick(1, 20)),
                                            static_cast<std::size_t>(pick(0, 3)));
    }
    return o;
  }

  void step() {
    const int k = static_cast<int>(pick(0, kAccounts - 1));
    Subject& s = subjects_[k];
    if (!s.working) {
      s.working = with_.load(id(k));
      s.working_state = s.history.back();
    }
    const auto raised = s.working->pending().size();
    command(*s.working, s.working_state);
    REQUIRE(state_of(*s.working) == s.working_state);
    if (s.working->pending().size() > raised) s.pending.push_back(s.working_state);
    REQUIRE(s.working->pending().size() == s.pending.size());
    if (chance(40)) save(k);
    if (chance(8)) manual_snapshot(k);
  }

  // Runs a random command on `a` and on the model; a refused command changes neither.
  void command(Account& a, State& m) {
    const std::int64_t cents = pick(-5, 300);
    const bool usable = m.opened && !m.closed;
    switch (pick(0, 9)) {
      case 0: {
        const std::string owner = "owner" + std::to_string(pick(0, 99));
        const std::int64_t limit = pick(0, 200);
        if (expect(!m.opened, [&] { a.open(owner, limit); }))
          m = State{true, false, owner, limit, 0, 0};
        break;
      }
      case 1:
        if (expect(usable, [&] { a.close(); })) m.closed = true;
        break;
      case 2:
      case 3:
      case 4:
        if (expect(usable && cents > 0 && m.balance - cents >= -m.limit,
                   [&] { a.withdraw(cents); })) {
          m.balance -= cents;
          ++m.movements;
        }
        break;
      default:
        if (expect(usable && cents > 0, [&] { a.deposit(cents); })) {
          m.balance += cents;
          ++m.movements;
        }
        break;
    }
  }

  // Runs `fn`, which must succeed when `allowed` and throw Refused (raising nothing) when not.
  template <class Fn>
  bool expect(bool allowed, Fn fn) {
    if (allowed) {
      fn();
      return true;
    }
    REQUIRE_THROWS_AS(fn(), Refused);
    return false;
  }

  void save(int k) {
    Subject& s = subjects_[k];
    if (!s.working) return;
    const auto before = s.working->loaded_version();
    with_.save(*s.working);
    REQUIRE(s.working->loaded_version() == before + s.pending.size());
    REQUIRE(s.working->pending().empty());
    s.history.insert(s.history.end(), s.pending.begin(), s.pending.end());
    s.pending.clear();
    REQUIRE(s.history.size() == s.working->version() + 1);
    REQUIRE(s.history.back() == s.working_state);
    s.working.reset();
  }

  void manual_snapshot(int k) {
    const Subject& s = subjects_[k];
    const auto v = static_cast<StreamVersion>(pick(0, static_cast<std::int64_t>(s.history.size())));
    if (v == 0) return;
    with_.snapshot(without_.load_at(id(k), v));
  }

  void check_all() {
    for (int k = 0; k < kAccounts; ++k) check(k);
  }

  void check(int k) {
    CAPTURE(k);
    const Subject& s = subjects_[k];
    const StreamVersion last = s.history.size() - 1;
    const Account a = with_.load(id(k));
    const Account b = without_.load(id(k));
    REQUIRE(a == b);
    REQUIRE(a.version() == last);
    REQUIRE(state_of(a) == s.history.back());
    const auto v = static_cast<StreamVersion>(pick(0, static_cast<std::int64_t>(last)));
    CAPTURE(v);
    const Account at = with_.load_at(id(k), v);
    REQUIRE(at == without_.load_at(id(k), v));
    REQUIRE(at.version() == v);
    REQUIRE(state_of(at) == s.history[v]);
  }

  std::mt19937_64 rng_;
  SnapshotStore& snapshots_;
  std::string prefix_;
  RepositoryOptions options_;
  Repository<Account> with_;
  Repository<Account> without_;
  std::map<int, Subject> subjects_;
};

}  // namespace

TEST_CASE("random command sequences load the same state with snapshots, without, and in memory") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  SnapshotStore snapshots(t.store);
  const std::uint64_t base = env_or("FACTUM_PROPERTY_SEED", std::random_device{}());
  // Fewer sequences on PostgreSQL: each load is a few round trips to the server, and the
  // postgres label must stay short (SQLite runs the 200).
  const std::uint64_t runs =
      env_or("FACTUM_PROPERTY_RUNS", factum::test::testing_postgres() ? 20 : 200);
  for (std::uint64_t i = 0; i < runs; ++i) {
    const std::uint64_t seed = base + i;
    INFO("seed " << seed << " (rerun: FACTUM_PROPERTY_SEED=" << seed << " FACTUM_PROPERTY_RUNS=1)");
    Sequence(t.store, registry, snapshots, seed).run();
  }
}
