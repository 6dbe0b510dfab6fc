// Injected storage faults (tests/support/fault_vfs.hpp) on the writer, reads and opening: each
// fault gives a clear StorageError, loses nothing acknowledged, writes nothing half, and
// leaves the store usable once the fault is gone.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/fault_vfs.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::FaultFile;
using factum::test::FaultInjection;
using factum::test::FaultOp;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::TempDir;
using factum::test::TempStore;
namespace codes = factum::test::fault_codes;

namespace {

StoreOptions short_busy_timeout() {
  StoreOptions o = TempStore::fast_options();
  o.busy_timeout = std::chrono::milliseconds(100);
  return o;
}

// Runs `fn`, which must throw StorageError of `kind` naming `file`; returns the message.
template <class Fn>
std::string storage_error(Fn&& fn, StorageError::Kind kind, const std::filesystem::path& file) {
  try {
    fn();
  } catch (const StorageError& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(e.kind() == kind, what);
    CHECK_MESSAGE(what.find(file.string()) != std::string::npos, what);
    return what;
  } catch (const std::exception& e) {
    FAIL("expected StorageError, got: " << e.what());
  }
  FAIL("expected StorageError, nothing was thrown");
  return {};
}

// The log is intact: the chain verifies, positions run 1..head and every stream's versions
// run 1..n without gaps.
void check_intact(const EventStore& store) {
  const VerifyResult v = store.verify();
  CHECK_MESSAGE(v.ok(), v.message);
  Position expected_position = 0;
  std::map<std::string, StreamVersion> versions;
  for (const RecordedEvent& e : store.read_all()) {
    CHECK(e.position == ++expected_position);
    CHECK(e.stream_version == ++versions[e.stream_id]);
  }
  CHECK(store.head_position() == expected_position);
  for (const auto& [stream, version] : versions) CHECK(store.stream_version(stream) == version);
}

bool stored(const EventStore& store, const std::vector<EventData>& events) {
  for (const EventData& e : events) {
    if (!store.read_event(e.id)) return false;
  }
  return true;
}

bool none_stored(const EventStore& store, const std::vector<EventData>& events) {
  for (const EventData& e : events) {
    if (store.read_event(e.id)) return false;
  }
  return true;
}

// Events with payloads of `size` bytes (several pages each).
std::vector<EventData> large_events(std::size_t n, std::size_t size) {
  std::vector<EventData> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(make_event("test.Large", std::string(size, static_cast<char>('a' + i % 26))));
  }
  return out;
}

// Makes the store's schema (a new store is made by its first write that commits) without an
// event, so that the faults below meet the store's write-ahead log, not the making of the store.
void make_store(TempStore& t) {
  t.store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE made (x INTEGER)"); });
}

// After a fault: the store takes appends again, its log is intact, and it reopens the same.
void check_usable_after(TempStore& t, const std::string& stream) {
  const StreamVersion before = t.store.stream_version(stream);
  const AppendResult r = t.store.append(stream, ExpectedVersion::exact(before), make_event());
  CHECK(r.stream_version == before + 1);
  check_intact(t.store);
  const Position head = t.store.head_position();
  t.store = EventStore::open(t.path, t.store.options());
  CHECK(t.store.head_position() == head);
  check_intact(t.store);
}

}  // namespace

// ---- appends -----------------------------------------------------------------------------

TEST_CASE("an fsync failure at commit fails the append with StorageError and writes nothing") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  t.store.append("account-1", ExpectedVersion::no_stream(), make_events(2));
  const auto batch = make_events(3);
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  storage_error([&] { t.store.append("account-1", ExpectedVersion::exact(2), batch); },
                StorageError::Kind::io, t.path);
  CHECK(fault.spent());
  CHECK(t.store.stream_version("account-1") == 2);
  CHECK(t.store.head_position() == 2);
  CHECK(none_stored(t.store, batch));
  check_usable_after(t, "account-1");
}

