// Opening files, and the errors of the storage: foreign files, newer formats, read-only
// stores, a full disk and a locked file. Each leaves what is stored readable and unchanged.
#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <thread>

#include "support/child_process.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::raw_exec;
using factum::test::raw_int;
using factum::test::slurp;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

StorageError::Kind open_error(const std::filesystem::path& p, const StoreOptions& o = {}) {
  try {
    EventStore::open(p, o);
  } catch (const StorageError& e) {
    CHECK(std::string(e.what()).find(p.string()) != std::string::npos);
    return e.kind();
  }
  FAIL("open did not throw");
  return StorageError::Kind::other;
}

}  // namespace

TEST_CASE("a new store records its format in the file header and uses WAL") {
  TempStore t;
  CHECK(raw_int(t.path, "PRAGMA application_id") == 0x4643544d);
  CHECK(raw_int(t.path, "PRAGMA user_version") == 2);
  CHECK(std::filesystem::exists(t.path.string() + "-wal"));
}

TEST_CASE("events survive closing and reopening the store") {
  TempDir dir;
  const auto path = dir.file("s.db");
  const auto batch = make_events(4);
  Head head;
  {
    auto store = EventStore::open(path);
    store.append("s-1", ExpectedVersion::any(), batch);
    head = store.head();
  }
  auto store = EventStore::open(path);
  CHECK(store.head() == head);
  CHECK(store.stream_version("s-1") == 4);
  CHECK(store.verify(head.hash).ok());
}

TEST_CASE("opening a file that is not SQLite fails with not_a_store and changes nothing") {
  TempDir dir;
  const auto path = dir.file("notes.txt");
  const std::string bytes(8192, 'Q');
  write_file(path, bytes);
  CHECK(open_error(path) == StorageError::Kind::not_a_store);
  CHECK(slurp(path) == bytes);
  CHECK_FALSE(std::filesystem::exists(path.string() + "-wal"));
}

TEST_CASE(
    "opening another application's SQLite database fails with not_a_store and changes nothing") {
  TempDir dir;
  const auto path = dir.file("other.db");
  write_file(path, "");  // raw_exec opens without SQLITE_OPEN_CREATE
  raw_exec(path, "CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('ann');");
  const std::string before = slurp(path);
  CHECK(open_error(path) == StorageError::Kind::not_a_store);
  CHECK(slurp(path) == before);
  CHECK(raw_int(path, "SELECT count(*) FROM people") == 1);
  CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'events'") == 0);
}

TEST_CASE("opening a truncated store fails with corrupt, saying it is damaged") {
  TempDir dir;
  const auto path = dir.file("s.db");
  EventStore::open(path).append("s-1", ExpectedVersion::any(), make_events(50));
  for (const std::uintmax_t size : {50u, 1000u}) {
    CAPTURE(size);
    std::filesystem::resize_file(path, size);
    for (const bool read_only : {true, false}) {
      StoreOptions o;
      o.read_only = read_only;
      CHECK(open_error(path, o) == StorageError::Kind::corrupt);
    }
  }
}

TEST_CASE("opening a store whose streams table was dropped fails with corrupt") {
  TempDir dir;
  const auto path = dir.file("s.db");
  EventStore::open(path).append("s-1", ExpectedVersion::any(), make_events(2));
  raw_exec(path, std::string(test::kDropTriggers) + "DROP TABLE streams;");
  StoreOptions o;
  o.read_only = true;
  try {
    EventStore::open(path, o);
    FAIL("open did not throw");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::corrupt);
    CHECK(std::string(e.what()).find("its table 'streams' is missing") != std::string::npos);
  }
}

TEST_CASE("opening a store of a newer format fails with newer_format and changes nothing") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  raw_exec(t.path, "PRAGMA user_version = 3");
  CHECK(open_error(t.path) == StorageError::Kind::newer_format);
  CHECK(raw_int(t.path, "PRAGMA user_version") == 3);
  CHECK(raw_int(t.path, "SELECT count(*) FROM events") == 1);
}

TEST_CASE("an empty existing file becomes a new store") {
  TempDir dir;
  const auto path = dir.file("empty.db");
  write_file(path, "");
  auto store = EventStore::open(path);
  CHECK(store.append("s-1", ExpectedVersion::any(), make_event()).last_position == 1);
}

TEST_CASE("a missing file is not created when create_if_missing is false") {
  TempDir dir;
  StoreOptions o;
  o.create_if_missing = false;
  CHECK(open_error(dir.file("missing.db"), o) == StorageError::Kind::io);
  CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

TEST_CASE("a store opened read-only reads but refuses appends with a clear error") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_events(3));
  StoreOptions o;
  o.read_only = true;
  auto ro = EventStore::open(t.path, o);
  CHECK(ro.read_all().to_vector().size() == 3);
  CHECK(ro.verify().ok());
  try {
    ro.append("s-1", ExpectedVersion::any(), make_event());
    FAIL("expected StorageError");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::read_only);
    CHECK(std::string(e.what()).find(t.path.string()) != std::string::npos);
  }
  CHECK(t.store.head_position() == 3);
}

