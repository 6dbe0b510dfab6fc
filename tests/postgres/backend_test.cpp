// What only the PostgreSQL backend has: its ordering lock seen from readers, its LISTEN/NOTIFY
// watcher, its schema's guards, verify against rows edited with raw SQL on the server, errors
// for a server that is not there, and the Sql dialect. (The backend-neutral behaviour is the
// eventstore suites' job, compiled a second time against PostgreSQL.)
#include <doctest/doctest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "factum/eventstore/query.hpp"
#include "factum/eventstore/tags.hpp"
#include "support/malformed_row.hpp"
#include "support/pg_test.hpp"
#include "support/silent_server.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::check_names_row;
using factum::test::check_reads_intact;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::pg_test_uri;
using factum::test::TempStore;
using Problem = VerifyResult::Problem;

namespace {

// A plain libpq connection on `uri`, for SQL behind the library's back.
class Raw {
 public:
  explicit Raw(const std::string& uri) : conn_(PQconnectdb(uri.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = PQerrorMessage(conn_);
      PQfinish(conn_);
      throw std::runtime_error("raw connection: " + why);
    }
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
  }
  ~Raw() { PQfinish(conn_); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;

  // Runs `sql`; throws with the server's message when it fails.
  void exec(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    const auto status = PQresultStatus(r);
    const std::string why = PQresultErrorMessage(r);
    PQclear(r);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) throw std::runtime_error(why);
  }
  // The first column of the first row, as text ("" when there is none).
  std::string text(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    std::string out;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    PQclear(r);
    return out;
  }

 private:
  PGconn* conn_;
};

// A store of 10 events over 3 streams (with metadata), and a raw connection on its schema whose
// session ignores triggers, so the SQL it runs can tamper with the log.
struct Tampered {
  Tampered() : uri(pg_test_uri()), store(EventStore::open(uri)), raw(uri) {
    for (int i = 0; i < 5; ++i) {
      auto batch = make_events(2, "p" + std::to_string(i) + "-");
      batch[0].metadata.actor = "alice";
      batch[1].metadata.values = {{"k", "v"}};
      store.append("s-" + std::to_string(i % 3), ExpectedVersion::any(), batch);
    }
    REQUIRE(store.verify().ok());
    raw.exec("SET session_replication_role = replica");  // triggers off for this session
  }
  VerifyResult after(const std::string& sql) {
    raw.exec(sql);
    return store.verify();
  }
  std::string uri;
  EventStore store;
  Raw raw;
};

}  // namespace

TEST_CASE("postgres: the schema refuses updates, deletes and truncation of events and streams") {
  const std::string uri = pg_test_uri();
  EventStore store = EventStore::open(uri);
  store.append("acct-1", ExpectedVersion::no_stream(), make_events(3));
  Raw raw(uri);
  for (const char* sql :
       {"UPDATE events SET payload = '\\x00' WHERE position = 1", "DELETE FROM events",
        "TRUNCATE events", "UPDATE streams SET stream_id = 'acct-2'", "DELETE FROM streams",
        "TRUNCATE streams CASCADE"}) {
    CAPTURE(sql);
    try {
      raw.exec(sql);
      FAIL("the statement ran");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()).find("factum:") != std::string::npos);
    }
  }
  CHECK(store.verify().ok());
  CHECK(store.head().position == 3);
}

TEST_CASE("postgres: verify names an edited payload, a deleted event and a cut tail") {
  SUBCASE("edited payload") {
    Tampered t;
    const auto r = t.after("UPDATE events SET payload = '\\x01' WHERE position = 4");
    CHECK(r.problem == Problem::hash_mismatch);
    CHECK(r.position == 4);
  }
  SUBCASE("deleted event") {
    Tampered t;
    const auto r = t.after("DELETE FROM events WHERE position = 3");
    CHECK(r.problem == Problem::position_gap);
    CHECK(r.position == 3);
  }
  SUBCASE("cut tail: the head row remembers the last position written") {
    Tampered t;
    const auto r = t.after("DELETE FROM events WHERE position >= 9");
    CHECK(r.problem == Problem::truncated);
    CHECK(r.position == 9);
  }
  SUBCASE("cut tail with the head row rewound: verify(expected_head) still sees it") {
    Tampered t;
    const Head kept = t.store.head();
    t.raw.exec(
        "DELETE FROM events WHERE position >= 9; UPDATE factum_store SET position = 8, hash = "
        "(SELECT hash FROM events WHERE position = 8)");
    CHECK(t.store.verify().ok());
    const auto r = t.store.verify(kept.hash);
    CHECK(r.problem == Problem::head_mismatch);
  }
  SUBCASE("a malformed id is reported, not thrown") {
    Tampered t;
    const auto r = t.after("UPDATE events SET event_id = '\\x0102' WHERE position = 6");
    CHECK(r.problem == Problem::malformed_row);
    CHECK(r.position == 6);
    CHECK_THROWS_AS(t.store.read_all().to_vector(), CorruptEventError);
  }
  SUBCASE("a row below version 1 is not hidden from a read of its stream") {
    Tampered t;
    REQUIRE(t.store.read_stream("s-1").to_vector().front().position == 3);
    const auto r = t.after("UPDATE events SET stream_version = 0 WHERE position = 3");
    CHECK(r.problem == Problem::malformed_row);
    CHECK(r.position == 3);
    try {
      t.store.read_stream("s-1").to_vector();
      FAIL("expected CorruptEventError");
    } catch (const CorruptEventError& e) {
      CHECK(e.position() == 3);
      CHECK(std::string(e.what()).find("stream version") != std::string::npos);
    }
  }
  SUBCASE("a stream without events") {
    Tampered t;
    const auto r = t.after("INSERT INTO streams (stream_id, category) VALUES ('ghost-1', 'ghost')");
    CHECK(r.problem == Problem::unchained_row);
  }
  SUBCASE("a previous hash kept with an event, altered") {
    Tampered t;
    const auto r = t.after("UPDATE events SET previous_hash = hash WHERE position = 5");
    CHECK(r.problem == Problem::hash_mismatch);
    CHECK(r.position == 5);
    CHECK(r.message.find("previous hash kept") != std::string::npos);
  }
  SUBCASE("a previous hash kept with the first event, altered") {
    Tampered t;
    const auto r = t.after("UPDATE events SET previous_hash = hash WHERE position = 1");
    CHECK(r.problem == Problem::hash_mismatch);
    CHECK(r.position == 1);
  }
}

// The reader takes a NULL in a column that is never NULL when sound for a value of the wrong
// size (libpq gives it length 0): each column of the event at position 3 (stream s-1, version 1)
// made malformed in turn, NULL included where a tamperer dropped the column's NOT NULL, is named
// with its position by a read of its stream and of the whole log; another stream reads intact.
TEST_CASE("postgres: reads name each malformed column of a row, NULL included") {
  struct Case {
    const char* sql;
    const char* problem;
    bool stream_read;  // the row is still in its stream's page
  };
  const Case cases[] = {
      {"UPDATE events SET event_id = '\\x0102' WHERE position = 3", "its event id is not 16 bytes",
       true},
      {"ALTER TABLE events ALTER COLUMN event_id DROP NOT NULL; UPDATE events SET event_id = NULL "
       "WHERE position = 3",
       "its event id is not 16 bytes", true},
      {"UPDATE events SET hash = '\\x0102' WHERE position = 3", "its hash is not 32 bytes", true},
      {"ALTER TABLE events ALTER COLUMN hash DROP NOT NULL; UPDATE events SET hash = NULL WHERE "
       "position = 3",
       "its hash is not 32 bytes", true},
      {"UPDATE events SET stream_version = 0 WHERE position = 3",
       "its stream version is not a positive integer", true},
      {"UPDATE events SET schema_version = -1 WHERE position = 3",
       "its schema version is not a 32-bit unsigned integer", true},
      {"ALTER TABLE events ALTER COLUMN recorded_at DROP NOT NULL; UPDATE events SET recorded_at "
       "= NULL WHERE position = 3",
       "its recorded-at time is not an integer", true},
      {"UPDATE events SET correlation_id = '\\x0102' WHERE position = 3",
       "a metadata event id is not 16 bytes", true},
      {"UPDATE events SET extra = '\\xffffffff' WHERE position = 3",
       "its metadata key/values are malformed", true},
      {"UPDATE events SET stream_key = 999999 WHERE position = 3", "its stream key names no stream",
       false},
      {"ALTER TABLE events ALTER COLUMN stream_key DROP NOT NULL; UPDATE events SET stream_key = "
       "NULL WHERE position = 3",
       "its stream id is missing", false},
  };
  for (const Case& c : cases) {
    const std::string sql = c.sql;
    CAPTURE(sql);
    Tampered t;
    const auto before = t.store.read_stream("s-1").to_vector();
    REQUIRE(before.size() == 4);
    REQUIRE(before[0].position == 3);
    t.raw.exec(sql);
    if (c.stream_read) {
      check_names_row([&] { t.store.read_stream("s-1").to_vector(); }, 3, c.problem);
    }
    check_names_row([&] { t.store.read_all().to_vector(); }, 3, c.problem);
    check_names_row([&] { t.store.visit_all(1, [](const EventView&) { return true; }); }, 3,
                    c.problem);
    check_reads_intact(t.store, "s-0", 4, 1);
  }
}

