// One EventStore shared by many threads: racing appends, group commit, readers beside writers,
// and notifications. Assertions run on the test's thread only; worker threads record what
// they saw. These cases also run under ThreadSanitizer (label "concurrency").
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <fstream>
#include <functional>
#include <iterator>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::TempStore;

namespace {

// Runs `body(i)` on `n` threads at once and rethrows the first exception any of them threw.
void run_threads(int n, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::latch start(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      try {
        body(i);
      } catch (...) {
        errors[static_cast<std::size_t>(i)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// SQLite-specific helpers: the file's write lock, its WAL's commits.
// Holds the store file's write lock through a plain SQLite connection (as another process
// would) until release(): appends meanwhile queue up behind it.
class WriteLock {
 public:
  explicit WriteLock(const std::filesystem::path& file) {
    if (sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK ||
        sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
      const std::string message = sqlite3_errmsg(db_);
      sqlite3_close(db_);
      throw std::runtime_error("cannot take the write lock: " + message);
    }
  }
  ~WriteLock() { release(); }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;
  void release() {
    if (db_ == nullptr) return;
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    db_ = nullptr;
  }

 private:
  sqlite3* db_ = nullptr;
};

std::uint32_t big_endian32(const std::vector<unsigned char>& b, std::size_t at) {
  return std::uint32_t{b[at]} << 24 | std::uint32_t{b[at + 1]} << 16 |
         std::uint32_t{b[at + 2]} << 8 | std::uint32_t{b[at + 3]};
}

// The number of transactions committed to the store's write-ahead log since it was last
// reset: the frames of the current WAL generation (same salts as the header) that end a
// commit (non-zero "database size after commit"). See https://sqlite.org/fileformat.html.
// Valid while no checkpoint resets the WAL (the cases below write far fewer than the
// StoreOptions::checkpoint_pages (4000) that trigger an automatic checkpoint).
std::size_t wal_commits(const std::filesystem::path& store) {
  std::ifstream in(store.string() + "-wal", std::ios::binary);
  const std::vector<unsigned char> wal{std::istreambuf_iterator<char>(in), {}};
  if (wal.size() < 32) return 0;
  const std::size_t page_size = big_endian32(wal, 8);
  const std::uint32_t salt1 = big_endian32(wal, 16);
  const std::uint32_t salt2 = big_endian32(wal, 20);
  std::size_t commits = 0;
  for (std::size_t at = 32; at + 24 + page_size <= wal.size(); at += 24 + page_size) {
    if (big_endian32(wal, at + 8) != salt1 || big_endian32(wal, at + 12) != salt2) break;
    if (big_endian32(wal, at + 4) != 0) ++commits;
  }
  return commits;
}

// Starts `n` threads that each call `append(i)` while the file's write lock is held
// elsewhere, and releases the lock once they have all started and had time to queue behind
// it, so that the store commits them in as few groups as it can. Nothing observable says
// "this thread is queued", hence the short wait.
// Makes the store (its schema: a new store is made by its first write that commits) without an
// event.
void made(TempStore& t) {
  t.store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE made (x INTEGER)"); });
}

void append_behind_lock(const std::filesystem::path& file, int n,
                        const std::function<void(int)>& append) {
  WriteLock lock(file);
  std::latch started(n + 1);
  std::thread releaser([&] {
    started.arrive_and_wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    lock.release();
  });
  try {
    run_threads(n, [&](int i) {
      started.count_down();
      append(i);
    });
  } catch (...) {
    releaser.join();
    throw;
  }
  releaser.join();
}

// Returns "" when `events` (read in position order from position 1) are gap-free and hold
// each batch whole. Each payload is "<batch key>:<index>/<size>" (see batch_events).
std::string check_whole_batches(const std::vector<RecordedEvent>& events, bool by_position) {
  std::string open_batch;
  std::size_t next_index = 0;
  std::size_t size = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const RecordedEvent& e = events[i];
    const std::uint64_t place = by_position ? e.position : e.stream_version;
    if (place != i + 1) return "gap or disorder at " + std::to_string(i + 1);
    const std::string text = to_string(e.payload);
    const auto colon = text.find(':');
    const auto slash = text.find('/');
    const std::string key = text.substr(0, colon);
    const std::size_t index = std::stoul(text.substr(colon + 1, slash - colon - 1));
    if (open_batch.empty()) {
      if (index != 0) return "batch " + key + " starts at its event " + std::to_string(index);
      open_batch = key;
      size = std::stoul(text.substr(slash + 1));
      next_index = 0;
    }
    if (key != open_batch || index != next_index) return "batch " + open_batch + " is torn";
    if (++next_index == size) open_batch.clear();
  }
  if (!open_batch.empty()) return "batch " + open_batch + " is cut off at the end of the read";
  return {};
}

std::vector<EventData> batch_events(const std::string& key, std::size_t size) {
  std::vector<EventData> batch;
  for (std::size_t i = 0; i < size; ++i)
    batch.push_back(
        make_event("test.Batched", key + ":" + std::to_string(i) + "/" + std::to_string(size)));
  return batch;
}

}  // namespace

TEST_CASE("16 threads racing with exact expected versions leave exactly one winner per version") {
  constexpr int kThreads = 16;
  constexpr int kPerThread = 25;
  constexpr int kStreams = 4;
  TempStore t;
  struct Win {
    std::string stream;
    EventId id;
    StreamVersion expected;
    AppendResult result;
  };
  struct Conflict {
    StreamVersion expected;
    StreamVersion actual;
  };
  std::vector<std::vector<Win>> wins(kThreads);
  std::vector<std::vector<Conflict>> conflicts(kThreads);
  run_threads(kThreads, [&](int thread) {
    for (int i = 0; i < kPerThread; ++i) {
      const std::string stream = "race-" + std::to_string((thread + i) % kStreams);
      const EventData e = make_event();
      for (;;) {
        const StreamVersion v = t.store.stream_version(stream);
        try {
          const AppendResult r = t.store.append(stream, ExpectedVersion::exact(v), e);
          wins[thread].push_back({stream, e.id, v, r});
          break;
        } catch (const ConcurrencyError& err) {
          conflicts[thread].push_back({v, err.actual_version()});
        }
      }
    }
  });

  std::map<std::pair<std::string, StreamVersion>, RecordedEvent> stored;
  for (int s = 0; s < kStreams; ++s) {
    const std::string stream = "race-" + std::to_string(s);
    const auto events = t.store.read_stream(stream).to_vector();
    for (std::size_t i = 0; i < events.size(); ++i) {
      CHECK(events[i].stream_version == i + 1);
      stored[{stream, events[i].stream_version}] = events[i];
    }
  }
  std::size_t total_wins = 0;
  for (const auto& thread_wins : wins) {
    for (const Win& w : thread_wins) {
      ++total_wins;
      CHECK(w.result.stream_version == w.expected + 1);
      CHECK(w.result.first_position == w.result.last_position);
      const auto it = stored.find({w.stream, w.result.stream_version});
      REQUIRE(it != stored.end());
      CHECK(it->second.id == w.id);  // the winner of this version is the one stored there
      CHECK(it->second.position == w.result.first_position);
    }
  }
  std::size_t total_conflicts = 0;
  for (const auto& thread_conflicts : conflicts) {
    for (const Conflict& c : thread_conflicts) {
      ++total_conflicts;
      CHECK(c.actual > c.expected);  // lost to a newer version, never to an older one
    }
  }
  MESSAGE("version conflicts: ", total_conflicts);
  CHECK(total_wins == kThreads * kPerThread);
  CHECK(stored.size() == total_wins);
  const auto all = t.store.read_all().to_vector();
  REQUIRE(all.size() == total_wins);
  std::set<EventId> ids;
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].position == i + 1);
    ids.insert(all[i].id);
  }
  CHECK(ids.size() == total_wins);
  CHECK(t.store.verify().ok());
}

