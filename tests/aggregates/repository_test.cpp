// Aggregates and their repository: commands, save with expected versions, execute with
// retries, temporal loads, and snapshots as a cache that never changes loaded state.
#include <doctest/doctest.h>

#include "aggregates/bank_account.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace factum::test::bank;
using factum::test::TempStore;

TEST_CASE("a command raises events that apply at once and stay pending until saved") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  Repository<Account> accounts(t.store, registry);
  Account a = accounts.load("1");
  CHECK(a.version() == 0);
  CHECK_FALSE(a.opened());
  a.open("Ann", 0);
  a.deposit(500);
  CHECK(a.balance() == 500);
  CHECK(a.pending().size() == 2);
  CHECK(a.version() == 2);
  CHECK(a.loaded_version() == 0);
  CHECK(t.store.head_position() == 0);
  const AppendResult r = accounts.save(a);
  CHECK(r.stream_version == 2);
  CHECK(a.pending().empty());
  CHECK(a.loaded_version() == 2);
  CHECK(t.store.stream_version("account-1") == 2);
  CHECK(accounts.load("1") == a);
}

TEST_CASE("a command that breaks an invariant throws the domain's error and raises nothing") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  Repository<Account> accounts(t.store, registry);
  accounts.execute("1", [](Account& a) { a.open("Ann", 100); });
  CHECK_THROWS_AS(accounts.execute("1", [](Account& a) { a.withdraw(101); }), Refused);
  CHECK(t.store.stream_version("account-1") == 1);
  Account a = accounts.load("1");
  CHECK_THROWS_AS(a.withdraw(101), Refused);
  CHECK(a.pending().empty());
  a.withdraw(100);
  CHECK(a.balance() == -100);
}

TEST_CASE("save with a stale loaded version throws ConcurrencyError") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  Repository<Account> accounts(t.store, registry);
  accounts.execute("1", [](Account& a) { a.open("Ann", 0); });
  Account first = accounts.load("1");
  Account second = accounts.load("1");
  first.deposit(1);
  second.deposit(2);
  accounts.save(first);
  CHECK_THROWS_AS(accounts.save(second), ConcurrencyError);
  CHECK(accounts.load("1").balance() == 1);
}

TEST_CASE("save passes the command context as each event's metadata") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  Repository<Account> accounts(t.store, registry);
  Metadata context;
  context.actor = "teller-3";
  context.correlation_id = EventId::generate();
  accounts.execute(
      "1", [](Account& a) { a.open("Ann", 0); }, {}, context);
  const auto e = t.store.read_stream("account-1").to_vector().at(0);
  CHECK(e.metadata.actor == "teller-3");
  CHECK(e.metadata.correlation_id == context.correlation_id);
}

TEST_CASE("load_at and load_as_of give the state as it was") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  Repository<Account> accounts(t.store, registry);
  accounts.execute("1", [](Account& a) { a.open("Ann", 0); });
  accounts.execute("1", [](Account& a) { a.deposit(100); });
  const auto between = t.store.read_stream("account-1").to_vector().back().recorded_at;
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  accounts.execute("1", [](Account& a) { a.deposit(20); });
  CHECK(accounts.load_at("1", 2).balance() == 100);
  CHECK(accounts.load_at("1", 2).version() == 2);
  CHECK(accounts.load_at("1", 1).balance() == 0);
  CHECK(accounts.load_at("1", 99).balance() == 120);
  CHECK(accounts.load_as_of("1", between).balance() == 100);
  CHECK(accounts.load_as_of("1", Timestamp{}).version() == 0);
}

TEST_CASE("with snapshots, load uses the newest one and replays only the tail") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  SnapshotStore snapshots(t.store);
  std::vector<SnapshotIgnored> ignored;
  RepositoryOptions options;
  options.snapshots = SnapshotPolicy::every_n(10, 2);
  options.on_snapshot_ignored = [&](const SnapshotIgnored& s) { ignored.push_back(s); };
  Repository<Account> accounts(t.store, registry, snapshots, options);
  Repository<Account> plain(t.store, registry);
  accounts.execute("1", [](Account& a) { a.open("Ann", 0); });
  for (int i = 0; i < 34; ++i) accounts.execute("1", [&](Account& a) { a.deposit(i + 1); });
  CHECK(snapshots.count("account-1") == 2);  // at 10, 20, 30; pruned to the last 2
  CHECK(snapshots.newest("account-1").at(0).version == 30);
  CHECK(accounts.load("1") == plain.load("1"));
  CHECK(accounts.load_at("1", 25) == plain.load_at("1", 25));
  CHECK(ignored.empty());
  // Deleting every snapshot changes no loaded state.
  const Account before = accounts.load("1");
  snapshots.delete_all();
  CHECK(accounts.load("1") == before);
}