// A NULL previous hash (as an older factum wrote rows) is looked up; a previous hash of another
// size is read as none, and verify names the row.
TEST_CASE("postgres: a row's previous hash NULL is looked up, of another size is not taken") {
  Tampered t;
  const auto before = t.store.read_all().to_vector();
  REQUIRE(before.size() == 10);
  t.raw.exec("UPDATE events SET previous_hash = NULL WHERE position = 5");
  auto after = t.store.read_all().to_vector();
  REQUIRE(after.size() == 10);
  CHECK(after[4].previous_hash == before[3].hash);
  CHECK(t.store.read_stream("s-2").to_vector().front().previous_hash == before[3].hash);
  CHECK(t.store.verify().ok());
  t.raw.exec("UPDATE events SET previous_hash = '\\x0102' WHERE position = 5");
  CHECK(t.store.read_stream("s-2").to_vector().front().previous_hash == Hash{});
  const auto r = t.store.verify();
  CHECK(r.problem == Problem::hash_mismatch);
  CHECK(r.position == 5);
}

TEST_CASE("postgres: readers never see a position before the ones below it have committed") {
  const std::string uri = pg_test_uri();
  EventStore writer_store = EventStore::open(uri, TempStore::fast_options());
  // A second store object: its own connections, as another process would have.
  EventStore reader_store = EventStore::open(uri, TempStore::fast_options());
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 60; ++i) {
        writer_store.append("race-" + std::to_string(w), ExpectedVersion::any(),
                            make_events(1 + i % 3));
      }
    });
  }
  std::thread reader([&] {
    Position seen = 0;
    while (!stop.load()) {
      // Each read starts where the last ended: a gap would be skipped forever.
      for (const RecordedEvent& e : reader_store.read_all(seen + 1)) {
        REQUIRE(e.position == seen + 1);
        seen = e.position;
      }
    }
  });
  for (auto& t : writers) t.join();
  stop = true;
  reader.join();
  const auto all = reader_store.read_all().to_vector();
  CHECK(all.size() == 4 * (20 * (1 + 2 + 3)));
  CHECK(reader_store.verify().ok());
}

TEST_CASE("postgres: a watcher hears appends made through another store object") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  auto watcher = a.watch();
  CHECK_FALSE(watcher->changed());  // the first call answers false
  CHECK_FALSE(watcher->changed());
  b.append("acct-1", ExpectedVersion::any(), make_events(1));
  bool heard = false;
  for (int i = 0; i < 200 && !heard; ++i) {
    heard = watcher->changed();
    if (!heard) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(heard);
  CHECK_FALSE(watcher->changed());  // heard once
}

namespace {

// Counts the events it applies, in a table of the store.
class Counter : public Projection {
 public:
  std::string name() const override { return "counter"; }
  std::uint32_t version() const override { return 1; }
  void reset(ProjectionContext& ctx) override {
    ctx.sql().execute(table_ddl(
        ctx.sql(), "CREATE TABLE " + ctx.table("seen") + " (position INTEGER PRIMARY KEY)"));
  }
  void apply(const RecordedEvent& e, ProjectionContext& ctx) override {
    ctx.sql().execute("INSERT INTO " + ctx.table("seen") + " VALUES (?1)",
                      {static_cast<std::int64_t>(e.position)});
  }
};

// Waits up to 10 s for `sub` to be live.
bool eventually_live(const Subscription& sub) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (sub.state() != Subscription::State::live) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Counts wake() calls; waits for the next one.
class Wakes {
 public:
  std::function<void()> callback() {
    return [this] {
      {
        std::lock_guard lock(mu_);
        ++count_;
      }
      cv_.notify_all();
    };
  }
  int count() {
    std::lock_guard lock(mu_);
    return count_;
  }
  // Waits until more than `seen` wakes have come; returns whether they did within 10 s.
  bool after(int seen) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return count_ > seen; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

}  // namespace

TEST_CASE("postgres: a watcher pushes another store object's commits, and survives a lost LISTEN") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  Wakes wakes;
  {
    auto watcher = a.watch();
    CHECK_FALSE(watcher->changed());
    REQUIRE(watcher->push(wakes.callback()));
    REQUIRE(wakes.after(0));  // the first wake: LISTEN is in place
    // Nothing is committed: no more wakes.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const int idle = wakes.count();
    CHECK(idle == 1);
    b.append("acct-1", ExpectedVersion::any(), make_events(1));
    REQUIRE(wakes.after(idle));
    CHECK(watcher->changed());  // the exact answer agrees

    // The server ends the listening connection: a wake (commits may have been missed), then a
    // new LISTEN, which still hears commits.
    Raw raw(uri);
    const int before_kill = wakes.count();
    raw.exec(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
        "AND query LIKE 'LISTEN factum_log_%' AND state = 'idle'");
    REQUIRE(wakes.after(before_kill));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // reconnected meanwhile
    const int reconnected = wakes.count();
    b.append("acct-1", ExpectedVersion::any(), make_events(1));
    REQUIRE(wakes.after(reconnected));
  }
  // The watcher is gone, its thread stopped: commits wake nobody.
  const int gone = wakes.count();
  b.append("acct-1", ExpectedVersion::any(), make_events(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(wakes.count() == gone);
}

TEST_CASE("postgres: a subscription polling once an hour gets another process's event at once") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Position> got;
  SubscriptionOptions options;
  options.poll_interval = std::chrono::hours(1);
  Subscription sub(a, options, [&](const RecordedEvent& e) {
    {
      std::lock_guard lock(mu);
      got.push_back(e.position);
    }
    cv.notify_all();
  });
  REQUIRE(eventually_live(sub));
  b.append("acct-1", ExpectedVersion::any(), make_events(2));  // another store object: no signal
  std::unique_lock lock(mu);
  CHECK(cv.wait_for(lock, std::chrono::seconds(10), [&] { return got.size() == 2; }));
  CHECK(got == std::vector<Position>{1, 2});
}

TEST_CASE("postgres: a projection polling once an hour applies another process's event at once") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  ProjectionEngine engine(a);
  engine.add(std::make_shared<Counter>(), {.poll_interval = std::chrono::hours(1)});
  REQUIRE(engine.wait_for("counter", 0, std::chrono::seconds(10)));
  b.append("acct-1", ExpectedVersion::any(), make_events(3));
  CHECK(engine.wait_for("counter", 3, std::chrono::seconds(10)));
}

TEST_CASE(
    "postgres: a server that is not there is a StorageError naming the URI, not the password") {
  StoreOptions o;
  try {
    EventStore::open("postgresql://someone:s3cret@127.0.0.1:1/nowhere", o);
    FAIL("opened");
  } catch (const StorageError& e) {
    const std::string what = e.what();
    CHECK(e.kind() == StorageError::Kind::io);
    CHECK(what.find("127.0.0.1:1/nowhere") != std::string::npos);
    CHECK(what.find("s3cret") == std::string::npos);
  }
  try {
    EventStore::open(
        "postgresql://127.0.0.1:1/nowhere?user=someone&password=s3cret&sslmode=disable", o);
    FAIL("opened");
  } catch (const StorageError& e) {
    CHECK(std::string(e.what()).find("s3cret") == std::string::npos);
    CHECK(std::string(e.what()).find("sslmode=disable") != std::string::npos);
  }
}

TEST_CASE("postgres: opening read-only, or without create, finds no store in an empty schema") {
  const std::string uri = pg_test_uri();
  StoreOptions o;
  o.read_only = true;
  try {
    EventStore::open(uri, o);
    FAIL("opened");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::not_a_store);
  }
  o.read_only = false;
  o.create_if_missing = false;
  CHECK_THROWS_AS(EventStore::open(uri, o), StorageError);
  // Nothing was created.
  Raw raw(uri);
  CHECK(raw.text("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == "0");
}

TEST_CASE("postgres: a store of a newer format is refused") {
  const std::string uri = pg_test_uri();
  { EventStore::open(uri); }
  Raw raw(uri);
  raw.exec("UPDATE factum_store SET format = 99");
  try {
    EventStore::open(uri);
    FAIL("opened");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::newer_format);
  }
}

