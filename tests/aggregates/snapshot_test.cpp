// Snapshot policies, pruning, manual snapshots, and snapshot failures that never fail a save
// or a load.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "aggregates/bank_account.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace factum::test::bank;
using factum::test::TempStore;

namespace {

Snapshot snapshot_at(const std::string& stream, StreamVersion version) {
  Snapshot s;
  s.stream_id = stream;
  s.version = version;
  s.state = to_bytes("state-" + std::to_string(version));
  return s;
}

// Puts a view where the snapshots' table is (or will be) behind the SnapshotStore's back, through
// the store's own SQL handle (the same on either backend): every snapshot read and write fails.
void break_snapshot_table(EventStore& store) {
  store.write_sql([](Sql& sql) {
    sql.execute("DROP TABLE IF EXISTS factum_snapshots");
    sql.execute("CREATE VIEW factum_snapshots AS SELECT 1 AS broken");
  });
}

// Whether the store's database has a table named factum_snapshots.
bool has_snapshot_table(const EventStore& store) {
  bool found = false;
  store.read_sql([&](Sql& sql) { found = sql.object_type("factum_snapshots") == "table"; });
  return found;
}

std::vector<StreamVersion> versions(const SnapshotStore& snapshots, const std::string& stream) {
  std::vector<StreamVersion> out;
  for (const Snapshot& s : snapshots.newest(stream, 1u << 30, 100)) out.push_back(s.version);
  return out;
}

}  // namespace

TEST_CASE("SnapshotPolicy::due is true when a save crosses a multiple of every") {
  const SnapshotPolicy every10 = SnapshotPolicy::every_n(10);
  CHECK_FALSE(every10.due(0, 9));
  CHECK(every10.due(0, 10));
  CHECK(every10.due(9, 10));
  CHECK(every10.due(9, 11));
  CHECK_FALSE(every10.due(10, 19));
  CHECK(every10.due(5, 35));
  const SnapshotPolicy every1 = SnapshotPolicy::every_n(1);
  CHECK(every1.due(0, 1));
  CHECK(every1.due(41, 42));
  CHECK_FALSE(SnapshotPolicy::manual().due(0, 1000));
  CHECK_FALSE(SnapshotPolicy::every_n(0).due(0, 1000));
}

TEST_CASE("prune keeps the newest keep_last snapshots of one stream only") {
  TempStore t;
  SnapshotStore snapshots(t.store);
  for (StreamVersion v : {3, 1, 7, 5}) snapshots.save(snapshot_at("a-1", v));
  snapshots.save(snapshot_at("a-2", 1));
  CHECK(snapshots.prune("a-1", 5) == 0);
  CHECK(snapshots.prune("a-1", 2) == 2);
  CHECK(versions(snapshots, "a-1") == std::vector<StreamVersion>{7, 5});
  CHECK(snapshots.count("a-2") == 1);
  CHECK(snapshots.prune("a-1", 0) == 2);  // keep none
  CHECK(snapshots.count("a-1") == 0);
  CHECK(snapshots.count("a-2") == 1);
}

TEST_CASE("newest returns snapshots at or below a version, newest first, at most limit") {
  TempStore t;
  SnapshotStore snapshots(t.store);
  for (StreamVersion v = 1; v <= 6; ++v) snapshots.save(snapshot_at("a-1", v));
  const auto got = snapshots.newest("a-1", 4, 2);
  REQUIRE(got.size() == 2);
  CHECK(got[0].version == 4);
  CHECK(got[1].version == 3);
  CHECK(got[0].digest == sha256(got[0].state));
  CHECK(snapshots.newest("a-1", 0).empty());
  CHECK(snapshots.newest("unknown-1").empty());
}

TEST_CASE("a policy with keep_last prunes after each snapshot it writes") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  SnapshotStore snapshots(t.store);
  RepositoryOptions options;
  options.snapshots = SnapshotPolicy::every_n(3, 1);
  Repository<Account> accounts(t.store, registry, snapshots, options);
  accounts.execute("1", [](Account& a) { a.open("Ann", 0); });
  for (int i = 0; i < 10; ++i) accounts.execute("1", [](Account& a) { a.deposit(1); });
  CHECK(versions(snapshots, "account-1") == std::vector<StreamVersion>{9});
}

TEST_CASE("snapshot of an aggregate with unsaved events throws InvalidArgument") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  SnapshotStore snapshots(t.store);
  Repository<Account> accounts(t.store, registry, snapshots);
  Account a = accounts.load("1");
  a.open("Ann", 0);
  CHECK_THROWS_AS(accounts.snapshot(a), InvalidArgument);
  CHECK(snapshots.count("account-1") == 0);
  accounts.save(a);
  accounts.snapshot(a);
  CHECK(versions(snapshots, "account-1") == std::vector<StreamVersion>{1});
}