TEST_CASE("delayed syncs make each durable commit wait, and change nothing stored") {
  // The shim behind factum_bench --sync-latency-us: a disk whose flush costs 30 ms.
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  t.store.append("account-1", ExpectedVersion::no_stream(), make_events(1));
  fault.delay_syncs(std::chrono::milliseconds(30));
  const std::uint64_t syncs = fault.calls(FaultOp::sync);
  const auto start = std::chrono::steady_clock::now();
  t.store.append("account-1", ExpectedVersion::exact(1), make_events(2));
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(fault.calls(FaultOp::sync) > syncs);        // the commit synced
  CHECK(took >= std::chrono::milliseconds(30));     // and waited for the latency (a lower bound)
  fault.delay_syncs(std::chrono::microseconds(0));  // off again
  CHECK(t.store.stream_version("account-1") == 3);
  check_intact(t.store);
  CHECK_THROWS_AS(fault.delay_syncs(std::chrono::microseconds(-1)), std::invalid_argument);
}

TEST_CASE("an fsync failure at commit tells the append's outcome notice rolled_back") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  make_store(t);
  std::vector<AppendOutcome> heard;  // appends run on this thread: no lock needed
  boost::signals2::scoped_connection slot = t.store.on_appending().connect(
      [&](AppendTransaction& tx) { tx.on_outcome([&](AppendOutcome o) { heard.push_back(o); }); });
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(t.store.append("account-1", ExpectedVersion::no_stream(), make_events(2)),
                  StorageError);
  CHECK(fault.spent());
  CHECK(heard == std::vector<AppendOutcome>{AppendOutcome::rolled_back});
  t.store.append("account-1", ExpectedVersion::no_stream(), make_events(1));
  CHECK(heard == std::vector<AppendOutcome>{AppendOutcome::rolled_back, AppendOutcome::committed});
}

TEST_CASE("a WAL write failure fails a single append with StorageError and writes nothing") {
  FaultInjection fault;
  TempStore t;
  t.store.append("account-1", ExpectedVersion::any(), make_event());
  const EventData e = make_event();
  fault.fail(FaultOp::write, 1, codes::kIoErrWrite, 1, FaultFile::wal);
  storage_error([&] { t.store.append("account-1", ExpectedVersion::exact(1), e); },
                StorageError::Kind::io, t.path);
  CHECK(fault.spent());
  CHECK_FALSE(t.store.read_event(e.id));
  CHECK(t.store.stream_version("account-1") == 1);
  check_usable_after(t, "account-1");
}

TEST_CASE("a WAL write failure in the middle of a large batch writes none of the batch") {
  FaultInjection fault;
  TempStore t;
  t.store.append("doc-1", ExpectedVersion::any(), make_event());
  const auto batch = large_events(40, 10000);  // ~100 pages of WAL
  fault.fail(FaultOp::write, 50, codes::kIoErrWrite, 1, FaultFile::wal);
  storage_error([&] { t.store.append("doc-1", ExpectedVersion::exact(1), batch); },
                StorageError::Kind::io, t.path);
  REQUIRE(fault.spent());
  CHECK(none_stored(t.store, batch));
  CHECK(t.store.head_position() == 1);
  CHECK(t.store.read_stream("doc-1").to_vector().size() == 1);
  check_usable_after(t, "doc-1");
}

TEST_CASE("a full disk fails the append with StorageError kind full and writes nothing") {
  FaultInjection fault;
  TempStore t;
  t.store.append("account-1", ExpectedVersion::any(), make_event());
  const auto batch = make_events(5);
  fault.fail(FaultOp::write, 1, codes::kFull, 1, FaultFile::wal);
  const std::string what =
      storage_error([&] { t.store.append("account-1", ExpectedVersion::any(), batch); },
                    StorageError::Kind::full, t.path);
  CHECK(what.find("full") != std::string::npos);
  CHECK(none_stored(t.store, batch));
  check_usable_after(t, "account-1");
}

TEST_CASE("a disk that stays full fails every append until space returns, then appends resume") {
  FaultInjection fault;
  TempStore t;
  t.store.append("account-1", ExpectedVersion::any(), make_event());
  fault.fail(FaultOp::write, 1, codes::kFull, FaultInjection::kForever, FaultFile::wal);
  for (int i = 0; i < 3; ++i) {
    storage_error([&] { t.store.append("account-1", ExpectedVersion::exact(1), make_event()); },
                  StorageError::Kind::full, t.path);
  }
  fault.clear();
  CHECK(t.store.stream_version("account-1") == 1);
  check_usable_after(t, "account-1");
}