TEST_CASE("postgres: Sql speaks PostgreSQL, with SQLite's parameter spelling") {
  const std::string uri = pg_test_uri();
  EventStore store = EventStore::open(uri);
  store.write_sql([](Sql& sql) {
    CHECK(sql.dialect() == SqlDialect::postgres);
    sql.execute(table_ddl(sql,
                          "CREATE TABLE kv (k TEXT PRIMARY KEY, n INTEGER NOT NULL, b BLOB) "
                          "WITHOUT ROWID"));
    // INTEGER became BIGINT: a 64-bit value fits.
    CHECK(sql.execute(
              "INSERT INTO kv VALUES (?1, ?2, ?3)",
              {std::string("a"), std::int64_t{1} << 40, Bytes{std::byte{0}, std::byte{7}}}) == 1);
    CHECK(sql.execute("INSERT INTO kv VALUES (?, ?, NULL) ON CONFLICT (k) DO UPDATE SET n = kv.n + "
                      "excluded.n",
                      {std::string("a"), std::int64_t{2}}) == 1);
    CHECK_THROWS_AS(sql.execute("INSERT INTO kv VALUES (?1, ?2, NULL)", {std::string("b")}),
                    InvalidArgument);
  });
  store.read_sql([](Sql& sql) {
    CHECK(sql.object_type("KV") == "table");
    CHECK(sql.object_type("events_by_id") == "index");
    CHECK(sql.object_type("nothing") == "");
    std::int64_t n = 0;
    Bytes b;
    sql.query("SELECT n, b FROM kv WHERE k = ?1", {std::string("a")}, [&](const SqlRow& row) {
      n = row.integer(0);
      b = row.blob(1);
    });
    CHECK(n == (std::int64_t{1} << 40) + 2);
    CHECK(b == (Bytes{std::byte{0}, std::byte{7}}));  // the upsert kept it
    CHECK_THROWS_AS(sql.execute("INSERT INTO kv VALUES ('c', 1, NULL)"), StorageError);
  });
}

TEST_CASE("postgres: events imported through SQL move the head, and appends continue the chain") {
  const std::string from_uri = pg_test_uri();
  EventStore from = EventStore::open(from_uri);
  from.append("acct-1", ExpectedVersion::no_stream(), make_events(4));
  from.append("acct-2", ExpectedVersion::no_stream(), make_events(2));
  const auto events = from.read_all().to_vector();
  EventStore to = EventStore::open(pg_test_uri());
  const Head head = to.import_events(events);
  CHECK(head == from.head());
  CHECK(to.head() == from.head());
  to.append("acct-1", ExpectedVersion::exact(4), make_events(1));
  CHECK(to.head().position == 7);
  CHECK(to.verify().ok());
  CHECK(to.read_all().to_vector().front() == events.front());
}

namespace {

// Holds the log's ordering lock from a raw connection, as a long append of another process
// would: appends made meanwhile queue up and commit as one group when it is released.
class OrderingLock {
 public:
  explicit OrderingLock(const std::string& uri) : raw_(uri) {
    raw_.exec("BEGIN; SELECT 1 FROM factum_store WHERE id = 1 FOR UPDATE");
    xid_ = raw_.text("SELECT (pg_current_xact_id()::text::bigint % 4294967296)::text");
  }
  // Waits until `waiters` sessions wait for this lock (other tests' locks do not count), then a
  // moment for the callers of this process to queue behind their leader, and releases it.
  void release_after(Raw& watcher, int waiters) {
    for (int i = 0; i < 500; ++i) {
      if (std::stoi(watcher.text("SELECT count(*) FROM pg_locks WHERE locktype = "
                                 "'transactionid' AND NOT granted AND transactionid::text = '" +
                                 xid_ + "'")) >= waiters) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    raw_.exec("COMMIT");
  }

 private:
  Raw raw_;
  std::string xid_;
};

std::int64_t commits(Raw& raw) { return std::stoll(raw.text("SELECT commits FROM factum_store")); }

}  // namespace

TEST_CASE(
    "postgres: appends queued behind the ordering lock commit together, each with its own fate") {
  const std::string uri = pg_test_uri();
  EventStore store = EventStore::open(uri, TempStore::fast_options());
  store.append("fixed-1", ExpectedVersion::no_stream(), make_events(2));
  const auto stored = store.read_stream("fixed-1").to_vector();
  Raw raw(uri);
  const std::int64_t commits_before = commits(raw);

  constexpr int kThreads = 16;
  const std::vector<EventData> same_batch = make_events(3, "same-");  // sent by 4 threads
  std::vector<EventData> reused = make_events(2, "reused-");          // its 2nd id reused below
  std::vector<std::string> outcome(kThreads);
  std::vector<AppendResult> results(kThreads);
  OrderingLock lock(uri);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        if (t < 4) {  // the same batch from four threads: stored once
          results[t] = store.append("same-1", ExpectedVersion::any(), same_batch);
        } else if (t == 4) {  // a version conflict
          results[t] = store.append("fixed-1", ExpectedVersion::exact(1), make_events(1));
        } else if (t == 5) {  // a retry of what is stored: the first try's result
          std::vector<EventData> retry(2);
          for (int i = 0; i < 2; ++i) {
            retry[i].id = stored[i].id;
            retry[i].type = stored[i].type;
            retry[i].payload = stored[i].payload;
          }
          results[t] = store.append("fixed-1", ExpectedVersion::no_stream(), retry);
        } else if (t == 6) {
          results[t] = store.append("reuse-1", ExpectedVersion::any(), reused);
        } else if (t == 7) {  // another stream, with an id that t == 6 may have written first
          std::vector<EventData> mine = make_events(2, "mine-");
          mine[1].id = reused[1].id;
          results[t] = store.append("reuse-2", ExpectedVersion::any(), mine);
        } else {  // plain appends, two per stream: one of each pair sees the other's version
          results[t] = store.append("plain-" + std::to_string(t / 2), ExpectedVersion::any(),
                                    make_events(1 + t % 3));
        }
        outcome[t] = "ok";
      } catch (const ConcurrencyError&) {
        outcome[t] = "conflict";
      } catch (const DuplicateEventError&) {
        outcome[t] = "duplicate";
      }
    });
  }
  lock.release_after(raw, 1);
  for (auto& t : threads) t.join();

  const std::int64_t group_commits = commits(raw) - commits_before;
  MESSAGE("commits for ", kThreads, " appends: ", group_commits);
  CHECK(group_commits <= 4);  // grouped: one commit per leader, not one per append
  for (int t = 0; t < 4; ++t) {
    CHECK(outcome[t] == "ok");
    CHECK(results[t] == results[0]);
  }
  CHECK(outcome[4] == "conflict");
  CHECK(outcome[5] == "ok");
  CHECK(results[5] == (AppendResult{2, 1, 2}));
  // Exactly one of the two appends sharing an id was stored.
  CHECK(((outcome[6] == "ok") != (outcome[7] == "ok")));
  CHECK(((outcome[6] == "duplicate") != (outcome[7] == "duplicate")));
  for (int t = 8; t < kThreads; ++t) CHECK(outcome[t] == "ok");
  CHECK(store.read_stream("same-1").to_vector().size() == 3);
  const auto all = store.read_all().to_vector();
  for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i].position == i + 1);
  CHECK(store.verify().ok());
  // Each acknowledged append is where its result says.
  for (int t = 0; t < kThreads; ++t) {
    if (outcome[t] != "ok") continue;
    CAPTURE(t);
    const auto& r = results[t];
    REQUIRE(r.last_position <= all.size());
    CHECK(all[r.last_position - 1].stream_version == r.stream_version);
  }
}