TEST_CASE("a snapshot write that fails never fails the save, and is counted and reported") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  SnapshotStore snapshots(t.store);
  std::vector<std::string> failed;
  std::vector<SnapshotIgnored> ignored;
  RepositoryOptions options;
  options.snapshots = SnapshotPolicy::every_n(1);
  options.on_snapshot_failed = [&](const std::string& stream, const std::exception&) {
    failed.push_back(stream);
  };
  options.on_snapshot_ignored = [&](const SnapshotIgnored& s) { ignored.push_back(s); };
  Repository<Account> accounts(t.store, registry, snapshots, options);
  accounts.execute("1", [](Account& a) { a.open("Ann", 0); });
  CHECK(snapshots.count("account-1") == 1);
  Account a = accounts.load("1");
  break_snapshot_table(t.store);
  a.deposit(5);
  CHECK(accounts.save(a).stream_version == 2);
  CHECK(accounts.snapshot_failures() == 1);
  CHECK(failed == std::vector<std::string>{"account-1"});
  CHECK(t.store.stream_version("account-1") == 2);
  // Loading passes over the unreadable snapshots and replays the events.
  CHECK(accounts.load("1").balance() == 5);
  CHECK(accounts.snapshots_ignored() == 1);
  REQUIRE(ignored.size() == 1);
  CHECK(ignored[0].reason.find("could not be read") != std::string::npos);
}

TEST_CASE("a hook that throws on a failed snapshot write does not fail the save") {
  TempStore t;
  EventRegistry registry;
  register_events(registry);
  SnapshotStore snapshots(t.store);
  RepositoryOptions options;
  options.snapshots = SnapshotPolicy::every_n(1);
  options.on_snapshot_failed = [](const std::string&, const std::exception&) {
    throw std::runtime_error("hook");
  };
  Repository<Account> accounts(t.store, registry, snapshots, options);
  Account a = accounts.load("1");
  break_snapshot_table(t.store);
  a.open("Ann", 0);
  CHECK(accounts.save(a).stream_version == 1);
  CHECK(accounts.snapshot_failures() == 1);
}

TEST_CASE("a SnapshotStore on a read-only store without the table reads nothing") {
  test::TempDir dir;
  const auto path = test::temp_store_location(dir);
  EventRegistry registry;
  register_events(registry);
  {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    Repository<Account> accounts(store, registry);
    accounts.execute("1", [](Account& a) { a.open("Ann", 0); });
    accounts.execute("1", [](Account& a) { a.deposit(3); });
  }
  StoreOptions read_only = TempStore::fast_options();
  read_only.read_only = true;
  EventStore store = EventStore::open(path, read_only);
  SnapshotStore snapshots(store);
  CHECK(snapshots.newest("account-1").empty());
  CHECK(snapshots.count("account-1") == 0);
  CHECK(snapshots.delete_all() == 0);
  Repository<Account> accounts(store, registry, snapshots);
  CHECK(accounts.load("1").balance() == 3);
  CHECK(accounts.snapshots_ignored() == 0);
  CHECK_FALSE(has_snapshot_table(store));
}

TEST_CASE("a SnapshotStore on a read-only store with the table reads its snapshots") {
  test::TempDir dir;
  const auto path = test::temp_store_location(dir);
  EventRegistry registry;
  register_events(registry);
  {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    SnapshotStore snapshots(store);
    Repository<Account> accounts(store, registry, snapshots);
    accounts.execute("1", [](Account& a) { a.open("Ann", 0); });
    accounts.snapshot(accounts.execute("1", [](Account& a) { a.deposit(3); }));
  }
  StoreOptions read_only = TempStore::fast_options();
  read_only.read_only = true;
  EventStore store = EventStore::open(path, read_only);
  SnapshotStore snapshots(store);
  CHECK(versions(snapshots, "account-1") == std::vector<StreamVersion>{2});
  Repository<Account> accounts(store, registry, snapshots);
  CHECK(accounts.load("1").balance() == 3);
}

TEST_CASE(
    "a SnapshotStore writes nothing until its first snapshot: loads leave the file as it was") {
  TempStore t;
  t.store.append("account-1", ExpectedVersion::any(), test::make_event("bank.Opened", "x"));
  EventRegistry registry;
  register_events(registry);
  SnapshotStore snapshots(t.store);
  Repository<Account> accounts(t.store, registry, snapshots);
  CHECK(accounts.load("nobody").version() == 0);
  CHECK(snapshots.count("account-nobody") == 0);
  CHECK(snapshots.delete_all() == 0);
  CHECK_FALSE(has_snapshot_table(t.store));
  snapshots.save(snapshot_at("account-1", 1));
  CHECK(has_snapshot_table(t.store));
  CHECK(snapshots.count("account-1") == 1);
}