TEST_CASE("a write lock that stays busy past busy_timeout fails the append with kind busy") {
  FaultInjection fault;
  TempStore t(short_busy_timeout());
  t.store.append("account-1", ExpectedVersion::any(), make_event());
  const EventData e = make_event();
  fault.fail(FaultOp::shm_write_lock, 1, codes::kBusy, FaultInjection::kForever);
  const auto start = std::chrono::steady_clock::now();
  storage_error([&] { t.store.append("account-1", ExpectedVersion::exact(1), e); },
                StorageError::Kind::busy, t.path);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(50));
  fault.clear();
  CHECK_FALSE(t.store.read_event(e.id));
  check_usable_after(t, "account-1");
}

TEST_CASE("a write lock that is busy for a moment is waited for and the append succeeds") {
  FaultInjection fault;
  TempStore t;
  t.store.append("account-1", ExpectedVersion::any(), make_event());
  fault.fail(FaultOp::shm_write_lock, 1, codes::kBusy, 3);
  const AppendResult r = t.store.append("account-1", ExpectedVersion::exact(1), make_event());
  CHECK(fault.spent());
  CHECK(r == AppendResult{2, 2, 2});
  check_intact(t.store);
}

TEST_CASE("an I/O error taking the write lock fails the append with StorageError kind io") {
  FaultInjection fault;
  TempStore t;
  t.store.append("account-1", ExpectedVersion::any(), make_event());
  const EventData e = make_event();
  fault.fail(FaultOp::shm_write_lock, 1, codes::kIoErrShmLock);
  storage_error([&] { t.store.append("account-1", ExpectedVersion::exact(1), e); },
                StorageError::Kind::io, t.path);
  CHECK(fault.spent());
  CHECK_FALSE(t.store.read_event(e.id));
  check_usable_after(t, "account-1");
}

TEST_CASE("an append_multi whose commit fails writes none of its streams") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  t.store.append("from-1", ExpectedVersion::any(), make_event());
  std::vector<StreamAppend> appends{{"from-1", ExpectedVersion::exact(1), make_events(2)},
                                    {"to-1", ExpectedVersion::no_stream(), make_events(2)}};
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  storage_error([&] { t.store.append_multi(appends); }, StorageError::Kind::io, t.path);
  CHECK(none_stored(t.store, appends[0].events));
  CHECK(none_stored(t.store, appends[1].events));
  CHECK(t.store.stream_version("from-1") == 1);
  CHECK(t.store.stream_version("to-1") == 0);
  // The same appends succeed once the disk is back.
  const auto results = t.store.append_multi(appends);
  CHECK(results[0].stream_version == 3);
  CHECK(results[1].stream_version == 2);
  check_usable_after(t, "to-1");
}

TEST_CASE("a batch retried after a failed commit lands exactly once") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  make_store(t);
  const auto batch = make_events(4);
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  storage_error([&] { t.store.append("order-9", ExpectedVersion::no_stream(), batch); },
                StorageError::Kind::io, t.path);
  const AppendResult first = t.store.append("order-9", ExpectedVersion::no_stream(), batch);
  CHECK(first == AppendResult{4, 1, 4});
  // A second retry (the caller did not see the first answer) is recognised and writes nothing.
  CHECK(t.store.append("order-9", ExpectedVersion::no_stream(), batch) == first);
  CHECK(t.store.head_position() == 4);
  check_intact(t.store);
}

TEST_CASE("a failed append does not wake on_appended slots") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  make_store(t);
  std::atomic<int> notified{0};
  boost::signals2::scoped_connection c =
      t.store.on_appended().connect([&](const std::vector<RecordedEvent>&) { ++notified; });
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(t.store.append("a-1", ExpectedVersion::any(), make_event()), StorageError);
  CHECK(notified == 0);
  t.store.append("a-1", ExpectedVersion::any(), make_event());
  CHECK(notified == 1);
}

TEST_CASE("a commit failure rolls back what on_appending slots wrote with the events") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  t.store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE seen (position INTEGER)"); });
  boost::signals2::scoped_connection c = t.store.on_appending().connect([](AppendTransaction& tx) {
    for (const RecordedEvent& e : tx.events()) {
      tx.sql().execute("INSERT INTO seen VALUES (?1)", {static_cast<std::int64_t>(e.position)});
    }
  });
  t.store.append("a-1", ExpectedVersion::any(), make_events(2));
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(t.store.append("a-1", ExpectedVersion::any(), make_events(3)), StorageError);
  auto seen = [&] {
    std::int64_t n = 0;
    t.store.read_sql([&](Sql& sql) { n = sql.query_integer("SELECT count(*) FROM seen").value(); });
    return n;
  };
  CHECK(seen() == 2);
  t.store.append("a-1", ExpectedVersion::any(), make_event());
  CHECK(seen() == 3);
  check_intact(t.store);
}