TEST_SUITE_BEGIN("sqlite-only");
// SQLite-specific: these hold the file's write lock through a raw SQLite connection to queue
// appends (append_behind_lock, WriteLock), and most count commits in the file's WAL.
TEST_CASE("durable appends from 16 threads share commits (group commit)") {
  constexpr int kThreads = 16;
  StoreOptions options;
  options.durability = Durability::full;
  TempStore t(options);
  made(t);  // the store exists: its commits go to the WAL counted here
  const std::size_t commits_before = wal_commits(t.path);
  std::vector<AppendResult> results(kThreads);
  append_behind_lock(t.path, kThreads, [&](int i) {
    results[i] =
        t.store.append("group-" + std::to_string(i), ExpectedVersion::no_stream(), make_event());
  });
  const std::size_t commits = wal_commits(t.path) - commits_before;
  MESSAGE(kThreads, " appends took ", commits, " commits");
  CHECK(commits >= 1);
  CHECK(commits < kThreads);
  std::set<Position> positions;
  for (const AppendResult& r : results) {
    CHECK(r.stream_version == 1);
    CHECK(r.first_position == r.last_position);
    positions.insert(r.first_position);
  }
  CHECK(positions.size() == kThreads);
  CHECK(*positions.begin() == 1);
  CHECK(*positions.rbegin() == kThreads);
  CHECK(t.store.verify().ok());
}