TEST_CASE("an old-schema or corrupt snapshot is ignored, reported, and the state is still right") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  SnapshotStore snapshots(t.store);
  std::vector<SnapshotIgnored> ignored;
  RepositoryOptions options;
  options.on_snapshot_ignored = [&](const SnapshotIgnored& s) { ignored.push_back(s); };
  Repository<Account> accounts(t.store, registry, snapshots, options);
  Repository<Account> plain(t.store, registry);
  accounts.execute("1", [](Account& a) { a.open("Ann", 0); });
  accounts.execute("1", [](Account& a) { a.deposit(7); });
  accounts.snapshot(accounts.load("1"));
  accounts.execute("1", [](Account& a) { a.deposit(5); });
  const Account truth = plain.load("1");
  // The snapshots are damaged through the store's own SQL handle: the same on either backend.
  const auto damage = [&](const std::string& sql, std::initializer_list<SqlValue> params) {
    t.store.write_sql([&](Sql& s) { s.execute(sql, params); });
  };
  SUBCASE("old schema version") {
    damage("UPDATE factum_snapshots SET schema_version = 0", {});
    CHECK(accounts.load("1") == truth);
    REQUIRE(ignored.size() == 1);
    CHECK(ignored[0].reason.find("schema version") != std::string::npos);
  }
  SUBCASE("bytes that do not match their digest") {
    damage("UPDATE factum_snapshots SET state = ?1", {Bytes(2, std::byte{0})});
    CHECK(accounts.load("1") == truth);
    REQUIRE(ignored.size() == 1);
    CHECK(ignored[0].reason.find("digest") != std::string::npos);
  }
  SUBCASE("bytes that match their digest but do not decode") {
    Snapshot bad;
    bad.stream_id = "account-1";
    bad.version = 2;
    bad.state = to_bytes("\x05");
    snapshots.save(bad);
    CHECK(accounts.load("1") == truth);
    REQUIRE(ignored.size() == 1);
    CHECK(ignored[0].reason.find("decode") != std::string::npos);
  }
  CHECK(accounts.snapshots_ignored() == 1);
}

TEST_CASE("execute under 8 racing threads loses no command") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  SnapshotStore snapshots(t.store);
  RepositoryOptions options;
  options.snapshots = SnapshotPolicy::every_n(7);
  Repository<Account> accounts(t.store, registry, snapshots, options);
  accounts.execute("1", [](Account& a) { a.open("Ann", 0); });
  constexpr int kThreads = 8;
  constexpr int kCommands = 15;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      RetryPolicy retry;
      retry.max_attempts = 1000;
      for (int j = 0; j < kCommands; ++j)
        accounts.execute(
            "1", [](Account& a) { a.deposit(1); }, retry);
    });
  }
  for (auto& th : threads) th.join();
  const Account a = accounts.load("1");
  CHECK(a.balance() == kThreads * kCommands);
  CHECK(a.version() == 1 + kThreads * kCommands);
  CHECK(t.store.verify().ok());
  MESSAGE("conflicts retried: " << accounts.conflicts_retried());
}

TEST_CASE(
    "loading an aggregate whose stream has a hole throws CorruptStoreError and saves nothing") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  Repository<Account> accounts(t.store, registry);
  accounts.execute("1", [](Account& a) { a.open("Ann", 0); });
  for (int i = 0; i < 3; ++i) accounts.execute("1", [](Account& a) { a.deposit(10); });
  // Version 2 (a deposit) deleted behind the library's back: the balance would read 20.
  t.store.write_sql([](Sql& sql) {
    sql.execute(sql.dialect() == SqlDialect::postgres
                    ? "DROP TRIGGER IF EXISTS events_are_immutable ON events"
                    : "DROP TRIGGER IF EXISTS events_are_permanent");
    sql.execute("DELETE FROM events WHERE position = 2");
  });
  try {
    accounts.load("1");
    FAIL("load did not throw");
  } catch (const CorruptStoreError& e) {
    CHECK(e.stream() == "account-1");
    CHECK(e.stream_version() == 2);
  }
  CHECK_THROWS_AS(accounts.execute("1", [](Account& a) { a.withdraw(15); }), CorruptStoreError);
  CHECK(t.store.head_position() == 4);
}
