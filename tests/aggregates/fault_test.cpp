// Injected storage faults (tests/support/fault_vfs.hpp) on snapshots: a snapshot is a cache,
// so a failing snapshot write or read never fails a save or a load, never leaves half a
// snapshot, and never changes a loaded state.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "aggregates/bank_account.hpp"
#include "support/fault_vfs.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace factum::test::bank;
using factum::test::FaultFile;
using factum::test::FaultInjection;
using factum::test::FaultOp;
using factum::test::TempStore;
namespace codes = factum::test::fault_codes;

namespace {

Snapshot snapshot_at(const std::string& stream, StreamVersion version, std::size_t size = 16) {
  Snapshot s;
  s.stream_id = stream;
  s.version = version;
  s.state = to_bytes(std::string(size, static_cast<char>('a' + version % 26)));
  return s;
}

std::vector<StreamVersion> versions(const SnapshotStore& snapshots, const std::string& stream) {
  std::vector<StreamVersion> out;
  for (const Snapshot& s : snapshots.newest(stream, 1u << 30, 100)) out.push_back(s.version);
  return out;
}

// A repository with snapshots and one without, on the same store, for comparing loads.
struct Bank {
  explicit Bank(EventStore& store, SnapshotPolicy policy = SnapshotPolicy::manual())
      : snapshots(store) {
    register_events(registry);
    RepositoryOptions options;
    options.snapshots = policy;
    options.on_snapshot_failed = [this](const std::string& stream, const std::exception& e) {
      failures.push_back(stream + ": " + e.what());
    };
    options.on_snapshot_ignored = [this](const SnapshotIgnored& s) { ignored.push_back(s); };
    accounts.emplace(store, registry, snapshots, options);
    plain.emplace(store, registry);
  }
  EventRegistry registry;
  SnapshotStore snapshots;
  std::vector<std::string> failures;
  std::vector<SnapshotIgnored> ignored;
  std::optional<Repository<Account>> accounts;
  std::optional<Repository<Account>> plain;
};

}  // namespace

TEST_CASE("a snapshot save whose commit fails throws StorageError and keeps the older snapshot") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  SnapshotStore snapshots(t.store);
  snapshots.save(snapshot_at("account-1", 5));
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(snapshots.save(snapshot_at("account-1", 10)), StorageError);
  CHECK(fault.spent());
  CHECK(versions(snapshots, "account-1") == std::vector<StreamVersion>{5});
  snapshots.save(snapshot_at("account-1", 10));
  CHECK(versions(snapshots, "account-1") == std::vector<StreamVersion>{10, 5});
}

TEST_CASE("a snapshot save on a full disk leaves no half-written snapshot") {
  FaultInjection fault;
  TempStore t;
  SnapshotStore snapshots(t.store);
  snapshots.save(snapshot_at("doc-1", 1, 100000));
  fault.fail(FaultOp::write, 10, codes::kFull, FaultInjection::kForever, FaultFile::wal);
  try {
    snapshots.save(snapshot_at("doc-1", 2, 200000));  // ~50 pages: fails part way
    FAIL("expected StorageError");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::full);
  }
  fault.clear();
  const auto all = snapshots.newest("doc-1", 100, 100);
  REQUIRE(all.size() == 1);
  CHECK(all[0].version == 1);
  CHECK(all[0].state.size() == 100000);
  CHECK(sha256(all[0].state) == all[0].digest);
}

TEST_CASE("a snapshot whose commit fails never fails the save: the events are committed") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  Bank bank(t.store, SnapshotPolicy::every_n(1));
  bank.accounts->execute("1", [](Account& a) { a.open("Ann", 0); });
  Account a = bank.accounts->load("1");
  a.deposit(5);
  // The first WAL sync commits the events, the second the snapshot.
  fault.fail(FaultOp::sync, 2, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK(bank.accounts->save(a).stream_version == 2);
  CHECK(fault.spent());
  CHECK(bank.accounts->snapshot_failures() == 1);
  REQUIRE(bank.failures.size() == 1);
  CHECK(bank.failures[0].find("account-1") != std::string::npos);
  CHECK(t.store.stream_version("account-1") == 2);
  CHECK(versions(bank.snapshots, "account-1") == std::vector<StreamVersion>{1});
  CHECK(bank.accounts->load("1").balance() == 5);
  CHECK(bank.accounts->load("1") == bank.plain->load("1"));
}