TEST_CASE("a commit group holds at most max_group_size appends") {
  constexpr int kThreads = 16;
  StoreOptions options = TempStore::fast_options();
  options.max_group_size = 4;
  TempStore t(options);
  made(t);  // the store exists: its commits go to the WAL counted here
  const std::size_t commits_before = wal_commits(t.path);
  append_behind_lock(t.path, kThreads, [&](int i) {
    t.store.append("small-" + std::to_string(i), ExpectedVersion::no_stream(), make_event());
  });
  const std::size_t commits = wal_commits(t.path) - commits_before;
  MESSAGE(kThreads, " appends in groups of at most 4 took ", commits, " commits");
  CHECK(commits >= kThreads / 4);
  CHECK(commits < kThreads);
  CHECK(t.store.head_position() == kThreads);
  CHECK(t.store.verify().ok());
}

TEST_CASE("the same batch sent from 16 threads at once is stored once and returns one result") {
  constexpr int kThreads = 16;
  TempStore t;
  made(t);  // the store exists: its commits go to the WAL counted here
  t.store.append("before-1", ExpectedVersion::any(), make_event());
  std::atomic<int> notified_events{0};
  boost::signals2::scoped_connection c = t.store.on_appended().connect(
      [&](const std::vector<RecordedEvent>& events) { notified_events += int(events.size()); });
  const auto batch = make_events(3);
  std::vector<AppendResult> results(kThreads);
  append_behind_lock(t.path, kThreads, [&](int i) {
    results[i] = t.store.append("order-1", ExpectedVersion::no_stream(), batch);
  });
  for (const AppendResult& r : results) CHECK(r == AppendResult{3, 2, 4});
  CHECK(notified_events.load() == 3);
  const auto stored = t.store.read_stream("order-1").to_vector();
  REQUIRE(stored.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(stored[i].id == batch[i].id);
  CHECK(t.store.head_position() == 4);
  CHECK(t.store.verify().ok());
}

TEST_CASE("one caller's ConcurrencyError or DuplicateEventError does not fail its group") {
  constexpr int kThreads = 16;
  TempStore t;
  made(t);  // the store exists: its commits go to the WAL counted here
  for (int i = 0; i < kThreads; ++i)
    t.store.append("iso-" + std::to_string(i), ExpectedVersion::no_stream(), make_event());
  const EventData taken = make_event();
  t.store.append("other-1", ExpectedVersion::no_stream(), taken);
  const Position head_before = t.store.head_position();
  const std::size_t commits_before = wal_commits(t.path);

  // Thread i: i % 4 == 1 expects a wrong version, i % 4 == 3 reuses an id of another stream,
  // the others append two events with the right version.
  enum class Outcome { landed, concurrency_error, duplicate_error, other_error };
  std::vector<Outcome> outcomes(kThreads, Outcome::other_error);
  std::vector<AppendResult> results(kThreads);
  append_behind_lock(t.path, kThreads, [&](int i) {
    const std::string stream = "iso-" + std::to_string(i);
    try {
      if (i % 4 == 1) {
        t.store.append(stream, ExpectedVersion::exact(5), make_event());
      } else if (i % 4 == 3) {
        const std::vector<EventData> batch{make_event(), taken};
        t.store.append(stream, ExpectedVersion::exact(1), batch);
      } else {
        results[i] = t.store.append(stream, ExpectedVersion::exact(1), make_events(2));
      }
      outcomes[i] = Outcome::landed;
    } catch (const ConcurrencyError& e) {
      outcomes[i] = e.stream() == stream && e.actual_version() == 1 ? Outcome::concurrency_error
                                                                    : Outcome::other_error;
    } catch (const DuplicateEventError& e) {
      outcomes[i] =
          e.event_id() == taken.id.to_string() ? Outcome::duplicate_error : Outcome::other_error;
    }
  });

  const std::size_t commits = wal_commits(t.path) - commits_before;
  MESSAGE((kThreads / 2), " successful appends took ", commits, " commits");
  CHECK(commits < kThreads / 2);  // the callers did share commits
  std::set<Position> positions;
  for (int i = 0; i < kThreads; ++i) {
    CAPTURE(i);
    const std::string stream = "iso-" + std::to_string(i);
    if (i % 4 == 1) {
      CHECK(outcomes[i] == Outcome::concurrency_error);
    } else if (i % 4 == 3) {
      CHECK(outcomes[i] == Outcome::duplicate_error);
    } else {
      CHECK(outcomes[i] == Outcome::landed);
      CHECK(results[i].stream_version == 3);
      CHECK(results[i].last_position == results[i].first_position + 1);
      positions.insert(results[i].first_position);
      positions.insert(results[i].last_position);
    }
    CHECK(t.store.stream_version(stream) == (i % 2 == 0 ? 3 : 1));
  }
  const auto all = t.store.read_all().to_vector();
  REQUIRE(all.size() == head_before + kThreads);  // 8 appends of 2 events
  for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i].position == i + 1);
  CHECK(positions.size() == kThreads);
  CHECK(*positions.begin() == head_before + 1);
  CHECK(*positions.rbegin() == head_before + kThreads);
  CHECK(t.store.stream_version("other-1") == 1);
  CHECK(t.store.verify().ok());
}