TEST_CASE("a failing checkpoint after a commit does not fail or lose the acknowledged append") {
  FaultInjection fault;
  StoreOptions options = TempStore::durable_options();
  options.checkpoint_pages = 1000;
  TempStore t(options);
  make_store(t);
  // The checkpoint (copying the WAL into the database file, after the commit) cannot sync the
  // database file; the appends themselves only sync the WAL.
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, FaultInjection::kForever, FaultFile::main_db);
  std::vector<EventData> all;
  for (int i = 0; i < 12; ++i) {  // ~1200 pages: past the 1000-page checkpoint
    auto batch = large_events(10, 40000);
    CHECK_NOTHROW(t.store.append("doc-1", ExpectedVersion::any(), batch));
    all.insert(all.end(), batch.begin(), batch.end());
  }
  CHECK(fault.injected() > 0);  // a checkpoint did fail
  fault.clear();
  CHECK(stored(t.store, all));
  check_usable_after(t, "doc-1");
  CHECK(stored(t.store, all));
}

// ---- group commit ------------------------------------------------------------------------

TEST_CASE("a group commit that fails fails every append of the group and loses none acknowledged") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  constexpr int kThreads = 8;
  // The first append's slot holds the write lock until every other thread is queued behind
  // it, so they commit as one group; that group's slot arms the fault for its commit.
  std::atomic<int> started{0};
  std::atomic<int> hook_calls{0};
  std::mutex mu;
  std::set<std::string> failing_group;  // streams appended in the transaction that fails
  boost::signals2::scoped_connection c = t.store.on_appending().connect([&](AppendTransaction& tx) {
    const int call = ++hook_calls;
    if (call == 1) {
      while (started < kThreads) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      return;
    }
    if (fault.injected() > 0) return;  // after the failed commit
    if (call == 2) fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
    std::lock_guard lock(mu);
    failing_group.insert(tx.events().front().stream_id);
  });
  std::vector<std::vector<EventData>> batches;
  for (int i = 0; i < kThreads; ++i) batches.push_back(make_events(2, "t" + std::to_string(i)));
  std::vector<std::optional<AppendResult>> results(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      if (i > 0) {
        while (hook_calls == 0) std::this_thread::yield();  // thread 0 leads
      }
      ++started;
      try {
        results[i] =
            t.store.append("t-" + std::to_string(i), ExpectedVersion::no_stream(), batches[i]);
      } catch (const StorageError& e) {
        errors[i] = e.what();
      }
    });
    if (i == 0) {
      while (hook_calls == 0) std::this_thread::yield();
    }
  }
  for (auto& th : threads) th.join();
  c.disconnect();
  CHECK(fault.injected() == 1);
  CHECK(failing_group.size() > 1);  // the failing commit was a group of several
  for (int i = 0; i < kThreads; ++i) {
    const std::string stream = "t-" + std::to_string(i);
    CAPTURE(stream);
    if (failing_group.count(stream) != 0) {
      CHECK_FALSE(results[i]);
      CHECK(errors[i].find(t.path.string()) != std::string::npos);
      CHECK(none_stored(t.store, batches[i]));
      CHECK(t.store.stream_version(stream) == 0);
    } else {
      REQUIRE(results[i]);
      CHECK(results[i]->stream_version == 2);
      const auto events = t.store.read_stream(stream).to_vector();
      REQUIRE(events.size() == 2);
      CHECK(events[0].id == batches[i][0].id);
      CHECK(events[0].position == results[i]->first_position);
      CHECK(events[1].position == results[i]->last_position);
    }
  }
  check_usable_after(t, "t-0");
}