TEST_CASE("postgres: two appends to one stream in one group see each other's versions") {
  const std::string uri = pg_test_uri();
  EventStore store = EventStore::open(uri, TempStore::fast_options());
  store.append("warmup-1", ExpectedVersion::any(), make_events(1));
  Raw raw(uri);
  OrderingLock lock(uri);
  std::thread first([&] { store.append("acct-1", ExpectedVersion::no_stream(), make_events(2)); });
  // The first append leads (it waits for the lock alone); the next two queue behind it and
  // share the next group: the second expects what the first of them writes.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::atomic<int> ok{0};
  std::thread second([&] {
    store.append("acct-2", ExpectedVersion::no_stream(), make_events(1));
    ++ok;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread third([&] {
    store.append("acct-2", ExpectedVersion::exact(1), make_events(1));
    ++ok;
  });
  lock.release_after(raw, 1);
  first.join();
  second.join();
  third.join();
  CHECK(ok == 2);
  CHECK(store.stream_version("acct-2") == 2);
  CHECK(store.verify().ok());
}

// Streams made by one group learn their keys from their inserts (RETURNING, read back by their
// place among the group's statements); the next appends to them send those keys. Each event
// must land in its own stream. A key read one place off would name a neighbour made in the same
// group: appended to in key order (ascending, or in a second store descending), each stream is
// appended to before the neighbour whose key it would wrongly hold, so that neighbour is still at
// the version the misfiled row takes and nothing refuses it.
TEST_CASE("postgres: streams made together in one group are remembered by their own keys") {
  for (const bool ascending : {true, false}) {
    CAPTURE(ascending);
    const std::string uri = pg_test_uri();
    EventStore store = EventStore::open(uri, TempStore::fast_options());
    store.append("warmup-1", ExpectedVersion::any(), make_events(1));
    Raw raw(uri);
    OrderingLock lock(uri);
    std::thread first([&] { store.append("warmup-1", ExpectedVersion::exact(1), make_events(1)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    constexpr int kStreams = 4;
    std::vector<std::thread> makers;
    for (int i = 1; i <= kStreams; ++i) {
      makers.emplace_back([&store, i] {
        const std::string stream = "made-" + std::to_string(i);
        store.append(stream, ExpectedVersion::no_stream(), make_events(1, stream + "-first-"));
      });
    }
    lock.release_after(raw, 1);
    first.join();
    for (std::thread& t : makers) t.join();
    // Made by one group: the four streams' rows were inserted together.
    REQUIRE(raw.text("SELECT count(DISTINCT xmin::text) FROM streams WHERE stream_id LIKE "
                     "'made-%'") == "1");
    std::vector<std::string> by_key;  // the streams in the order of their keys
    for (int k = 0; k < kStreams; ++k) {
      by_key.push_back(raw.text(
          "SELECT stream_id FROM streams WHERE stream_id LIKE 'made-%' "
          "ORDER BY stream_key " +
          std::string(ascending ? "ASC" : "DESC") + " OFFSET " + std::to_string(k) + " LIMIT 1"));
    }
    for (const std::string& stream : by_key) {
      CHECK(store.append(stream, ExpectedVersion::exact(1), make_events(1, stream + "-"))
                .stream_version == 2);
    }
    EventStore fresh = EventStore::open(uri, TempStore::fast_options());
    for (int i = 1; i <= kStreams; ++i) {
      const std::string stream = "made-" + std::to_string(i);
      const auto events = fresh.read_stream(stream).to_vector();
      REQUIRE(events.size() == 2);
      for (const RecordedEvent& e : events) CHECK(to_string(e.payload).rfind(stream + "-", 0) == 0);
    }
    CHECK(fresh.verify().ok());
  }
}

// Conditional appends that share a group are each decided with the group (no step-by-step
// statements under the lock): each is checked against the stored log by its own statements,
// and against the events of the appends before it in the group, which are not stored yet.
// Fresh streams (the careful way) and remembered ones (the one round trip way first).
TEST_CASE("postgres: conditional appends in one group see the stored log and each other") {
  for (const bool remembered : {false, true}) {
    CAPTURE(remembered);
    const std::string uri = pg_test_uri();
    EventStore store = EventStore::open(uri, TempStore::fast_options());
    const std::vector<std::string> streams = {"claim-1", "claim-2", "claim-3"};
    if (remembered) {
      for (const std::string& s : streams) {
        store.append(s, ExpectedVersion::no_stream(), make_events(1));
      }
    }
    store.append("lead-1", ExpectedVersion::any(), make_events(1));
    Raw raw(uri);
    struct Claim {
      std::string tag;
      Position after = 0;
      std::string outcome;
      AppendResult result;
      std::vector<Position> named;
      std::size_t stream = 0;  // index in `streams`
    };
    const auto claim = [](std::string tag, Position after, std::size_t stream) {
      Claim c;
      c.tag = std::move(tag);
      c.after = after;
      c.stream = stream;
      return c;
    };
    // Appends the claims in one group, in order, behind a leader that waits for the lock alone.
    const auto group = [&](std::vector<Claim>& claims) {
      const std::int64_t commits_before = commits(raw);
      OrderingLock lock(uri);
      std::thread first([&] { store.append("lead-1", ExpectedVersion::any(), make_events(1)); });
      std::vector<std::thread> threads;
      for (std::size_t t = 0; t < claims.size(); ++t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        threads.emplace_back([&, t] {
          Claim& c = claims[t];
          EventData e = make_event("user.Claimed", c.tag);
          set_tags(e.metadata, {c.tag});
          try {
            c.result = store.append(streams[c.stream], ExpectedVersion::any(), {&e, 1},
                                    AppendCondition{Query::tagged({c.tag}), c.after});
            c.outcome = "ok";
          } catch (const AppendConditionFailed& f) {
            c.outcome = "failed";
            c.named = f.positions();
          }
        });
      }
      lock.release_after(raw, 1);
      first.join();
      for (auto& t : threads) t.join();
      MESSAGE("commits for ", claims.size() + 1, " appends: ", commits(raw) - commits_before);
    };
    const Position head = store.head_position();
    // The 2nd claims the 1st's name: it fails on the 1st's event, not stored when it is decided.
    std::vector<Claim> claims = {claim("username:x", head, 0), claim("username:x", head, 1),
                                 claim("username:y", head, 2)};
    group(claims);
    CHECK(claims[0].outcome == "ok");
    CHECK(claims[1].outcome == "failed");
    CHECK(claims[1].named == std::vector<Position>{claims[0].result.last_position});
    CHECK(claims[2].outcome == "ok");
    CHECK(store.stream_version(streams[1]) == (remembered ? 1u : 0u));
    CHECK(store.head_position() == head + 3);  // the leader's and two claims
    // Now the 2nd claims x again, on the log as read before: it fails on the stored claim, and
    // the claims around it (each with its own statements' answers) commit.
    const Position next = store.head_position();
    claims = {claim("username:z", next, 0), claim("username:x", head, 1),
              claim("username:w", next, 2)};
    group(claims);
    CHECK(claims[0].outcome == "ok");
    CHECK(claims[1].outcome == "failed");
    CHECK(claims[1].named == std::vector<Position>{head + 2});  // after the leader's
    CHECK(claims[2].outcome == "ok");
    for (const char* tag : {"username:x", "username:y", "username:z", "username:w"}) {
      CAPTURE(tag);
      CHECK(read_query(store, Query::tagged({tag})).events.size() == 1);
    }
    CHECK(store.head_position() == next + 3);
    // A claim to a stream appended before it in the group runs step by step (its statements
    // under the lock, after the decided appends' rows went in): it sees the claim before it too.
    const Position last = store.head_position();
    claims = {claim("username:v", last, 0), claim("username:v", last, 0)};
    group(claims);
    CHECK(claims[0].outcome == "ok");
    CHECK(claims[1].outcome == "failed");
    CHECK(claims[1].named == std::vector<Position>{claims[0].result.last_position});
    CHECK(read_query(store, Query::tagged({"username:v"})).events.size() == 1);
    CHECK(store.head_position() == last + 2);
    CHECK(store.verify().ok());
  }
}

TEST_CASE("postgres: busy_timeout 0 fails an append at once while another holds the log's lock") {
  const std::string uri = pg_test_uri();
  StoreOptions o = TempStore::fast_options();
  o.busy_timeout = std::chrono::milliseconds(0);
  EventStore store = EventStore::open(uri, o);
  store.append("acct-1", ExpectedVersion::no_stream(), make_events(1));
  OrderingLock lock(uri);
  const auto start = std::chrono::steady_clock::now();
  try {
    store.append("acct-1", ExpectedVersion::exact(1), make_events(1));
    FAIL("appended while the lock was held");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::busy);
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  Raw raw(uri);
  lock.release_after(raw, 0);
  CHECK(store.append("acct-1", ExpectedVersion::exact(1), make_events(1)).stream_version == 2);
}

// A writer remembers the streams it wrote and the head it left, and sends its next append in
// one round trip guarded by the log's commit counter; whatever another writer did meanwhile,
// the append is decided by the log as it is now.
TEST_CASE("postgres: a writer whose remembered versions went stale appends by the log as it is") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  CHECK(a.append("acct-1", ExpectedVersion::no_stream(), make_events(1)).stream_version == 1);
  CHECK(a.append("acct-1", ExpectedVersion::exact(1), make_events(1)).stream_version == 2);
  // Behind a's back: b writes to a's stream and to another.
  CHECK(b.append("acct-1", ExpectedVersion::exact(2), make_events(1)).stream_version == 3);
  b.append("acct-2", ExpectedVersion::no_stream(), make_events(2));
  // a remembers acct-1 at version 2: the log says 3.
  try {
    a.append("acct-1", ExpectedVersion::exact(2), make_events(1));
    FAIL("appended by a stale version");
  } catch (const ConcurrencyError& e) {
    CHECK(e.actual_version() == 3);
  }
  CHECK(a.append("acct-1", ExpectedVersion::exact(3), make_events(1)) == AppendResult{4, 6, 6});
  // Now b's memory is stale, and it expects nothing.
  CHECK(b.append("acct-1", ExpectedVersion::any(), make_events(2)) == AppendResult{6, 7, 8});
  CHECK(a.append("acct-2", ExpectedVersion::any(), make_events(1)) == AppendResult{3, 9, 9});
  // A write through SQL (an import, a read model) in between.
  b.write_sql([](Sql& sql) { sql.execute("CREATE TABLE IF NOT EXISTS side_note (n int)"); });
  CHECK(a.append("acct-1", ExpectedVersion::exact(6), make_events(1)) == AppendResult{7, 10, 10});
  const auto all = b.read_all().to_vector();
  REQUIRE(all.size() == 10);
  for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i].position == i + 1);
  CHECK(b.stream_version("acct-1") == 7);
  CHECK(a.verify().ok());
}

// A writer remembers each stream's key and sends it with the stream's rows. Here the store is
// made again in its place behind the writer's back (the schema dropped, a new store made) and
// brought to the same head and commit count, with the key the writer remembers for acct-1 now
// another stream's: the writer must see that the store is not the one it remembers, not put its
// event into that stream.
TEST_CASE("postgres: a store made again in its place is not taken for the one a writer knew") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  a.append("acct-1", ExpectedVersion::no_stream(), make_events(1, "a-"));
  a.append("acct-1", ExpectedVersion::exact(1), make_events(1, "a-"));
  SUBCASE("the writer is alone") {}
  SUBCASE("another writer commits between the writer's appends") {
    // a's groups are then chained on the server, whose head row's guard checks the store.
    EventStore other = EventStore::open(uri, TempStore::fast_options());
    other.append("side-1", ExpectedVersion::any(), make_events(1, "s-"));
    a.append("acct-1", ExpectedVersion::exact(2), make_events(1, "a-"));
    other.append("side-1", ExpectedVersion::any(), make_events(1, "s-"));
  }
  Raw raw(uri);
  const std::string schema = raw.text("SELECT current_schema()");
  REQUIRE(!schema.empty());
  const std::string commits = raw.text("SELECT commits FROM factum_store");
  raw.exec("DROP SCHEMA \"" + schema + "\" CASCADE; CREATE SCHEMA \"" + schema + "\"");
  {
    EventStore b = EventStore::open(uri, TempStore::fast_options());
    b.append("other-1", ExpectedVersion::no_stream(), make_events(2, "o-"));  // key 1, as acct-1
  }
  raw.exec("UPDATE factum_store SET commits = " + commits);
  REQUIRE(raw.text("SELECT stream_key FROM streams WHERE stream_id = 'other-1'") == "1");

  // a remembers acct-1 (key 1) at version 2 (3) and the head at position 2 (5). Either its next
  // append names acct-1 (the one round trip way, whose guard checks the store), or an append to a
  // stream it does not know comes first (the two round trips way, which must not carry the
  // streams it remembers over to the new store).
  SUBCASE("the next append names the remembered stream") {}
  SUBCASE("an append to a new stream comes first") {
    CHECK(a.append("fresh-1", ExpectedVersion::no_stream(), make_events(1, "f-")).stream_version ==
          1);
  }
  const AppendResult r = a.append("acct-1", ExpectedVersion::any(), make_events(1, "n-"));
  CHECK(r.stream_version == 1);
  EventStore fresh = EventStore::open(uri, TempStore::fast_options());
  CHECK(fresh.read_stream("other-1").to_vector().size() == 2);
  const auto acct = fresh.read_stream("acct-1").to_vector();
  REQUIRE(acct.size() == 1);
  CHECK(acct[0].stream_version == 1);
  CHECK(fresh.verify().ok());
}

TEST_CASE("postgres: retries and stored ids are told apart after a remembered append") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  const auto batch = make_events(2, "r-");
  const AppendResult first = a.append("acct-1", ExpectedVersion::any(), batch);
  CHECK(first == AppendResult{2, 1, 2});
  // The same batch again: a retry, answered with the first result; nothing is written.
  CHECK(a.append("acct-1", ExpectedVersion::any(), batch) == first);
  CHECK(a.head().position == 2);
  // Another event under a stored id: refused, and nothing of its batch is stored.
  auto clash = make_events(2, "c-");
  clash[1].id = batch[0].id;
  CHECK_THROWS_AS(a.append("acct-1", ExpectedVersion::any(), clash), DuplicateEventError);
  CHECK(a.head().position == 2);
  // Appends go on from the head as the retry left it.
  const AppendResult next = a.append("acct-1", ExpectedVersion::exact(2), make_events(1));
  CHECK(next == AppendResult{3, 3, 3});
  CHECK(a.append("acct-1", ExpectedVersion::exact(3), make_events(1)).first_position == 4);
  CHECK(a.verify().ok());
}