TEST_CASE("an append that fails after writing leaves nothing of itself in its group's commit") {
  // Odd threads append to a new stream an event that compensates an event that does not
  // exist: the writer has created the stream's row when it finds out. A group commits without
  // savepoints first; such a failure must make it start over with each append isolated, or the
  // orphaned stream row would be committed with the others (verify: a stream without events).
  constexpr int kThreads = 8;
  TempStore t;
  made(t);  // the store exists: its commits go to the WAL counted here
  t.store.append("seed-1", ExpectedVersion::no_stream(), make_event());
  const std::size_t commits_before = wal_commits(t.path);
  std::vector<int> refused(kThreads, 0);
  append_behind_lock(t.path, kThreads, [&](int i) {
    if (i % 2 == 0) {
      t.store.append("ok-" + std::to_string(i), ExpectedVersion::no_stream(), make_event());
      return;
    }
    EventData e = make_event();
    e.metadata.compensates = EventId::generate();
    try {
      t.store.append("ghost-" + std::to_string(i), ExpectedVersion::no_stream(), e);
    } catch (const InvalidArgument&) {
      refused[static_cast<std::size_t>(i)] = 1;
    }
  });
  const std::size_t commits = wal_commits(t.path) - commits_before;
  MESSAGE((kThreads / 2), " good appends beside ", (kThreads / 2), " failing ones took ", commits,
          " commits");
  CHECK(commits < kThreads / 2);  // they were grouped
  for (int i = 0; i < kThreads; ++i) {
    CAPTURE(i);
    if (i % 2 == 0) {
      CHECK(t.store.stream_version("ok-" + std::to_string(i)) == 1);
    } else {
      CHECK(refused[static_cast<std::size_t>(i)] == 1);
      CHECK(t.store.stream_version("ghost-" + std::to_string(i)) == 0);
    }
  }
  std::optional<std::int64_t> stream_rows;
  t.store.read_sql(
      [&](Sql& sql) { stream_rows = sql.query_integer("SELECT count(*) FROM streams"); });
  CHECK(stream_rows == std::int64_t{1 + kThreads / 2});
  CHECK(t.store.head_position() == 1 + kThreads / 2);
  const VerifyResult v = t.store.verify();
  CHECK(v.ok());
}

