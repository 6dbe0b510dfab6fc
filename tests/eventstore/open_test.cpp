// Opening files, and the errors of the storage: foreign files, newer formats, read-only
// stores, a full disk and a locked file. Each leaves what is stored readable and unchanged.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
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

TEST_CASE("a new store records its format in the file header and uses WAL from its first commit") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  CHECK(raw_int(t.path, "PRAGMA application_id") == 0x4643544d);
  CHECK(raw_int(t.path, "PRAGMA user_version") == 2);
  CHECK(raw_int(t.path, "SELECT count(*) FROM events") == 1);
  // The journal mode is in the file header: bytes 18 and 19 are 2 in WAL mode.
  const std::string header = slurp(t.path).substr(0, 20);
  CHECK(header[18] == 2);
  CHECK(header[19] == 2);
  t.store.append("s-1", ExpectedVersion::exact(1), make_event());
  CHECK(std::filesystem::exists(t.path.string() + "-wal"));
  CHECK(raw_int(t.path, "SELECT count(*) FROM events") == 2);
}

TEST_CASE("opening a missing file makes an empty file: the store is made by its first write") {
  TempDir dir;
  const auto path = dir.file("new.db");
  auto store = EventStore::open(path, TempStore::fast_options());
  CHECK(store.head() == Head{});
  CHECK(store.read_all().to_vector().empty());
  CHECK(store.read_stream("s-1").to_vector().empty());
  CHECK(store.stream_version("s-1") == 0);
  CHECK(store.verify().ok());
  CHECK(std::filesystem::file_size(path) == 0);
  store.append("s-1", ExpectedVersion::no_stream(), make_event());
  CHECK(store.head_position() == 1);
  CHECK(EventStore::open(path).read_stream("s-1").to_vector().size() == 1);
}

TEST_CASE("opening an empty file and reading it leaves it empty") {
  TempDir dir;
  const auto path = dir.file("empty.db");
  write_file(path, "");
  {
    auto store = EventStore::open(path, TempStore::fast_options());
    CHECK(store.head_position() == 0);
    CHECK(store.read_category("s").to_vector().empty());
    CHECK_FALSE(store.read_event(EventId::generate()).has_value());
    std::string tables = "?";
    store.read_sql([&](Sql& sql) { tables = sql.object_type("events"); });
    CHECK(tables.empty());
    auto watcher = store.watch();
    CHECK_FALSE(watcher->changed());
  }
  CHECK(std::filesystem::file_size(path) == 0);
  CHECK_FALSE(std::filesystem::exists(path.string() + "-wal"));
  CHECK_FALSE(std::filesystem::exists(path.string() + "-journal"));
}

TEST_CASE("a refused first append leaves a new file empty") {
  TempDir dir;
  const auto path = dir.file("empty.db");
  write_file(path, "");
  auto store = EventStore::open(path, TempStore::fast_options());
  CHECK_THROWS_AS(store.append("s-1", ExpectedVersion::exact(3), make_event()), ConcurrencyError);
  CHECK_THROWS_AS(store.append("s-1", ExpectedVersion::stream_exists(), make_event()),
                  ConcurrencyError);
  CHECK(std::filesystem::file_size(path) == 0);
  CHECK_FALSE(std::filesystem::exists(path.string() + "-wal"));
  CHECK(store.append("s-1", ExpectedVersion::no_stream(), make_event()).last_position == 1);
  CHECK(store.verify().ok());
}

TEST_CASE("a write_sql that writes nothing leaves a new file empty, one that writes makes it") {
  TempDir dir;
  const auto path = dir.file("empty.db");
  write_file(path, "");
  auto store = EventStore::open(path, TempStore::fast_options());
  store.write_sql([](Sql& sql) { CHECK(sql.object_type("events") == "table"); });
  CHECK_THROWS_AS(store.write_sql([](Sql& sql) {
    sql.execute("CREATE TABLE notes (text TEXT)");
    throw InvalidArgument("refused");
  }),
                  InvalidArgument);
  CHECK(std::filesystem::file_size(path) == 0);
  store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE notes (text TEXT)"); });
  CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name IN ('notes', 'events')") == 2);
  CHECK(raw_int(path, "PRAGMA user_version") == 2);
}