namespace {

// Records, behind the library's back, which of the writer's ways moved the head row in each
// transaction (by the text of the statement that moved it): "chained" (on the server),
// "speculated" (the one round trip guarded by the cached head), "careful" (after the lock and
// the look-ups).
class HeadMoves {
 public:
  explicit HeadMoves(const std::string& uri) : raw_(uri) {
    raw_.exec("CREATE TABLE head_moves (n bigserial, way text NOT NULL)");
    raw_.exec(
        "CREATE FUNCTION head_moved() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "INSERT INTO head_moves (way) VALUES (CASE WHEN current_query() LIKE 'WITH RECURSIVE%' "
        "THEN 'chained' WHEN current_query() LIKE '%AND commits = $1%' THEN 'speculated' ELSE "
        "'careful' END); RETURN NEW; END $$");
    raw_.exec(
        "CREATE TRIGGER head_moved AFTER UPDATE ON factum_store FOR EACH ROW EXECUTE FUNCTION "
        "head_moved()");
  }
  // The ways of the commits since the last call, in order ("chained,chained,careful").
  std::string since_last() {
    const std::string out = raw_.text(
        "SELECT coalesce(string_agg(way, ',' ORDER BY n), '') FROM head_moves WHERE n > " +
        std::to_string(seen_));
    seen_ = std::stoll(raw_.text("SELECT coalesce(max(n), 0) FROM head_moves"));
    return out;
  }

 private:
  Raw raw_;
  long long seen_ = 0;
};

}  // namespace

// busy_timeout bounds the wait for the log's ordering lock, nothing else. Every commit that
// wakes listeners (pg_notify) also takes one server-wide lock at commit, held by each notifying
// commit on the server (any store's, any database's) until its flush is done: an append whose
// ordering lock was free waits its turn there, and does not fail as busy because another store
// on the server committed at the same moment — whichever of the writer's ways it takes.
TEST_CASE("postgres: busy_timeout 0 does not fail appends while other stores commit") {
  const std::string uri = pg_test_uri();
  StoreOptions o = TempStore::fast_options();
  o.busy_timeout = std::chrono::milliseconds(0);
  EventStore a = EventStore::open(uri, o);
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  a.append("acct-1", ExpectedVersion::no_stream(), make_events(1));
  const EventId first = a.read_stream("acct-1").to_vector().front().id;
  HeadMoves moves(uri);
  // Two other sessions commit notifications as fast as they can (another store's appends, a
  // service's own NOTIFY), each commit holding the server's notify lock for a moment.
  std::atomic<bool> stop{false};
  std::atomic<long> noise_commits{0};
  std::vector<std::thread> noise;
  for (int n = 0; n < 2; ++n) {
    noise.emplace_back([&] {
      try {
        Raw raw(uri);
        while (!stop.load()) {
          raw.exec("BEGIN; SELECT pg_notify('factum_test_noise', 'x'); COMMIT");
          noise_commits.fetch_add(1);
        }
      } catch (const std::exception&) {
        noise_commits.store(-1000000);  // the noise stopped: seen below
      }
    });
  }
  std::string failure;
  std::uint64_t appended = 1;
  for (int i = 0; i < 2400 && failure.empty(); ++i) {
    try {
      switch (i % 8) {
        case 0:  // the caller's SQL, which moves the head too (and makes the next append careful)
          a.write_sql(
              [](Sql& sql) { sql.execute("CREATE TABLE IF NOT EXISTS side_note (n int)"); });
          --appended;
          break;
        case 5:  // chained: b committed since a's last append
          b.append("acct-b", ExpectedVersion::any(), make_events(1));
          a.append("acct-1", ExpectedVersion::any(), make_events(1));
          break;
        case 6: {  // careful: a compensation
          std::vector<EventData> fix = make_events(1);
          fix[0].metadata.compensates = first;
          a.append("acct-1", ExpectedVersion::any(), fix);
          break;
        }
        case 7: {  // step by step: an on_appending slot
          boost::signals2::scoped_connection slot =
              a.on_appending().connect([](AppendTransaction&) {});
          a.append("acct-1", ExpectedVersion::any(), make_events(1));
          break;
        }
        default:  // careful after the caller's SQL, then speculated
          a.append("acct-1", ExpectedVersion::any(), make_events(1));
          break;
      }
      ++appended;
    } catch (const StorageError& e) {
      failure = e.what();
    }
  }
  stop = true;
  for (std::thread& t : noise) t.join();
  CHECK_MESSAGE(failure.empty(), failure);
  CHECK(noise_commits.load() > 0);
  CHECK(a.stream_version("acct-1") == appended);
  // Each way committed many times beside the noise: 2 of 8 steps speculated, 1 chained, 3 or
  // more careful (writer.cpp, writer_decide.cpp).
  const std::string ways = moves.since_last();
  auto count = [&](const std::string& way) {
    std::size_t n = 0;
    for (std::size_t at = ways.find(way); at != std::string::npos; at = ways.find(way, at + 1)) {
      ++n;
    }
    return n;
  };
  CHECK(count("speculated") >= 400);
  CHECK(count("chained") >= 200);
  CHECK(count("careful") >= 600);
  // The commit's bound: the larger of busy_timeout and 60 s.
  std::string bound;
  a.read_sql([&](Sql& sql) {
    sql.query("SELECT current_setting('factum.commit_lock_timeout')", {},
              [&](const SqlRow& row) { bound = std::string(row.text(0)); });
  });
  CHECK(bound == "60000");
  o.busy_timeout = std::chrono::milliseconds(120000);
  EventStore patient = EventStore::open(uri, o);
  patient.read_sql([&](Sql& sql) {
    sql.query("SELECT current_setting('factum.commit_lock_timeout')", {},
              [&](const SqlRow& row) { bound = std::string(row.text(0)); });
  });
  CHECK(bound == "120000");
  CHECK(a.verify().ok());
}

// A page after a full one is read in parts sent at once (postgres/reader.hpp, ReadAhead): the
// server must not wait, its transaction open, for a visitor that takes its time over the rows
// of the first part (a projection that writes each event somewhere): the reader keeps taking in
// what the server sends, so the server finishes the page as it would a page of one statement.
TEST_CASE("postgres: a slow visitor does not keep the server reading a page") {
  const std::string uri = pg_test_uri();
  EventStore store = EventStore::open(uri, TempStore::fast_options());
  const std::string kilobyte(8192, 'k');
  for (int i = 0; i < 80; ++i) {
    std::vector<EventData> batch;
    for (int k = 0; k < 100; ++k) batch.push_back(make_event("test.Big", kilobyte));
    store.append("big-1", ExpectedVersion::any(), batch);
  }
  Raw raw(uri);
  // The backends still running a part of a page of the log, other than this test's watcher.
  auto reading = [&] {
    return raw.text(
        "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND state = "
        "'active' AND query LIKE '%e.position >= $1 AND e.position < $2%'");
  };
  std::string during;
  std::uint64_t seen = 0;
  store.visit_all(1, [&](const EventView& v) {
    ++seen;
    if (v.position > 4096 && v.position <= 4096 + 1000) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a slow visitor
    }
    if (v.position == 4096 + 1000) during = reading();
  });
  CHECK(seen == 8000);
  CHECK(during == "0");
}