TEST_CASE("appends from many threads while commits fail now and then lose nothing acknowledged") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  constexpr int kThreads = 4;
  constexpr int kPerThread = 25;
  // Every third WAL sync fails, for the whole run.
  std::atomic<bool> stop{false};
  std::thread injector([&] {
    while (!stop) {
      if (fault.spent()) {
        fault.clear();
        fault.fail(FaultOp::sync, 3, codes::kIoErrFsync, 1, FaultFile::wal);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::mutex mu;
  std::vector<std::pair<EventId, AppendResult>> acknowledged;
  std::vector<EventId> failed;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kPerThread; ++n) {
        const EventData e = make_event("test.Happened", std::to_string(i * 1000 + n));
        try {
          const AppendResult r = t.store.append("shared-1", ExpectedVersion::any(), e);
          std::lock_guard lock(mu);
          acknowledged.emplace_back(e.id, r);
        } catch (const StorageError&) {
          std::lock_guard lock(mu);
          failed.push_back(e.id);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  injector.join();
  fault.clear();
  CHECK(fault.injected() > 0);
  for (const auto& [id, r] : acknowledged) {
    const auto e = t.store.read_event(id);
    REQUIRE(e);
    CHECK(e->position == r.first_position);
    CHECK(e->stream_version == r.stream_version);
  }
  for (const EventId& id : failed) CHECK_FALSE(t.store.read_event(id));
  CHECK(t.store.stream_version("shared-1") == acknowledged.size());
  check_usable_after(t, "shared-1");
}

// ---- write_sql ---------------------------------------------------------------------------

TEST_CASE("write_sql whose commit fails rolls back its changes and throws StorageError") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  t.store.write_sql([](Sql& sql) {
    sql.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)");
    sql.execute("INSERT INTO kv VALUES ('a', 1)");
  });
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  storage_error(
      [&] {
        t.store.write_sql([](Sql& sql) {
          sql.execute("UPDATE kv SET v = 2 WHERE k = 'a'");
          sql.execute("INSERT INTO kv VALUES ('b', 1)");
        });
      },
      StorageError::Kind::io, t.path);
  std::int64_t sum = 0;
  t.store.read_sql([&](Sql& sql) { sum = sql.query_integer("SELECT sum(v) FROM kv").value(); });
  CHECK(sum == 1);
  t.store.write_sql([](Sql& sql) { sql.execute("INSERT INTO kv VALUES ('c', 5)"); });
  t.store.read_sql([&](Sql& sql) { sum = sql.query_integer("SELECT sum(v) FROM kv").value(); });
  CHECK(sum == 6);
  check_usable_after(t, "a-1");
}

TEST_CASE("write_sql on a full disk throws StorageError kind full and leaves the table as it was") {
  FaultInjection fault;
  TempStore t;
  t.store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE blobs (b BLOB)"); });
  fault.fail(FaultOp::write, 1, codes::kFull, FaultInjection::kForever, FaultFile::wal);
  storage_error(
      [&] {
        t.store.write_sql([](Sql& sql) {
          for (int i = 0; i < 50; ++i) sql.execute("INSERT INTO blobs VALUES (zeroblob(100000))");
        });
      },
      StorageError::Kind::full, t.path);
  fault.clear();
  std::int64_t n = -1;
  t.store.read_sql([&](Sql& sql) { n = sql.query_integer("SELECT count(*) FROM blobs").value(); });
  CHECK(n == 0);
  check_usable_after(t, "a-1");
}

// ---- opening -----------------------------------------------------------------------------

TEST_CASE("opening a store whose file locks fail throws StorageError naming the file") {
  FaultInjection fault;
  TempDir dir;
  const auto path = dir.file("store.db");
  { EventStore::open(path).append("a-1", ExpectedVersion::any(), make_event()); }
  fault.fail(FaultOp::lock, 1, codes::kIoErrLock, FaultInjection::kForever);
  storage_error([&] { EventStore::open(path); }, StorageError::Kind::io, path);
  fault.clear();
  const EventStore store = EventStore::open(path);
  CHECK(store.head_position() == 1);
  check_intact(store);
}

TEST_CASE("opening a store whose file stays locked throws StorageError kind busy") {
  FaultInjection fault;
  TempDir dir;
  const auto path = dir.file("store.db");
  { EventStore::open(path).append("a-1", ExpectedVersion::any(), make_event()); }
  fault.fail(FaultOp::lock, 1, codes::kBusy, FaultInjection::kForever);
  StoreOptions options;
  options.busy_timeout = std::chrono::milliseconds(100);
  storage_error([&] { EventStore::open(path, options); }, StorageError::Kind::busy, path);
  fault.clear();
  CHECK(EventStore::open(path, options).head_position() == 1);
}

TEST_CASE("creating a store whose file cannot be opened throws StorageError and creates nothing") {
  FaultInjection fault;
  TempDir dir;
  const auto path = dir.file("store.db");
  fault.fail(FaultOp::open, 1, codes::kCantOpen, FaultInjection::kForever, FaultFile::main_db);
  storage_error([&] { EventStore::open(path); }, StorageError::Kind::io, path);
  fault.clear();
  EventStore store = EventStore::open(path);
  CHECK(store.head_position() == 0);
  store.append("a-1", ExpectedVersion::any(), make_event());
  check_intact(store);
}

TEST_CASE("a new store whose first commit fails is left empty and takes the next append") {
  // The first commit makes the store's schema with its events, in rollback-journal mode: when its
  // sync fails, the journal rolls the file back to nothing.
  FaultInjection fault;
  TempDir dir;
  const auto path = dir.file("store.db");
  EventStore store = EventStore::open(path, TempStore::durable_options());
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, FaultInjection::kForever);
  CHECK_THROWS_AS(store.append("a-1", ExpectedVersion::any(), make_event()), StorageError);
  CHECK(fault.injected() > 0);
  fault.clear();
  CHECK(store.head_position() == 0);
  CHECK(EventStore::open(path, TempStore::durable_options()).head_position() == 0);
  store.append("a-1", ExpectedVersion::any(), make_event());
  check_intact(store);
}

TEST_CASE("opening a store whose WAL index cannot be mapped throws StorageError") {
  FaultInjection fault;
  TempDir dir;
  const auto path = dir.file("store.db");
  { EventStore::open(path).append("a-1", ExpectedVersion::any(), make_event()); }
  fault.fail(FaultOp::shm_map, 1, codes::kIoErrShmMap, FaultInjection::kForever);
  storage_error([&] { EventStore::open(path); }, StorageError::Kind::io, path);
  fault.clear();
  CHECK(EventStore::open(path).head_position() == 1);
}

// ---- reads -------------------------------------------------------------------------------

// A store of `n` events in stream "a-1", reopened so that no page is cached.
struct ReopenedStore {
  explicit ReopenedStore(std::size_t n, StoreOptions options = TempStore::fast_options()) {
    {
      EventStore writer = EventStore::open(path, options);
      for (std::size_t i = 0; i < n; i += 50) {
        writer.append("a-1", ExpectedVersion::any(),
                      large_events(std::min<std::size_t>(50, n - i), 300));
      }
    }
    store.emplace(EventStore::open(path, options));
  }
  TempDir dir;
  std::filesystem::path path = dir.file("store.db");
  std::optional<EventStore> store;
};

TEST_CASE("read_stream on a failing disk throws StorageError, and reads again once it is back") {
  FaultInjection fault;
  ReopenedStore s(200);
  fault.fail(FaultOp::read, 1, codes::kIoErrRead, FaultInjection::kForever);
  storage_error([&] { (void)s.store->read_stream("a-1").to_vector(); }, StorageError::Kind::io,
                s.path);
  REQUIRE(fault.injected() > 0);
  fault.clear();
  CHECK(s.store->read_stream("a-1").to_vector().size() == 200);
}

TEST_CASE("a read error in the middle of read_all throws from the iterator, not a crash") {
  FaultInjection fault;
  StoreOptions options = TempStore::fast_options();
  options.read_page_size = 10;
  ReopenedStore s(300, options);
  Position seen = 0;
  storage_error(
      [&] {
        for (const RecordedEvent& e : s.store->read_all()) {
          CHECK(e.position == ++seen);
          if (seen == 15) fault.fail(FaultOp::read, 1, codes::kIoErrRead, FaultInjection::kForever);
        }
      },
      StorageError::Kind::io, s.path);
  CHECK(seen >= 15);
  CHECK(seen < 300);
  fault.clear();
  CHECK(s.store->read_all().to_vector().size() == 300);
}

TEST_CASE("verify on a failing disk throws StorageError instead of reporting a broken chain") {
  FaultInjection fault;
  ReopenedStore s(200);
  fault.fail(FaultOp::read, 1, codes::kIoErrRead, FaultInjection::kForever);
  storage_error([&] { (void)s.store->verify(); }, StorageError::Kind::io, s.path);
  fault.clear();
  const VerifyResult v = s.store->verify();
  CHECK(v.ok());
  CHECK(v.events_checked == 200);
}

TEST_CASE("head, stream_version and read_event on a failing disk throw StorageError") {
  FaultInjection fault;
  ReopenedStore s(100);
  fault.fail(FaultOp::read, 1, codes::kIoErrRead, FaultInjection::kForever);
  storage_error([&] { (void)s.store->head(); }, StorageError::Kind::io, s.path);
  storage_error([&] { (void)s.store->stream_version("a-1"); }, StorageError::Kind::io, s.path);
  storage_error([&] { (void)s.store->read_event(EventId::generate()); }, StorageError::Kind::io,
                s.path);
  fault.clear();
  CHECK(s.store->head_position() == 100);
  CHECK(s.store->stream_version("a-1") == 100);
}

TEST_CASE("a read lock that cannot be taken fails the read with StorageError, not a hang") {
  FaultInjection fault;
  StoreOptions options = short_busy_timeout();
  ReopenedStore s(10, options);
  fault.fail(FaultOp::shm_lock, 1, codes::kIoErrShmLock, FaultInjection::kForever);
  storage_error([&] { (void)s.store->read_all().to_vector(); }, StorageError::Kind::io, s.path);
  fault.clear();
  CHECK(s.store->read_all().to_vector().size() == 10);
}

TEST_CASE("a LogWatcher on a failing disk throws StorageError from changed()") {
  FaultInjection fault;
  TempStore t;
  t.store.append("a-1", ExpectedVersion::any(), make_event());
  auto watcher = t.store.watch();
  (void)watcher->changed();
  fault.fail(FaultOp::shm_lock, 1, codes::kIoErrShmLock, FaultInjection::kForever);
  fault.fail(FaultOp::read, 1, codes::kIoErrRead, FaultInjection::kForever);
  storage_error([&] { (void)watcher->changed(); }, StorageError::Kind::io, t.path);
  fault.clear();
  t.store.append("a-1", ExpectedVersion::any(), make_event());
  CHECK(watcher->changed());
}

// ---- recovery ----------------------------------------------------------------------------

// SQLite writes the WAL frames, commit marker included, before the fsync that fails. Without
// the writer's seal (a one-frame write after the failed commit, breaking the checksum chain
// behind it), recovery of that WAL after a crash, or after a close while the disk still fails,
// replayed them: the append that threw was in the log after all.
TEST_CASE("an append whose fsync failed does not reappear when a crash leaves its WAL behind") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  t.store.append("a-1", ExpectedVersion::any(), make_event());
  const auto batch = make_events(3);
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(t.store.append("a-1", ExpectedVersion::exact(1), batch), StorageError);
  // The process dies now: the next process finds the database and its WAL as they are (the
  // WAL index in shared memory is rebuilt from the WAL).
  TempDir crashed;
  std::filesystem::copy_file(t.path, crashed.file("store.db"));
  std::filesystem::copy_file(t.path.string() + "-wal", crashed.file("store.db-wal"));
  const EventStore recovered = EventStore::open(crashed.file("store.db"));
  CHECK(recovered.head_position() == 1);
  CHECK(none_stored(recovered, batch));
  check_intact(recovered);
}