TEST_CASE("a slot connected while an append waits for the write lock hears of its commit") {
  // No slot is connected when the append starts, so it makes no copies of its events; the
  // slot connected meanwhile must still get them (read back after the commit), as they are.
  TempStore t;
  made(t);  // the store exists: its commits go to the WAL counted here
  t.store.append("before-1", ExpectedVersion::any(), make_event());
  const EventData retried = make_event();
  t.store.append("retry-1", ExpectedVersion::no_stream(), retried);
  EventData e = make_event("test.Late", "late payload");
  e.metadata.actor = "tester";
  e.metadata.values["k"] = "v";
  std::vector<RecordedEvent> heard;
  std::mutex mu;
  boost::signals2::scoped_connection c;
  {
    WriteLock lock(t.path);
    std::thread appender([&] {
      t.store.append("late-1", ExpectedVersion::no_stream(),
                     std::vector<EventData>{e, make_event()});
      t.store.append("retry-1", ExpectedVersion::no_stream(), retried);  // a retry: nothing new
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the append waits for the lock
    c = t.store.on_appended().connect([&](const std::vector<RecordedEvent>& events) {
      std::lock_guard g(mu);
      heard.insert(heard.end(), events.begin(), events.end());
    });
    lock.release();
    appender.join();
  }
  const std::vector<RecordedEvent> stored = t.store.read_stream("late-1").to_vector();
  REQUIRE(stored.size() == 2);
  std::lock_guard g(mu);
  REQUIRE(heard.size() == 2);
  CHECK(heard[0] == stored[0]);
  CHECK(heard[1] == stored[1]);
  CHECK(heard[0].metadata.values.at("k") == "v");
  CHECK(heard[0].previous_hash == t.store.read_stream("retry-1").to_vector().front().hash);
}
TEST_SUITE_END();

namespace {

// Makes the store's database refuse every event of type `type` (a rule of the database the
// library does not know: a trigger on SQLite, a CHECK constraint on PostgreSQL).
void refuse_type_in_database(EventStore& store, const std::string& type) {
  store.write_sql([&](Sql& sql) {
    if (sql.dialect() == SqlDialect::postgres) {
      sql.execute("ALTER TABLE events ADD CONSTRAINT refused_type CHECK (type <> '" + type + "')");
    } else {
      sql.execute("CREATE TRIGGER refused_type BEFORE INSERT ON events WHEN NEW.type = '" + type +
                  "' BEGIN SELECT RAISE(ABORT, 'refused by a rule of the database'); END");
    }
  });
}

// What `kThreads` threads saw appending `kAppends` events each, each to a new stream, thread 0
// with `bad` events (the others with good ones): how many calls landed, and the messages of
// the calls that threw, per thread.
struct Appended {
  std::vector<int> landed;
  std::vector<std::vector<std::string>> errors;
  // Thread i's first error message ("" when none).
  std::string first_error(int i) const {
    const auto& mine = errors[static_cast<std::size_t>(i)];
    return mine.empty() ? std::string() : mine.front();
  }
};

Appended append_beside_bad_thread(EventStore& store, int threads, int appends,
                                  const std::function<EventData()>& bad) {
  Appended out{std::vector<int>(threads, 0), std::vector<std::vector<std::string>>(threads)};
  run_threads(threads, [&](int i) {
    for (int k = 0; k < appends; ++k) {
      const std::string stream = "t" + std::to_string(i) + "-" + std::to_string(k);
      try {
        store.append(stream, ExpectedVersion::no_stream(), i == 0 ? bad() : make_event());
        ++out.landed[static_cast<std::size_t>(i)];
      } catch (const Error& e) {
        out.errors[static_cast<std::size_t>(i)].push_back(e.what());
      }
    }
  });
  return out;
}

}  // namespace

TEST_CASE("an append the database refuses for its own data fails alone: its group commits") {
  // Thread 0's events break a rule of the database; its appends share commit groups with the
  // others' (8 threads appending as fast as they can). Each must fail alone.
  constexpr int kThreads = 8;
  constexpr int kAppends = 40;
  TempStore t;
  refuse_type_in_database(t.store, "test.Refused");
  const Appended seen = append_beside_bad_thread(t.store, kThreads, kAppends,
                                                 [] { return make_event("test.Refused"); });
  CHECK(seen.landed[0] == 0);
  CHECK(seen.errors[0].size() == kAppends);
  for (int i = 1; i < kThreads; ++i) {
    CAPTURE(i);
    CHECK(seen.landed[static_cast<std::size_t>(i)] == kAppends);
    CHECK(seen.first_error(i) == "");
  }
  CHECK(t.store.head_position() == (kThreads - 1) * kAppends);
  CHECK(t.store.verify().ok());
}

TEST_CASE("an append with text that is not UTF-8 fails no other caller's append") {
  // On PostgreSQL thread 0's type, stream id or actor is refused (InvalidArgument) before it
  // joins a group; SQLite stores the bytes. Either way the other threads' appends all land.
  constexpr int kThreads = 8;
  constexpr int kAppends = 40;
  TempStore t;
  int n = 0;
  const Appended seen = append_beside_bad_thread(t.store, kThreads, kAppends, [&] {
    EventData e = make_event(n % 2 == 0 ? "test.\xff" : "test.Happened");
    if (n++ % 2 == 1) e.metadata.actor = "actor \xfe";
    return e;
  });
  if (factum::test::testing_postgres()) {
    CHECK(seen.landed[0] == 0);
    REQUIRE(seen.errors[0].size() == kAppends);
    CHECK(seen.errors[0][0].find("the type 'test.\\xff'") != std::string::npos);
    CHECK(seen.errors[0][1].find("the actor 'actor \\xfe'") != std::string::npos);
  } else {
    CHECK(seen.landed[0] == kAppends);
  }
  for (int i = 1; i < kThreads; ++i) {
    CAPTURE(i);
    CHECK(seen.landed[static_cast<std::size_t>(i)] == kAppends);
    CHECK(seen.first_error(i) == "");
  }
  CHECK(t.store.head_position() == (kThreads - 1) * kAppends + seen.landed[0]);
  CHECK(t.store.verify().ok());
}

TEST_CASE("readers beside appending writers see gap-free positions and whole batches") {
  constexpr int kWriters = 4;
  constexpr int kBatches = 40;
  constexpr int kReaders = 2;
  constexpr int kWarmUpReads = 5;
  StoreOptions options = TempStore::fast_options();
  options.read_page_size = 7;  // batches straddle pages
  TempStore t(options);
  std::atomic<int> writers_left{kWriters};
  // The writers hold back their last batch until each reader has read a few times, so
  // reads and writes overlap however the threads are scheduled.
  std::latch readers_warm(kReaders);
  std::vector<std::string> problems(kReaders);
  std::size_t total = 0;
  for (int w = 0; w < kWriters; ++w)
    for (int k = 0; k < kBatches; ++k) total += 1 + (w + k) % 5;

  run_threads(kWriters + kReaders, [&](int i) {
    if (i < kWriters) {
      try {
        for (int k = 0; k < kBatches; ++k) {
          if (k == kBatches - 1) readers_warm.wait();
          const std::string key = std::to_string(i) + "." + std::to_string(k);
          t.store.append("rw-" + std::to_string(i % 2), ExpectedVersion::any(),
                         batch_events(key, 1 + (i + k) % 5));
        }
      } catch (...) {
        writers_left.fetch_sub(1);  // so that the readers stop
        throw;
      }
      writers_left.fetch_sub(1);
      return;
    }
    const int r = i - kWriters;
    // Reads until the writers are done, then once more over the finished log.
    int reads = 0;
    try {
      for (bool last = false; !last && problems[r].empty();) {
        last = writers_left.load() == 0;
        problems[r] = check_whole_batches(t.store.read_all().to_vector(), true);
        if (problems[r].empty())
          problems[r] = check_whole_batches(
              t.store.read_stream("rw-" + std::to_string(r)).to_vector(), false);
        if (++reads == kWarmUpReads) readers_warm.count_down();
      }
    } catch (...) {
      if (reads < kWarmUpReads) readers_warm.count_down();  // so that the writers go on
      throw;
    }
    if (reads < kWarmUpReads) readers_warm.count_down();  // stopped early at a problem
  });

  for (int r = 0; r < kReaders; ++r) {
    CAPTURE(r);
    CHECK(problems[r] == "");
  }
  CHECK(t.store.head_position() == total);
  CHECK(t.store.verify().ok());
}

TEST_CASE("on_appended under concurrent appends delivers each committed event exactly once") {
  constexpr int kThreads = 8;
  constexpr int kAppends = 25;
  TempStore t;
  std::mutex mu;
  std::vector<RecordedEvent> delivered;
  std::vector<std::string> problems;
  boost::signals2::scoped_connection c =
      t.store.on_appended().connect([&](const std::vector<RecordedEvent>& events) {
        std::lock_guard lock(mu);
        for (std::size_t i = 1; i < events.size(); ++i)
          if (events[i].position != events[i - 1].position + 1)
            problems.push_back("a notification's events are not contiguous");
        delivered.insert(delivered.end(), events.begin(), events.end());
      });

  // Each thread appends with the version it read; on a conflict it appends the same batch
  // with any(). Every fifth batch is then sent again: a retry, which commits nothing.
  run_threads(kThreads, [&](int thread) {
    for (int k = 0; k < kAppends; ++k) {
      const std::string stream = "note-" + std::to_string((thread + k) % 3);
      const auto batch = make_events(1 + static_cast<std::size_t>(k % 3));
      try {
        t.store.append(stream, ExpectedVersion::exact(t.store.stream_version(stream)), batch);
      } catch (const ConcurrencyError&) {
        t.store.append(stream, ExpectedVersion::any(), batch);
      }
      if (k % 5 == 0) t.store.append(stream, ExpectedVersion::no_stream(), batch);
    }
  });

  c.disconnect();
  std::sort(delivered.begin(), delivered.end(),
            [](const RecordedEvent& a, const RecordedEvent& b) { return a.position < b.position; });
  CHECK(problems.empty());
  const auto all = t.store.read_all().to_vector();
  std::size_t expected = 0;
  for (int k = 0; k < kAppends; ++k) expected += kThreads * (1 + k % 3);
  CHECK(all.size() == expected);
  CHECK(delivered.size() == all.size());
  CHECK(delivered == all);  // every committed event once, exactly as stored
}

TEST_CASE("verify reads one snapshot while a writer appends: no false alarm") {
  // The writer's work is bounded (1,500 batches, about 4,500 events): were it to run until the
  // verifies end, each verify would walk a log that grew during the one before, and the test's
  // time would grow geometrically with how slow a verify is next to an append (under
  // ThreadSanitizer it never ended).
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_events(10));
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 1500; ++i) {
      // Batches of various sizes keep the log's end moving between any two reads.
      t.store.append("s-" + std::to_string(i % 7), ExpectedVersion::any(), make_events(1 + i % 5));
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    done = true;
  });
  int failures = 0;
  int during = 0;  // verifies that started while the writer was still appending
  std::string first_failure;
  for (int i = 0; i < 300 && (i < 20 || !done); ++i) {
    if (!done) ++during;
    const auto r = t.store.verify();
    if (!r.ok() && failures++ == 0) first_failure = r.message;
  }
  writer.join();
  MESSAGE(during, " verifies ran beside the writer");
  CHECK(during > 0);
  CHECK_MESSAGE(failures == 0, first_failure);
  CHECK(t.store.verify().events_checked == t.store.head_position());
}