TEST_CASE("a watcher of a store whose schema is not made yet sees its first commit") {
  TempDir dir;
  const auto path = dir.file("new.db");
  auto store = EventStore::open(path, TempStore::fast_options());
  auto watcher = store.watch();
  CHECK_FALSE(watcher->changed());
  EventStore::open(path, TempStore::fast_options())
      .append("s-1", ExpectedVersion::any(), make_event());
  CHECK(watcher->changed());
  CHECK(store.head_position() == 1);
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

namespace {

// A store of format 1: the same tables and chain, without the insert guards.
void make_format_1(const std::filesystem::path& path) {
  {
    auto store = EventStore::open(path, TempStore::fast_options());
    store.append("s-1", ExpectedVersion::any(), make_event());
  }
  raw_exec(path,
           "DROP TRIGGER events_are_appended; DROP TRIGGER streams_are_added; "
           "DROP TRIGGER stream_keys_are_positive; "
           "PRAGMA user_version = 1");
}

}  // namespace

TEST_CASE("the first write that commits upgrades a format-1 store, not opening it") {
  TempDir dir;
  const auto path = dir.file("old.db");
  make_format_1(path);
  {
    StoreOptions read_only = TempStore::fast_options();
    read_only.read_only = true;
    auto reader = EventStore::open(path, read_only);  // a read-only open reads format 1 as it is
    CHECK(reader.head_position() == 1);
  }
  auto store = EventStore::open(path, TempStore::fast_options());
  CHECK(store.head_position() == 1);
  CHECK(raw_int(path, "PRAGMA user_version") == 1);  // opening and reading changed nothing
  CHECK(store.append("s-1", ExpectedVersion::exact(1), make_event()).last_position == 2);
  CHECK(raw_int(path, "PRAGMA user_version") == 2);
  CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'") == 7);
  CHECK_THROWS(raw_exec(path, "REPLACE INTO events SELECT * FROM events WHERE position = 1"));
  CHECK(store.verify().ok());
}

TEST_CASE("a refused write leaves a format-1 store at format 1, every byte as it was") {
  TempDir dir;
  const auto path = dir.file("old.db");
  make_format_1(path);
  const std::string before = slurp(path);
  auto store = EventStore::open(path, TempStore::fast_options());
  CHECK_THROWS_AS(store.append("s-1", ExpectedVersion::no_stream(), make_event()),
                  ConcurrencyError);
  store.write_sql([](Sql& sql) { CHECK(sql.object_type("events") == "table"); });
  CHECK(raw_int(path, "PRAGMA user_version") == 1);
  CHECK(slurp(path) == before);
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

namespace {

// Runs `fn` in a forked child that cannot write the directories made read-only below: as the
// user nobody when the tests run as root (root writes anywhere), else as the test's own user.
// The child's exit status: 0 when fn returned true, 1 when false, 2 when it threw (its message on
// stderr).
int in_unprivileged_child(const std::function<bool()>& fn) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    try {
      _exit(fn() ? 0 : 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      _exit(2);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `dir` and what it holds, readable by everyone and writable by no one.
void make_read_only(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  for (const auto& entry : fs::directory_iterator(dir)) {
    fs::permissions(entry.path(),
                    fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  }
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
}

void make_writable(const std::filesystem::path& dir) {
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
}

}  // namespace

TEST_CASE("a store in a read-only directory is read, verified and exported read-only") {
  // An auditor's copy on read-only media: no -wal or -shm beside it, and none can be made.
  TempDir dir;
  const auto copy = dir.path() / "ro";
  std::filesystem::create_directory(copy);
  std::filesystem::permissions(
      dir.path(), std::filesystem::perms::owner_all | std::filesystem::perms::others_exec);
  const auto path = copy / "audit.db";
  Head head;
  {
    auto store = EventStore::open(path, TempStore::fast_options());
    store.append("s-1", ExpectedVersion::any(), make_events(5));
    head = store.head();
  }  // closing checkpoints the log into the file and removes -wal and -shm
  REQUIRE_FALSE(std::filesystem::exists(path.string() + "-wal"));
  make_read_only(copy);
  const int status = in_unprivileged_child([&] {
    StoreOptions o;
    o.read_only = true;
    auto store = EventStore::open(path, o);
    return store.verify(head.hash).ok() && store.read_all().to_vector().size() == 5 &&
           store.head() == head && store.read_stream("s-1").to_vector().size() == 5;
  });
  make_writable(copy);
  CHECK(status == 0);
  CHECK_FALSE(std::filesystem::exists(path.string() + "-shm"));
}

TEST_CASE("a read-only directory whose store has commits in its -wal only is refused, saying why") {
  TempDir dir;
  const auto copy = dir.path() / "ro";
  std::filesystem::create_directory(copy);
  std::filesystem::permissions(
      dir.path(), std::filesystem::perms::owner_all | std::filesystem::perms::others_exec);
  const auto path = dir.file("live.db");
  auto live = EventStore::open(path, TempStore::fast_options());
  live.append("s-1", ExpectedVersion::any(), make_events(3));  // makes the file, then WAL mode
  live.append("s-1", ExpectedVersion::any(), make_events(3));  // into the -wal
  // A copy taken while the store is open: its last commits are in the -wal; no -shm copied.
  std::filesystem::copy_file(path, copy / "live.db");
  std::filesystem::copy_file(path.string() + "-wal", (copy / "live.db-wal").string());
  REQUIRE(std::filesystem::file_size(copy / "live.db-wal") > 0);
  make_read_only(copy);
  const int status = in_unprivileged_child([&] {
    StoreOptions o;
    o.read_only = true;
    try {
      EventStore::open(copy / "live.db", o).head_position();
    } catch (const StorageError& e) {
      const std::string what = e.what();
      return e.kind() == StorageError::Kind::read_only &&
             what.find("-wal' holds commits not yet in the file") != std::string::npos;
    }
    return false;
  });
  make_writable(copy);
  CHECK(status == 0);
}