TEST_CASE("an append whose fsync failed does not reappear after a close while the disk fails") {
  FaultInjection fault;
  TempDir dir;
  const auto path = dir.file("store.db");
  const auto batch = make_events(3);
  {
    EventStore store = EventStore::open(path, TempStore::durable_options());
    store.append("a-1", ExpectedVersion::any(), make_event());
    fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, FaultInjection::kForever, FaultFile::wal);
    CHECK_THROWS_AS(store.append("a-1", ExpectedVersion::exact(1), batch), StorageError);
  }  // closed while syncs still fail: the WAL cannot be checkpointed and stays
  fault.clear();
  const EventStore store = EventStore::open(path, TempStore::durable_options());
  CHECK(store.head_position() == 1);
  CHECK(none_stored(store, batch));
  check_intact(store);
}

TEST_CASE("retrying an append whose fsync failed settles its unknown outcome after a crash") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  t.store.append("a-1", ExpectedVersion::any(), make_event());
  const auto batch = make_events(3);
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(t.store.append("a-1", ExpectedVersion::exact(1), batch), StorageError);
  TempDir crashed;
  std::filesystem::copy_file(t.path, crashed.file("store.db"));
  std::filesystem::copy_file(t.path.string() + "-wal", crashed.file("store.db-wal"));
  EventStore recovered = EventStore::open(crashed.file("store.db"));
  // Whether or not the batch survived, the retry lands it exactly once, at versions 2..4.
  const AppendResult r = recovered.append("a-1", ExpectedVersion::exact(1), batch);
  CHECK(r == AppendResult{4, 2, 4});
  CHECK(recovered.head_position() == 4);
  CHECK(stored(recovered, batch));
  check_intact(recovered);
}