TEST_CASE("opening a missing file read-only fails and creates nothing") {
  TempDir dir;
  StoreOptions o;
  o.read_only = true;
  CHECK(open_error(dir.file("missing.db"), o) == StorageError::Kind::io);
  CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

TEST_CASE("a full disk fails the append with kind full and leaves the store readable") {
  StoreOptions o = TempStore::fast_options();
  o.max_file_size = 256 * 1024;
  TempStore t(o);
  std::size_t stored = 0;
  bool full = false;
  for (int i = 0; i < 1000 && !full; ++i) {
    try {
      t.store.append("s-1", ExpectedVersion::any(), make_events(10, std::string(500, 'p')));
      stored += 10;
    } catch (const StorageError& e) {
      CHECK(e.kind() == StorageError::Kind::full);
      CHECK(std::string(e.what()).find(t.path.string()) != std::string::npos);
      full = true;
    }
  }
  REQUIRE(full);
  CHECK(t.store.head_position() == stored);
  CHECK(t.store.read_all().to_vector().size() == stored);
  CHECK(t.store.verify().ok());
  // Still full: a second failure changes nothing either.
  CHECK_THROWS_AS(
      t.store.append("s-1", ExpectedVersion::any(), make_events(10, std::string(500, 'p'))),
      StorageError);
  CHECK(t.store.verify().ok());
}

TEST_CASE("a locked file fails the append with kind busy after the busy timeout") {
  StoreOptions o = TempStore::fast_options();
  o.busy_timeout = std::chrono::milliseconds(100);
  TempStore t(o);
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  {
    factum::test::RawConnection other(t.path);
    other.exec("BEGIN IMMEDIATE");
    try {
      t.store.append("s-1", ExpectedVersion::any(), make_event());
      FAIL("expected StorageError");
    } catch (const StorageError& e) {
      CHECK(e.kind() == StorageError::Kind::busy);
      CHECK(std::string(e.what()).find("locked") != std::string::npos);
    }
    // Reads go on while another connection holds the write lock.
    CHECK(t.store.read_all().to_vector().size() == 1);
    other.exec("ROLLBACK");
  }
  CHECK(t.store.append("s-1", ExpectedVersion::any(), make_event()).stream_version == 2);
  CHECK(t.store.verify().ok());
}

TEST_CASE("two stores on one file see each other's appends") {
  TempStore t;
  auto second = EventStore::open(t.path, TempStore::fast_options());
  t.store.append("s-1", ExpectedVersion::no_stream(), make_event());
  CHECK(second.stream_version("s-1") == 1);
  CHECK(second.append("s-1", ExpectedVersion::exact(1), make_event()).last_position == 2);
  CHECK_THROWS_AS(t.store.append("s-1", ExpectedVersion::exact(1), make_event()), ConcurrencyError);
  CHECK(t.store.verify().ok());
}

TEST_CASE("many connections creating one new store at once all succeed") {
  for (int round = 0; round < 5; ++round) {
    TempDir dir;
    const auto path = dir.file("race.db");
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    std::atomic<int> ready{0};
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&, i] {
        ++ready;
        while (ready.load() < 8) std::this_thread::yield();
        try {
          auto store = EventStore::open(path, TempStore::fast_options());
          store.append("s-" + std::to_string(i), ExpectedVersion::no_stream(), make_event());
        } catch (const std::exception& e) {
          MESSAGE(std::string(e.what()));
          ++failures;
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(failures.load() == 0);
    auto store = EventStore::open(path);
    CHECK(store.head_position() == 8);
    CHECK(store.verify().ok());
  }
}

TEST_CASE("a writable open upgrades a format-1 store: its inserts are guarded from then on") {
  TempDir dir;
  const auto path = dir.file("old.db");
  {
    auto store = EventStore::open(path, TempStore::fast_options());
    store.append("s-1", ExpectedVersion::any(), make_event());
  }
  // What format 1 was: the same tables and chain, without the insert guards.
  raw_exec(path,
           "DROP TRIGGER events_are_appended; DROP TRIGGER streams_are_added; "
           "DROP TRIGGER stream_keys_are_positive; "
           "PRAGMA user_version = 1");
  {
    StoreOptions read_only = TempStore::fast_options();
    read_only.read_only = true;
    auto reader = EventStore::open(path, read_only);  // a read-only open reads format 1 as it is
    CHECK(reader.head_position() == 1);
    CHECK(raw_int(path, "PRAGMA user_version") == 1);
  }
  auto store = EventStore::open(path, TempStore::fast_options());
  CHECK(raw_int(path, "PRAGMA user_version") == 2);
  CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'") == 7);
  CHECK_THROWS(raw_exec(path, "REPLACE INTO events SELECT * FROM events WHERE position = 1"));
  CHECK(store.append("s-1", ExpectedVersion::exact(1), make_event()).last_position == 2);
  CHECK(store.verify().ok());
}

TEST_CASE("checkpoint_pages sets how long the write-ahead log grows before a checkpoint") {
  // 300 commits of one ~3 KiB event: each commit adds a few pages to the log. With a small
  // checkpoint_pages the log is copied back and reused from its start again and again, so the
  // -wal file stays short; with the default it holds every commit.
  const auto wal_pages_after_appends = [](std::size_t checkpoint_pages) {
    TempDir dir;
    StoreOptions options = TempStore::fast_options();
    if (checkpoint_pages > 0) options.checkpoint_pages = checkpoint_pages;
    auto store = EventStore::open(dir.path() / "ckpt.db", options);
    std::optional<std::int64_t> setting;
    store.write_sql([&](Sql& sql) { setting = sql.query_integer("PRAGMA wal_autocheckpoint"); });
    CHECK(setting == static_cast<std::int64_t>(checkpoint_pages > 0 ? checkpoint_pages : 4000));
    for (int i = 0; i < 300; ++i) {
      store.append("ckpt-" + std::to_string(i % 10), ExpectedVersion::any(),
                   make_event("test.Big", std::string(3000, 'x')));
    }
    CHECK(store.head_position() == 300);
    return std::filesystem::file_size(dir.path() / "ckpt.db-wal") / 4096;
  };
  const auto small = wal_pages_after_appends(20);
  const auto standard = wal_pages_after_appends(0);
  MESSAGE("-wal pages: checkpoint_pages 20: ", small, ", default: ", standard);
  CHECK(small < 60);
  CHECK(standard > 1200);  // more than SQLite's own 1000 pages
}