// Two writers (two store objects: two processes, as far as the server can tell) taking turns:
// each finds that the other committed since its last group, so its remembered head is stale.
// Its groups then go in one round trip with the server assigning the positions and chaining the
// hashes under the lock; they must be exactly the groups the writer would have written itself,
// and its subscribers must hear the events as stored. Once alone again, the writer speculates
// from its own head.
TEST_CASE("postgres: writers taking turns chain their appends on the server, as stored") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  std::vector<RecordedEvent> heard;
  boost::signals2::scoped_connection listening =
      a.on_appended().connect([&](const std::vector<RecordedEvent>& events) {
        heard.insert(heard.end(), events.begin(), events.end());
      });
  // A stream id of multi-byte characters: the server's hash input is split around the version
  // by bytes.
  a.append("acct-ä€", ExpectedVersion::no_stream(), make_events(1, "a0-"));
  b.append("acct-b", ExpectedVersion::no_stream(), make_events(1, "b0-"));
  HeadMoves moves(uri);
  std::vector<AppendResult> results;
  for (int i = 1; i <= 6; ++i) {
    auto batch = make_events(static_cast<std::size_t>(i % 3 + 1), "a" + std::to_string(i) + "-");
    batch[0].metadata.actor = "alice";
    batch.back().metadata.values = {{"k", std::to_string(i)}};
    results.push_back(a.append("acct-ä€", ExpectedVersion::any(), batch));
    b.append("acct-b", ExpectedVersion::any(), make_events(1, "b" + std::to_string(i) + "-"));
  }
  // Each append after the first of each writer found the other's commit: chained on the
  // server (the first of a's only after a speculation that failed, rolled back).
  std::string chained = "chained";
  for (int i = 1; i < 12; ++i) chained += ",chained";
  CHECK(moves.since_last() == chained);
  // The results are the positions and versions as stored.
  const auto all = b.read_all().to_vector();
  StreamVersion version = 1;
  for (const AppendResult& r : results) {
    REQUIRE(r.last_position <= all.size());
    CHECK(r.stream_version == version + (r.last_position - r.first_position + 1));
    for (Position p = r.first_position; p <= r.last_position; ++p) {
      CHECK(all[p - 1].stream_id == "acct-ä€");
      CHECK(all[p - 1].stream_version == ++version);
    }
  }
  // The subscriber heard each of a's events with its stored position, hashes and fields.
  std::vector<RecordedEvent> stored;
  for (const RecordedEvent& e : all) {
    if (e.stream_id == "acct-ä€") stored.push_back(e);
  }
  CHECK(heard == stored);
  CHECK(b.verify().ok());
  // Alone again: a's first group still follows b's commit (chained), its second finds the head
  // where the first left it (chained, and no longer contended), and the ones after speculate
  // from its own head.
  for (int i = 1; i <= 4; ++i) {
    a.append("acct-ä€", ExpectedVersion::any(), make_events(2, "alone" + std::to_string(i) + "-"));
  }
  CHECK(moves.since_last() == "chained,chained,speculated,speculated");
  CHECK(a.verify().ok());
}