TEST_CASE(
    "after a failed commit and a smaller acknowledged one, a crash recovers only the latter") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  t.store.append("a-1", ExpectedVersion::any(), make_event());
  const auto failed = large_events(6, 5000);
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(t.store.append("a-1", ExpectedVersion::exact(1), failed), StorageError);
  const EventData acknowledged = make_event();
  CHECK(t.store.append("a-1", ExpectedVersion::exact(1), acknowledged) == AppendResult{2, 2, 2});
  TempDir crashed;
  std::filesystem::copy_file(t.path, crashed.file("store.db"));
  std::filesystem::copy_file(t.path.string() + "-wal", crashed.file("store.db-wal"));
  const EventStore recovered = EventStore::open(crashed.file("store.db"));
  CHECK(recovered.head_position() == 2);
  CHECK(recovered.read_event(acknowledged.id));
  CHECK(none_stored(recovered, failed));
  check_intact(recovered);
}

TEST_CASE("a full disk in the middle of one append of a group fails it and leaves no append half") {
  FaultInjection fault;
  TempStore t;
  // The first append's slot holds the write lock while two small appends and then a large one
  // (larger than the page cache: it spills pages to the WAL before the commit) queue up; the
  // group's first slot arms a full disk for the next WAL write: the large append's spill.
  std::atomic<int> hook_calls{0};
  std::atomic<bool> release{false};
  boost::signals2::scoped_connection c = t.store.on_appending().connect([&](AppendTransaction&) {
    const int call = ++hook_calls;
    if (call == 1) {
      while (!release) std::this_thread::yield();
    } else if (call == 2) {
      fault.fail(FaultOp::write, 1, codes::kFull, 1, FaultFile::wal);
    }
  });
  const auto small1 = make_events(2, "a");
  const auto small2 = make_events(2, "b");
  const auto large = large_events(60, 100000);  // ~6 MB
  std::optional<AppendResult> r1, r2, r3;
  std::string e1, e2, e3;
  auto run = [&](const std::string& stream, const std::vector<EventData>& batch,
                 std::optional<AppendResult>& r, std::string& error) {
    try {
      r = t.store.append(stream, ExpectedVersion::no_stream(), batch);
    } catch (const StorageError& e) {
      error = e.what();
    }
  };
  std::thread leader([&] { run("lead-1", make_events(1), r1, e1); });
  while (hook_calls == 0) std::this_thread::yield();
  std::optional<AppendResult> rs1, rs2;
  std::string es1, es2;
  std::thread s1([&] { run("small-1", small1, rs1, es1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::thread s2([&] { run("small-2", small2, rs2, es2); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::thread big([&] { run("large-1", large, r3, e3); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  release = true;
  for (auto* th : {&leader, &s1, &s2, &big}) th->join();
  c.disconnect();
  CHECK(fault.injected() == 1);
  CHECK(r1);
  CHECK_FALSE(r3);
  CHECK(e3.find("full") != std::string::npos);
  CHECK(none_stored(t.store, large));
  // The small appends of the group committed, or failed whole: never half.
  CHECK(rs1.has_value() == stored(t.store, small1));
  CHECK(rs2.has_value() == stored(t.store, small2));
  CHECK((rs1.has_value() || none_stored(t.store, small1)));
  CHECK((rs2.has_value() || none_stored(t.store, small2)));
  MESSAGE("small appends of the failing group: " << (rs1 ? "committed" : es1) << " / "
                                                 << (rs2 ? "committed" : es2));
  check_usable_after(t, "small-1");
}

TEST_CASE("an import whose commit fails imports nothing, and the same import then succeeds") {
  FaultInjection fault;
  TempStore source;
  source.store.append("a-1", ExpectedVersion::any(), make_events(3));
  source.store.append("b-1", ExpectedVersion::any(), make_events(2));
  const auto exported = source.store.read_all().to_vector();
  TempStore t(TempStore::durable_options());
  make_store(t);
  fault.fail(FaultOp::sync, 1, codes::kIoErrFsync, 1, FaultFile::wal);
  storage_error([&] { t.store.import_events(exported); }, StorageError::Kind::io, t.path);
  CHECK(t.store.head_position() == 0);
  const Head head = t.store.import_events(exported);
  CHECK(head == source.store.head());
  check_usable_after(t, "b-1");
}