TEST_CASE("after failed snapshot writes, load uses the older snapshot and replays the rest") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  Bank bank(t.store, SnapshotPolicy::every_n(5));
  bank.accounts->execute("1", [](Account& a) { a.open("Ann", 0); });
  for (int i = 0; i < 6; ++i) bank.accounts->execute("1", [&](Account& a) { a.deposit(i + 1); });
  REQUIRE(versions(bank.snapshots, "account-1") == std::vector<StreamVersion>{5});
  // Whenever a snapshot is due, its commit (the one after the events') fails.
  int saved = 0;
  for (int i = 0; i < 10; ++i) {
    Account a = bank.accounts->load("1");
    a.deposit(100);
    const StreamVersion before = a.loaded_version();
    if (SnapshotPolicy::every_n(5).due(before, before + 1)) {
      fault.fail(FaultOp::sync, 2, codes::kIoErrFsync, 1, FaultFile::wal);
    }
    bank.accounts->save(a);
    ++saved;
    fault.clear();
  }
  CHECK(saved == 10);
  CHECK(bank.accounts->snapshot_failures() == 2);  // at 10 and 15
  CHECK(versions(bank.snapshots, "account-1") == std::vector<StreamVersion>{5});
  CHECK(bank.accounts->load("1") == bank.plain->load("1"));
  CHECK(bank.accounts->load("1").balance() == 21 + 1000);
  CHECK(bank.ignored.empty());
}

TEST_CASE("an append that fails in save writes no snapshot and keeps the events pending") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  Bank bank(t.store, SnapshotPolicy::every_n(1));
  bank.accounts->execute("1", [](Account& a) { a.open("Ann", 0); });
  Account a = bank.accounts->load("1");
  a.deposit(7);
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(bank.accounts->save(a), StorageError);
  CHECK(a.pending().size() == 1);
  CHECK(a.loaded_version() == 1);
  CHECK(t.store.stream_version("account-1") == 1);
  CHECK(versions(bank.snapshots, "account-1") == std::vector<StreamVersion>{1});
  CHECK(bank.accounts->snapshot_failures() == 0);
  // Saving again once the disk is back lands the events and the snapshot.
  CHECK(bank.accounts->save(a).stream_version == 2);
  CHECK(versions(bank.snapshots, "account-1") == std::vector<StreamVersion>{2, 1});
  CHECK(bank.accounts->load("1").balance() == 7);
}

TEST_CASE("a load whose snapshot read fails passes over the snapshots and replays the events") {
  FaultInjection fault;
  TempStore t;
  Bank bank(t.store, SnapshotPolicy::every_n(3));
  bank.accounts->execute("1", [](Account& a) { a.open("Ann", 0); });
  for (int i = 0; i < 4; ++i) bank.accounts->execute("1", [&](Account& a) { a.deposit(10); });
  REQUIRE(bank.snapshots.count("account-1") == 1);
  const Account expected = bank.plain->load("1");
  // The first shared-memory lock of the load is the snapshots' read transaction.
  fault.fail(FaultOp::shm_lock, 1, codes::kIoErrShmLock);
  const Account loaded = bank.accounts->load("1");
  CHECK(fault.spent());
  CHECK(loaded == expected);
  CHECK(bank.accounts->snapshots_ignored() == 1);
  REQUIRE(bank.ignored.size() == 1);
  CHECK(bank.ignored[0].reason.find("could not be read") != std::string::npos);
  CHECK(bank.accounts->load("1") == expected);  // and the snapshot serves again
  CHECK(bank.accounts->snapshots_ignored() == 1);
}

TEST_CASE("a prune whose commit fails deletes no snapshot") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  SnapshotStore snapshots(t.store);
  for (StreamVersion v : {1, 2, 3, 4}) snapshots.save(snapshot_at("a-1", v));
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(snapshots.prune("a-1", 1), StorageError);
  CHECK(versions(snapshots, "a-1") == std::vector<StreamVersion>{4, 3, 2, 1});
  CHECK(snapshots.prune("a-1", 1) == 3);
  CHECK(versions(snapshots, "a-1") == std::vector<StreamVersion>{4});
}

TEST_CASE("a first snapshot whose table cannot be created throws StorageError and the next works") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  t.store.append("a-1", ExpectedVersion::any(), test::make_event());
  SnapshotStore snapshots(t.store);  // writes nothing: its table comes with its first save
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(snapshots.save(snapshot_at("a-1", 1)), StorageError);
  CHECK(fault.spent());
  CHECK(snapshots.count("a-1") == 0);
  snapshots.save(snapshot_at("a-1", 1));
  CHECK(snapshots.count("a-1") == 1);
}