// Callers queued behind the lock while the writer is contended go in one chained group: each
// gets its own results and its subscribers' events, as stored.
TEST_CASE("postgres: a chained group of several callers gives each its own results") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  std::vector<RecordedEvent> heard;
  std::mutex heard_mutex;
  boost::signals2::scoped_connection listening =
      a.on_appended().connect([&](const std::vector<RecordedEvent>& events) {
        const std::lock_guard<std::mutex> guard(heard_mutex);
        heard.insert(heard.end(), events.begin(), events.end());
      });
  for (const char* stream : {"s-1", "s-2", "s-3"}) {
    a.append(stream, ExpectedVersion::no_stream(), make_events(1, std::string(stream) + "-"));
  }
  b.append("b-1", ExpectedVersion::no_stream(), make_events(1, "b-"));  // a is not alone
  HeadMoves moves(uri);
  Raw raw(uri);
  OrderingLock lock(uri);
  AppendResult r1;
  AppendResult r2;
  AppendResult r3;
  // The first leads, and waits for the lock; the others queue behind it and share the next group.
  std::thread first([&] { r1 = a.append("s-1", ExpectedVersion::any(), make_events(1, "x-")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread second(
      [&] { r2 = a.append("s-2", ExpectedVersion::exact(1), make_events(2, "y-")); });
  std::thread third([&] { r3 = a.append("s-3", ExpectedVersion::any(), make_events(3, "z-")); });
  lock.release_after(raw, 1);
  first.join();
  second.join();
  third.join();
  CHECK(moves.since_last() == "chained,chained");
  CHECK(r1 == AppendResult{2, 5, 5});
  CHECK(r2.stream_version == 3);
  CHECK(r3.stream_version == 4);
  CHECK(r2.last_position - r2.first_position == 1);
  CHECK(r3.last_position - r3.first_position == 2);
  CHECK(std::min(r2.first_position, r3.first_position) == 6);
  const auto all = b.read_all().to_vector();
  REQUIRE(all.size() == 10);
  for (const auto& [r, stream] :
       {std::pair{r1, "s-1"}, std::pair{r2, "s-2"}, std::pair{r3, "s-3"}}) {
    for (Position p = r.first_position; p <= r.last_position; ++p) {
      CHECK(all[p - 1].stream_id == stream);
    }
  }
  std::vector<RecordedEvent> stored(all.begin() + 4, all.end());
  std::sort(heard.begin(), heard.end(),
            [](const RecordedEvent& x, const RecordedEvent& y) { return x.position < y.position; });
  CHECK(std::vector<RecordedEvent>(heard.begin() + 3, heard.end()) == stored);
  CHECK(a.verify().ok());
}

// A group chained on the server trusts nothing the writer remembers of its streams but their
// keys, and checks those: another writer's appends to them and a stream whose last events went
// away (a restore of the log that lost them) are appended to by the log as it is; a stale
// expected version, a retry of a stored batch, a key that names another stream now and a
// damaged head row are refused, and the group decided (and reported) the careful way.
TEST_CASE("postgres: a chained group finds its streams as they are, not as remembered") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  a.append("acct-1", ExpectedVersion::no_stream(), make_events(2, "a-"));
  b.append("acct-2", ExpectedVersion::no_stream(), make_events(1, "b-"));
  a.append("acct-1", ExpectedVersion::exact(2), make_events(1, "c-"));  // contended from here
  b.append("acct-2", ExpectedVersion::any(), make_events(1, "d-"));
  HeadMoves moves(uri);
  std::string ways;    // that the appends below commit by
  bool intact = true;  // the log as verify() wants it
  SUBCASE("another writer appended to the stream") {
    // b's (a stream it does not know); then each chained: the server gives the versions.
    ways = "careful,chained,chained,chained,chained,chained";
    b.append("acct-1", ExpectedVersion::exact(3), make_events(2, "e-"));
    CHECK(a.append("acct-1", ExpectedVersion::any(), make_events(1, "f-")) ==
          AppendResult{6, 8, 8});
    b.append("acct-2", ExpectedVersion::any(), make_events(1, "h-"));
    CHECK(a.append("acct-1", ExpectedVersion::any(), make_events(1, "i-")) ==
          AppendResult{7, 10, 10});
    // An aggregate's way: a version read now, newer than the one a remembers.
    b.append("acct-1", ExpectedVersion::exact(7), make_events(1, "j-"));
    CHECK(a.append("acct-1", ExpectedVersion::exact(8), make_events(2, "k-")) ==
          AppendResult{10, 12, 13});
    CHECK_THROWS_AS(a.append("acct-1", ExpectedVersion::exact(5), make_events(1, "g-")),
                    ConcurrencyError);
  }
  SUBCASE("a stale expected version") {
    ways = "careful";  // b's; a's is refused (chained, then the careful way), not committed
    b.append("acct-1", ExpectedVersion::exact(3), make_events(1, "e-"));
    try {
      a.append("acct-1", ExpectedVersion::exact(3), make_events(1, "f-"));
      FAIL("appended by a stale version");
    } catch (const ConcurrencyError& e) {
      CHECK(e.actual_version() == 4);
    }
  }
  SUBCASE("a retry of a stored batch") {
    ways = "chained,chained";  // a's first try and b's; the retry writes nothing
    const auto batch = make_events(2, "r-");
    const AppendResult first = a.append("acct-1", ExpectedVersion::any(), batch);
    CHECK(first == AppendResult{5, 6, 7});
    b.append("acct-2", ExpectedVersion::any(), make_events(1, "h-"));
    CHECK(a.append("acct-1", ExpectedVersion::any(), batch) == first);
    CHECK(a.head().position == 8);
  }
  SUBCASE("the second stream of a group went back") {
    ways = "careful,chained,chained";  // a's new stream, b's, a's
    a.append("acct-3", ExpectedVersion::no_stream(), make_events(2, "k-"));  // positions 6, 7
    Raw raw(uri);
    raw.exec("SET session_replication_role = replica");
    raw.exec("DELETE FROM events WHERE position = 7");
    raw.exec(
        "UPDATE factum_store SET position = 6, hash = (SELECT hash FROM events WHERE position = "
        "6), commits = commits + 1");
    b.append("acct-2", ExpectedVersion::any(), make_events(1, "l-"));
    // a remembers acct-3 at version 2: the log says 1. Its check is the group's second.
    std::vector<StreamAppend> both(2);
    both[0] = {"acct-1", ExpectedVersion::any(), make_events(1, "m-")};
    both[1] = {"acct-3", ExpectedVersion::any(), make_events(1, "n-")};
    const std::vector<AppendResult> r = a.append_multi(both);
    REQUIRE(r.size() == 2);
    CHECK(r[0].stream_version == 4);
    CHECK(r[1].stream_version == 2);
    CHECK(a.read_stream("acct-3").to_vector().size() == 2);
  }
  SUBCASE("the stream's key names another stream now") {
    ways = "careful";  // a's, after a refusal: acct-1 is a new stream
    Raw raw(uri);
    raw.exec("SET session_replication_role = replica");
    raw.exec("UPDATE streams SET stream_id = 'acct-9' WHERE stream_id = 'acct-1'");
    CHECK(a.append("acct-1", ExpectedVersion::any(), make_events(1, "o-")).stream_version == 1);
    CHECK(a.read_stream("acct-1").to_vector().size() == 1);
    CHECK(a.read_stream("acct-9").to_vector().size() == 3);
    intact = false;  // the renamed stream's hashes cover its old name
  }
  SUBCASE("the head row is damaged") {
    ways = "";  // nothing is written onto it
    Raw raw(uri);
    raw.exec("SET session_replication_role = replica");  // not recorded
    raw.exec("UPDATE factum_store SET hash = '\\x00'");
    CHECK_THROWS_AS(a.append("acct-1", ExpectedVersion::any(), make_events(1, "p-")),
                    CorruptEventError);
    CHECK(raw.text("SELECT count(*) FROM events") == "5");
    intact = false;
  }
  SUBCASE("the stream's last events went away") {
    ways = "chained,chained,chained";  // b's and a's, by the log as it is
    // A restore that lost acct-1's last event (position 3) and b's event after it: the log
    // and the head row as they would be.
    Raw raw(uri);
    raw.exec("SET session_replication_role = replica");
    raw.exec("DELETE FROM events WHERE position >= 3");
    raw.exec(
        "UPDATE factum_store SET position = 2, hash = (SELECT hash FROM events WHERE position = "
        "2), commits = commits + 1");
    // acct-2 has a row and no event now: it does not exist as far as an expected version goes.
    CHECK_THROWS_AS(b.append("acct-2", ExpectedVersion::stream_exists(), make_events(1, "q-")),
                    ConcurrencyError);
    b.append("acct-2", ExpectedVersion::any(), make_events(1, "i-"));  // b is not a's memory
    // a remembers acct-1 at version 3: the log says 2.
    CHECK(a.append("acct-1", ExpectedVersion::any(), make_events(1, "j-")).stream_version == 3);
    const auto events = a.read_stream("acct-1").to_vector();
    REQUIRE(events.size() == 3);
    CHECK(events.back().stream_version == 3);
    CHECK(
        a.append("acct-1", ExpectedVersion::stream_exists(), make_events(1, "r-")).stream_version ==
        4);
  }
  if (intact) CHECK(a.verify().ok());
  // A refused chained attempt is rolled back (not recorded).
  CHECK(moves.since_last() == ways);
}

namespace {

// Leaves `depth` connections idle in the store's pool (nested reads each take one).
void fill_pool(EventStore& store, int depth) {
  if (depth == 0) return;
  store.read_sql([&](Sql&) { fill_pool(store, depth - 1); });
}

}  // namespace

namespace {

// Rows whose kept previous hash is missing or is not the hash of the event before them (the
// first event's: 32 zero bytes), counted behind the library's back.
std::string rows_not_keeping_previous(Raw& raw) {
  return raw.text(
      "SELECT count(*) FROM events e WHERE e.previous_hash IS DISTINCT FROM coalesce((SELECT "
      "p.hash FROM events p WHERE p.position = e.position - 1), decode(repeat('00', 32), 'hex'))");
}

// Every read of `store` (the whole log, each stream both ways, the category "acct", each event
// by id, the compensations of each) gives each event the hash of the event before it.
void check_reads_give_previous(const EventStore& store) {
  const std::vector<RecordedEvent> all = store.read_all().to_vector();
  REQUIRE_FALSE(all.empty());
  const auto previous_of = [&](const RecordedEvent& e) {
    return e.position == 1 ? Hash{} : all[e.position - 2].hash;
  };
  std::set<std::string> streams;
  std::size_t read = 0;
  for (const RecordedEvent& e : all) {
    CHECK(e.previous_hash == previous_of(e));
    streams.insert(e.stream_id);
    const auto one = store.read_event(e.id);
    REQUIRE(one.has_value());
    CHECK(one->previous_hash == previous_of(e));
    for (const RecordedEvent& c : store.compensations_of(e.id)) {
      CHECK(c.previous_hash == previous_of(c));
    }
  }
  for (const std::string& s : streams) {
    for (const RecordedEvent& e : store.read_stream(s).to_vector()) {
      CHECK(e.previous_hash == previous_of(e));
      ++read;
    }
    for (const RecordedEvent& e : store.read_stream_backward(s).to_vector()) {
      CHECK(e.previous_hash == previous_of(e));
    }
  }
  CHECK(read == all.size());
  for (const RecordedEvent& e : store.read_category("acct").to_vector()) {
    CHECK(e.previous_hash == previous_of(e));
  }
}

// Appends through `a` by each of the writer's ways, `b` committing in between: speculated (a
// alone), chained (a contended), careful (b's first, a compensation) and step by step (an
// on_appending slot). Returns the ways the commits took.
std::string append_every_way(const std::string& uri, EventStore& a, EventStore& b,
                             const std::string& tag) {
  a.append("acct-" + tag, ExpectedVersion::any(), make_events(3, tag + "a-"));
  std::vector<StreamAppend> both(2);
  both[0] = {"acct-new-" + tag, ExpectedVersion::no_stream(), make_events(2, tag + "b-")};
  both[1] = {"acct-" + tag, ExpectedVersion::any(), make_events(1, tag + "c-")};
  a.append_multi(both);
  HeadMoves moves(uri);
  a.append("acct-" + tag, ExpectedVersion::any(), make_events(2, tag + "d-"));
  b.append("acct-b-" + tag, ExpectedVersion::any(), make_events(2, tag + "e-"));
  a.append("acct-" + tag, ExpectedVersion::any(), make_events(2, tag + "f-"));
  b.append("acct-b-" + tag, ExpectedVersion::any(), make_events(1, tag + "g-"));
  a.append("acct-new-" + tag, ExpectedVersion::any(), make_events(1, tag + "h-"));
  {
    boost::signals2::scoped_connection slot = a.on_appending().connect([](AppendTransaction&) {});
    a.append("acct-" + tag, ExpectedVersion::any(), make_events(2, tag + "i-"));
  }
  std::vector<EventData> fix = make_events(1, tag + "j-");
  fix[0].metadata.compensates = a.read_stream("acct-" + tag).to_vector().front().id;
  a.append("acct-" + tag, ExpectedVersion::any(), fix);
  return moves.since_last();
}

}  // namespace

// A stream page read each event's previous hash by a look-up of the event before it (half the
// page's cost on the server): the rows keep it now, whichever way the writer appended them or
// an import wrote them, verify checks it, and rows without one are looked up.
TEST_CASE("postgres: each event keeps its previous hash, whichever way it was appended") {
  const std::string uri = pg_test_uri();
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  Raw raw(uri);
  const std::string ways = append_every_way(uri, a, b, "1");
  for (const char* way : {"speculated", "chained", "careful"}) {
    CHECK_MESSAGE(ways.find(way) != std::string::npos, ways);
  }
  CHECK(rows_not_keeping_previous(raw) == "0");
  check_reads_give_previous(a);
  CHECK(a.verify().ok());

  // Imported events keep it too (the import writes its rows through the shared SQL handle).
  const std::string to_uri = pg_test_uri();
  EventStore to = EventStore::open(to_uri, TempStore::fast_options());
  to.import_events(a.read_all().to_vector());
  to.append("acct-1", ExpectedVersion::any(), make_events(2, "after-"));
  Raw to_raw(to_uri);
  CHECK(rows_not_keeping_previous(to_raw) == "0");
  check_reads_give_previous(to);
  CHECK(to.verify().ok());

  // Rows that keep none (an older factum's, or lost) are looked up.
  to_raw.exec("SET session_replication_role = replica");
  to_raw.exec("UPDATE events SET previous_hash = NULL WHERE position % 3 = 0");
  REQUIRE(rows_not_keeping_previous(to_raw) != "0");
  check_reads_give_previous(to);
  CHECK(to.verify().ok());
}

// Stores made before the rows kept their previous hash have no such column: they are read by
// look-up and appended to by every way, as before; once the column is added by hand, stores
// opened after keep it for the events they append.
TEST_CASE("postgres: a store made before events kept their previous hash works as before") {
  const std::string uri = pg_test_uri();
  {
    EventStore made = EventStore::open(uri);
    made.append("acct-0", ExpectedVersion::no_stream(), make_events(2, "made-"));
  }
  Raw raw(uri);
  raw.exec("ALTER TABLE events DROP COLUMN previous_hash");
  EventStore a = EventStore::open(uri, TempStore::fast_options());
  EventStore b = EventStore::open(uri, TempStore::fast_options());
  const std::string ways = append_every_way(uri, a, b, "1");
  for (const char* way : {"speculated", "chained", "careful"}) {
    CHECK_MESSAGE(ways.find(way) != std::string::npos, ways);
  }
  check_reads_give_previous(a);
  CHECK(a.verify().ok());

  raw.exec("ALTER TABLE events ADD COLUMN previous_hash bytea");
  EventStore c = EventStore::open(uri, TempStore::fast_options());
  c.append("acct-0", ExpectedVersion::any(), make_events(2, "kept-"));
  CHECK(raw.text("SELECT count(*) FROM events WHERE previous_hash IS NOT NULL") == "2");
  a.append("acct-0", ExpectedVersion::any(), make_events(1, "by-a-"));  // a still keeps none
  CHECK(raw.text("SELECT count(*) FROM events WHERE previous_hash IS NOT NULL") == "2");
  check_reads_give_previous(c);
  CHECK(c.verify().ok());
}

TEST_CASE("postgres: a server that accepts the connection and never answers fails open in time") {
  // No connect_timeout in the URI: factum's default (10 s) ends the wait, and names the host.
  factum::test::SilentServer server;
  const std::string port = std::to_string(server.port());
  const std::string message = factum::test::error_connecting(
      server, [&] { EventStore::open("postgresql://factum@127.0.0.1:" + port + "/postgres"); });
  CHECK(message.find("timeout expired") != std::string::npos);
  CHECK(message.find("127.0.0.1:" + port) != std::string::npos);
  CHECK(message.find("[io]") != std::string::npos);
}

TEST_CASE("postgres: a read just after the server ends the idle connections retries on a new one") {
  // pg_terminate_backend returns before the sessions end: the pooled connections still look
  // alive when the reads below take them. A read that fails on one is run again on a new
  // connection, never on another pooled one, which is as dead.
  const std::string name = "ending_" + std::to_string(::getpid());
  EventStore store = EventStore::open(factum::test::pg_with_application_name(pg_test_uri(), name),
                                      TempStore::fast_options());
  store.append("acct-1", ExpectedVersion::no_stream(), make_events(3));
  Raw raw(factum::test::pg_server_uri());
  for (int round = 0; round < 10; ++round) {
    CAPTURE(round);
    fill_pool(store, 4);
    raw.text(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
        "application_name = '" +
        name + "'");
    CHECK(store.stream_version("acct-1") == 3);
    CHECK(store.read_stream("acct-1").to_vector().size() == 3);
  }
  CHECK(store.append("acct-1", ExpectedVersion::exact(3), make_events(1)) == AppendResult{4, 4, 4});
}

TEST_CASE("postgres: reads and appends after the server ended the store's idle connections work") {
  // The server ends every session of the store (pg_terminate_backend, as an administrator or a
  // restart does) while they sit idle in its pool: the next calls use new connections.
  const std::string name = "ended_" + std::to_string(::getpid());
  EventStore store = EventStore::open(factum::test::pg_with_application_name(pg_test_uri(), name),
                                      TempStore::fast_options());
  store.append("acct-1", ExpectedVersion::no_stream(), make_events(3));
  fill_pool(store, 4);
  Raw raw(factum::test::pg_server_uri());
  CHECK(std::stoi(raw.text("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                           "application_name = '" +
                           name + "'")) >= 5);
  REQUIRE(factum::test::pg_await_sessions_gone(
      name, std::chrono::steady_clock::now() + std::chrono::seconds(30)));

  for (int i = 0; i < 3; ++i) {
    CHECK(store.stream_version("acct-1") == 3);
    CHECK(store.read_stream("acct-1").to_vector().size() == 3);
    CHECK(store.head_position() == 3);
  }
  std::optional<std::int64_t> streams;
  store.read_sql([&](Sql& sql) { streams = sql.query_integer("SELECT count(*) FROM streams"); });
  CHECK(streams == std::int64_t{1});
  CHECK(store.verify().ok());
  CHECK(store.append("acct-1", ExpectedVersion::exact(3), make_events(1)) == AppendResult{4, 4, 4});
  CHECK(store.read_all().to_vector().size() == 4);
}

TEST_CASE(
    "postgres: the server's message about refused data reaches the caller in one escaped line") {
  // The server quotes the row it refused (DETAIL: Failing row contains ...), actor included.
  TempStore t;
  t.store.write_sql([](Sql& sql) {
    sql.execute("ALTER TABLE events ADD CONSTRAINT refused_type CHECK (type <> 'test.Refused')");
  });
  EventData e = make_event("test.Refused");
  e.metadata.actor = "mallory\x1b]0;owned\x07";
  try {
    t.store.append("acct-1", ExpectedVersion::any(), e);
    FAIL("the database accepted a refused type");
  } catch (const StorageError& error) {
    const std::string message = error.what();
    CHECK(message.find("refused_type") != std::string::npos);
    CHECK(message.find("mallory\\x1b]0;owned\\x07") != std::string::npos);
    CHECK(message.find('\x1b') == std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}
