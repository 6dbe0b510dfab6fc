// The SQLite writer remembers each stream's key and version and the log's head between its
// commits (sqlite/writer.hpp, Writer::Remembered). These cases change the log behind what it
// remembers (another store object, another process, write_sql on its own connection, failed
// appends) and check that the next append works from the log as it is: no false ConcurrencyError,
// no refused insert, no position or version written twice.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/fault_vfs.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::TempStore;

namespace {

std::int64_t stream_rows(const EventStore& store) {
  std::optional<std::int64_t> rows;
  store.read_sql([&](Sql& sql) { rows = sql.query_integer("SELECT count(*) FROM streams"); });
  return rows.value_or(-1);
}

}  // namespace

TEST_CASE("a writer sees another store object's appends before its next append") {
  TempStore t;
  EventStore other = EventStore::open(t.path, TempStore::fast_options());
  CHECK(t.store.append("s", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 1, 1});
  // What t's writer remembers (s at version 1, the head at 1) goes stale here.
  CHECK(other.append("s", ExpectedVersion::exact(1), make_event()) == AppendResult{2, 2, 2});
  CHECK(other.append("u", ExpectedVersion::no_stream(), make_events(2)) == AppendResult{2, 3, 4});

  CHECK_THROWS_AS(t.store.append("s", ExpectedVersion::exact(1), make_event()), ConcurrencyError);
  CHECK(t.store.append("s", ExpectedVersion::exact(2), make_event()) == AppendResult{3, 5, 5});
  CHECK(t.store.append("u", ExpectedVersion::exact(2), make_event()) == AppendResult{3, 6, 6});
  CHECK(other.append("s", ExpectedVersion::exact(3), make_event()) == AppendResult{4, 7, 7});
  CHECK(t.store.append("s", ExpectedVersion::any(), make_event()) == AppendResult{5, 8, 8});

  CHECK(t.store.head_position() == 8);
  CHECK(stream_rows(t.store) == 2);
  CHECK(t.store.verify().ok());
}

TEST_CASE("a writer sees another process's appends before its next append") {
  TempStore t;
  CHECK(t.store.append("s", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 1, 1});
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int code = 0;
    try {
      EventStore mine = EventStore::open(t.path, TempStore::fast_options());
      mine.append("s", ExpectedVersion::exact(1), make_events(3));
      mine.append("v", ExpectedVersion::no_stream(), make_event());
    } catch (...) {
      code = 1;
    }
    _exit(code);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  CHECK(t.store.append("s", ExpectedVersion::exact(4), make_event()) == AppendResult{5, 6, 6});
  CHECK(t.store.append("v", ExpectedVersion::exact(1), make_event()) == AppendResult{2, 7, 7});
  CHECK(t.store.verify().ok());
}

TEST_CASE("after write_sql the writer reads the log again") {
  // write_sql runs on the writer's own connection, which no data version tells apart: a stream
  // row inserted there (as the insert guard allows) must be found, and the head it moves must be
  // read again, or the next append would be refused at a taken position.
  TempStore t;
  t.store.append("s", ExpectedVersion::no_stream(), make_event());
  t.store.write_sql([&](Sql& sql) {
    sql.execute("INSERT INTO streams (stream_id, category) VALUES ('w', 'w')");
    sql.execute(
        "INSERT INTO events (position, stream_key, stream_version, event_id, type, "
        "schema_version, payload, recorded_at, hash) SELECT 2, stream_key, 2, randomblob(16), "
        "'test.Raw', 1, x'00', 0, zeroblob(32) FROM streams WHERE stream_id = 's'");
  });
  REQUIRE(t.store.head_position() == 2);
  CHECK(t.store.append("s", ExpectedVersion::exact(2), make_event()) == AppendResult{3, 3, 3});
  CHECK(t.store.append("w", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 4, 4});
  CHECK(stream_rows(t.store) == 2);
}

TEST_CASE("after a failed append the same stream appends at its stored version") {
  TempStore t;
  t.store.append("s", ExpectedVersion::no_stream(), make_events(2));
  // Fails before writing (version), after creating a stream row (compensation of no event),
  // and in its first insert (an id stored in another stream).
  CHECK_THROWS_AS(t.store.append("s", ExpectedVersion::exact(5), make_event()), ConcurrencyError);
  EventData ghost = make_event();
  ghost.metadata.compensates = EventId::generate();
  CHECK_THROWS_AS(t.store.append("g", ExpectedVersion::no_stream(), ghost), InvalidArgument);
  const EventData stored = make_event();
  t.store.append("o", ExpectedVersion::no_stream(), stored);
  CHECK_THROWS_AS(t.store.append("n", ExpectedVersion::no_stream(), stored), DuplicateEventError);
  CHECK(stream_rows(t.store) == 2);  // neither g nor n was left behind

  CHECK(t.store.append("s", ExpectedVersion::exact(2), make_event()) == AppendResult{3, 4, 4});
  CHECK(t.store.append("n", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 5, 5});
  CHECK(t.store.verify().ok());
}

TEST_CASE("a retry right after its commit returns the first result, whatever it expected") {
  // With a matching expected version the writer does not look the ids up before inserting: the
  // refused first insert is what tells it a retry.
  TempStore t;
  const auto batch = make_events(3);
  const AppendResult first = t.store.append("s", ExpectedVersion::any(), batch);
  CHECK(t.store.append("s", ExpectedVersion::any(), batch) == first);
  CHECK(t.store.append("s", ExpectedVersion::no_stream(), batch) == first);
  CHECK(t.store.append("s", ExpectedVersion::exact(3), batch) == first);
  CHECK(t.store.append("s", ExpectedVersion::stream_exists(), batch) == first);
  CHECK(t.store.head_position() == 3);
  CHECK(t.store.append("s", ExpectedVersion::exact(3), make_event()) == AppendResult{4, 4, 4});
}

// More ways the log changes behind, or within, what the writer remembers.

namespace {

using factum::test::FaultFile;
using factum::test::FaultInjection;
using factum::test::FaultOp;
using factum::test::RawConnection;

// Runs `n` threads that each call `body(i)` while a raw connection holds the write lock, so
// that the writer commits them in as few groups as it can.
void behind_lock(const std::filesystem::path& file, int n, const std::function<void(int)>& body) {
  RawConnection lock(file);
  lock.exec("BEGIN IMMEDIATE");
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back([&, i] { body(i); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  lock.exec("ROLLBACK");
  for (auto& th : threads) th.join();
}

}  // namespace

TEST_CASE("import_events between appends (write_sql) does not leave a stale head") {
  TempStore source;
  source.store.append("a", ExpectedVersion::no_stream(), make_events(2));
  source.store.append("b", ExpectedVersion::no_stream(), make_events(1));
  const auto events = source.store.read_all().to_vector();
  TempStore t;
  t.store.import_events(std::span(events).first(1));
  CHECK(t.store.append("x", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 2, 2});
  // The import of a's second event must now fail (position 2 is taken), and nothing changes.
  CHECK_THROWS(t.store.import_events(std::span(events).subspan(1)));
  CHECK(t.store.append("a", ExpectedVersion::exact(1), make_event()) == AppendResult{2, 3, 3});
  CHECK(t.store.verify().ok());
}

TEST_CASE("a hook that throws, then hookless appends to the same stream") {
  TempStore t;
  t.store.append("s", ExpectedVersion::no_stream(), make_event());
  bool armed = true;
  {
    boost::signals2::scoped_connection slot =
        t.store.on_appending().connect([&](AppendTransaction& tx) {
          tx.sql().execute("CREATE TABLE IF NOT EXISTS side (n INTEGER)");
          tx.sql().execute("INSERT INTO side VALUES (1)");
          if (armed) throw std::runtime_error("slot refuses");
        });
    CHECK_THROWS(t.store.append("s", ExpectedVersion::exact(1), make_event()));
    armed = false;
    CHECK(t.store.append("s", ExpectedVersion::exact(1), make_event()) == AppendResult{2, 2, 2});
  }
  CHECK(t.store.append("s", ExpectedVersion::exact(2), make_event()) == AppendResult{3, 3, 3});
  CHECK(t.store.append("t", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 4, 4});
  CHECK(t.store.verify().ok());
}

TEST_CASE("append_multi with the same id in two streams fails whole, then both append") {
  TempStore t;
  t.store.append("a", ExpectedVersion::no_stream(), make_event());
  const EventData shared = make_event();
  std::vector<StreamAppend> multi{{"a", ExpectedVersion::exact(1), {shared}},
                                  {"b", ExpectedVersion::no_stream(), {shared}}};
  CHECK_THROWS_AS(t.store.append_multi(multi), DuplicateEventError);
  CHECK(stream_rows(t.store) == 1);
  // Same stream twice in one write, versions chained.
  std::vector<StreamAppend> twice{{"a", ExpectedVersion::exact(1), {make_event()}},
                                  {"a", ExpectedVersion::exact(2), {make_event()}},
                                  {"b", ExpectedVersion::no_stream(), {shared}}};
  const auto r = t.store.append_multi(twice);
  REQUIRE(r.size() == 3);
  CHECK(r[1] == AppendResult{3, 3, 3});
  CHECK(r[2] == AppendResult{1, 4, 4});
  // The retry of the whole append_multi returns the same results and writes nothing.
  CHECK(t.store.append_multi(twice) == r);
  CHECK(t.store.head_position() == 4);
  CHECK(t.store.append("a", ExpectedVersion::exact(3), make_event()) == AppendResult{4, 5, 5});
  CHECK(t.store.verify().ok());
}

TEST_CASE("a batch retried after its stream got more events, with every expected kind") {
  TempStore t;
  const auto batch = make_events(2);
  const AppendResult first = t.store.append("s", ExpectedVersion::no_stream(), batch);
  t.store.append("s", ExpectedVersion::exact(2), make_event());
  t.store.append("u", ExpectedVersion::no_stream(), make_event());
  CHECK(t.store.append("s", ExpectedVersion::any(), batch) == first);
  CHECK(t.store.append("s", ExpectedVersion::no_stream(), batch) == first);
  CHECK(t.store.append("s", ExpectedVersion::exact(3), batch) == first);  // matches the stream
  CHECK(t.store.append("s", ExpectedVersion::exact(0), batch) == first);
  CHECK(t.store.append("s", ExpectedVersion::stream_exists(), batch) == first);
  CHECK(t.store.head_position() == 4);
  // Into another stream: a duplicate, and no stream row is left behind.
  CHECK_THROWS_AS(t.store.append("w", ExpectedVersion::any(), batch), DuplicateEventError);
  CHECK(stream_rows(t.store) == 2);
  CHECK(t.store.append("s", ExpectedVersion::exact(3), make_event()) == AppendResult{4, 5, 5});
}

TEST_CASE("more than 4096 streams remembered: the map is cleared, versions stay right") {
  TempStore t;
  constexpr int kStreams = 4100;
  std::vector<StreamAppend> all;
  for (int i = 0; i < kStreams; ++i)
    all.push_back({"s-" + std::to_string(i), ExpectedVersion::no_stream(), {make_event()}});
  t.store.append_multi(all);
  for (int i : {0, 1, 4095, 4096, 4099}) {
    CAPTURE(i);
    CHECK(t.store.append("s-" + std::to_string(i), ExpectedVersion::exact(1), make_event())
              .stream_version == 2);
  }
  for (int i = 0; i < kStreams; i += 97) {
    CAPTURE(i);
    const auto r = t.store.append("s-" + std::to_string(i), ExpectedVersion::any(), make_event());
    CHECK(r.stream_version == t.store.stream_version("s-" + std::to_string(i)));
  }
  CHECK(t.store.verify().ok());
}

TEST_CASE("a checkpoint (TRUNCATE) and a raw write by other connections between appends") {
  TempStore t;
  t.store.append("s", ExpectedVersion::no_stream(), make_event());
  factum::test::raw_exec(t.path, "PRAGMA wal_checkpoint(TRUNCATE)");
  CHECK(t.store.append("s", ExpectedVersion::exact(1), make_event()) == AppendResult{2, 2, 2});
  factum::test::raw_exec(t.path, "PRAGMA wal_checkpoint(TRUNCATE)");
  factum::test::raw_exec(t.path, "INSERT INTO streams (stream_id, category) VALUES ('r', 'r')");
  CHECK(t.store.append("r", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 3, 3});
  factum::test::raw_exec(t.path, "PRAGMA wal_checkpoint(RESTART)");
  CHECK(t.store.append("s", ExpectedVersion::exact(2), make_event()) == AppendResult{3, 4, 4});
  CHECK(t.store.verify().ok());
}

TEST_CASE("after a failed COMMIT (fsync) the next appends use the log as it is") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  t.store.append("s", ExpectedVersion::no_stream(), make_event());
  const auto batch = make_events(2);
  fault.fail(FaultOp::sync, 1, factum::test::fault_codes::kIoErrFsync, 1, FaultFile::wal);
  CHECK_THROWS_AS(t.store.append("s", ExpectedVersion::exact(1), batch), StorageError);
  CHECK(t.store.append("s", ExpectedVersion::exact(1), batch) == AppendResult{3, 2, 3});
  CHECK(t.store.append("s", ExpectedVersion::exact(1), batch) == AppendResult{3, 2, 3});
  // A WAL write failing in the middle of a group, then a new stream.
  fault.fail(FaultOp::write, 1, factum::test::fault_codes::kIoErrWrite, 1, FaultFile::wal);
  CHECK_THROWS_AS(t.store.append("n", ExpectedVersion::no_stream(), make_events(3)), StorageError);
  CHECK(t.store.append("n", ExpectedVersion::no_stream(), make_event()) == AppendResult{1, 4, 4});
  CHECK(t.store.append("s", ExpectedVersion::exact(3), make_event()) == AppendResult{4, 5, 5});
  CHECK(t.store.verify().ok());
}

TEST_CASE("a group that starts over isolated keeps versions right for the next group") {
  TempStore t;
  const EventData taken = make_event();
  t.store.append("taken", ExpectedVersion::no_stream(), taken);
  for (int i = 0; i < 8; ++i)
    t.store.append("g-" + std::to_string(i), ExpectedVersion::no_stream(), make_event());
  for (int round = 0; round < 3; ++round) {
    std::vector<int> outcome(8, -1);
    behind_lock(t.path, 8, [&](int i) {
      try {
        if (i % 2 == 0) {
          t.store.append("g-" + std::to_string(i), ExpectedVersion::exact(1 + round), make_event());
        } else if (i == 1) {
          // A new stream whose only event has a stored id: the stream row is written first.
          t.store.append("dup-" + std::to_string(round), ExpectedVersion::no_stream(), taken);
        } else {
          // Same stream twice in a group: one of them must get ConcurrencyError.
          t.store.append("g-" + std::to_string(i), ExpectedVersion::exact(1 + round / 1),
                         make_event());
        }
        outcome[i] = 0;
      } catch (const DuplicateEventError&) {
        outcome[i] = 1;
      } catch (const ConcurrencyError&) {
        outcome[i] = 2;
      } catch (...) {
        outcome[i] = 3;
      }
    });
    for (int i = 0; i < 8; i += 2) {
      CAPTURE(round);
      CAPTURE(i);
      CHECK(outcome[i] == 0);
    }
    CHECK(outcome[1] == 1);
  }
  CHECK(stream_rows(t.store) == 9);
  for (int i = 0; i < 8; i += 2)
    CHECK(t.store.append("g-" + std::to_string(i), ExpectedVersion::exact(4), make_event())
              .stream_version == 5);
  CHECK(t.store.verify().ok());
}

TEST_CASE("a store opened read-only beside the writer") {
  TempStore t;
  t.store.append("s", ExpectedVersion::no_stream(), make_event());
  StoreOptions ro = TempStore::fast_options();
  ro.read_only = true;
  EventStore reader = EventStore::open(t.path, ro);
  CHECK_THROWS_AS(reader.append("s", ExpectedVersion::exact(1), make_event()), StorageError);
  CHECK(t.store.append("s", ExpectedVersion::exact(1), make_event()) == AppendResult{2, 2, 2});
  CHECK(reader.stream_version("s") == 2);
}

TEST_CASE("random single-threaded mix over two store objects: no false error, no wrong row") {
  TempStore t;
  EventStore other = EventStore::open(t.path, TempStore::fast_options());
  EventStore* stores[2] = {&t.store, &other};
  std::map<std::string, StreamVersion> version;
  struct Done {
    std::string stream;
    std::vector<EventData> batch;
    AppendResult result;
  };
  std::vector<Done> done;
  Position head = 0;
  bool armed = false;
  auto hook = [&](AppendTransaction& tx) {
    tx.sql().execute("CREATE TABLE IF NOT EXISTS side (n INTEGER)");
    tx.sql().execute("INSERT INTO side VALUES (1)");
    if (armed) throw std::runtime_error("slot refuses");
  };
  std::uint64_t seed =
      std::getenv("REVIEW_SEED") ? std::strtoull(std::getenv("REVIEW_SEED"), nullptr, 10) : 12345;
  auto rnd = [&](std::uint64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 33) % n;
  };
  for (int step = 0; step < 1500; ++step) {
    CAPTURE(step);
    EventStore& s = *stores[rnd(2)];
    const std::string stream = "s-" + std::to_string(rnd(6));
    const auto op = rnd(10);
    if (op < 4) {
      auto batch = make_events(1 + rnd(3));
      const StreamVersion v = version[stream];
      const ExpectedVersion ex = rnd(2) ? ExpectedVersion::exact(v) : ExpectedVersion::any();
      AppendResult r;
      REQUIRE_NOTHROW(r = s.append(stream, ex, batch));
      CHECK(r == AppendResult{v + batch.size(), head + 1, head + batch.size()});
      version[stream] = r.stream_version;
      head = r.last_position;
      done.push_back({stream, batch, r});
    } else if (op == 4 && !done.empty()) {
      const Done& d = done[rnd(done.size())];
      const ExpectedVersion kinds[] = {ExpectedVersion::any(), ExpectedVersion::no_stream(),
                                       ExpectedVersion::exact(version[d.stream]),
                                       ExpectedVersion::stream_exists()};
      AppendResult r;
      REQUIRE_NOTHROW(r = s.append(d.stream, kinds[rnd(4)], d.batch));
      CHECK(r == d.result);
    } else if (op == 5) {
      CHECK_THROWS_AS(s.append(stream, ExpectedVersion::exact(version[stream] + 1), make_event()),
                      ConcurrencyError);
    } else if (op == 6) {
      const std::string other_stream = "s-" + std::to_string(rnd(6));
      std::vector<StreamAppend> multi{
          {stream, ExpectedVersion::exact(version[stream]), make_events(1)},
          {other_stream,
           ExpectedVersion::exact(version[other_stream] + (other_stream == stream ? 1 : 0)),
           make_events(2)}};
      std::vector<AppendResult> r;
      REQUIRE_NOTHROW(r = s.append_multi(multi));
      version[stream] = r[0].stream_version;
      version[other_stream] = r[1].stream_version;
      head = r[1].last_position;
      done.push_back({stream, multi[0].events, r[0]});
      done.push_back({other_stream, multi[1].events, r[1]});
    } else if (op == 7 && &s == &t.store) {
      boost::signals2::scoped_connection slot = t.store.on_appending().connect(hook);
      armed = rnd(2) == 0;
      auto batch = make_events(1);
      if (armed) {
        CHECK_THROWS(s.append(stream, ExpectedVersion::exact(version[stream]), batch));
      } else {
        AppendResult r;
        REQUIRE_NOTHROW(r = s.append(stream, ExpectedVersion::exact(version[stream]), batch));
        version[stream] = r.stream_version;
        head = r.last_position;
        done.push_back({stream, batch, r});
      }
      armed = false;
    } else if (op == 8) {
      // A duplicate of a stored event into another stream fails and leaves nothing.
      if (!done.empty()) {
        const Done& d = done[rnd(done.size())];
        CHECK_THROWS_AS(s.append("x-" + std::to_string(step), ExpectedVersion::any(), d.batch),
                        DuplicateEventError);
      }
    } else {
      s.write_sql([&](Sql& sql) { sql.execute("CREATE TABLE IF NOT EXISTS side (n INTEGER)"); });
      if (rnd(2)) factum::test::raw_exec(t.path, "PRAGMA wal_checkpoint(TRUNCATE)");
    }
  }
  CHECK(t.store.head_position() == head);
  for (const auto& [name, v] : version) CHECK(t.store.stream_version(name) == v);
  CHECK(t.store.verify().ok());
}

TEST_CASE("random mix from 4 threads over two store objects, each thread owning streams") {
  TempStore t;
  EventStore other = EventStore::open(t.path, TempStore::fast_options());
  boost::signals2::scoped_connection slot =
      other.on_appending().connect([&](AppendTransaction& tx) {
        for (const auto& e : tx.events())
          if (e.type == "test.Refused") throw std::runtime_error("slot refuses");
      });
  const EventData taken = make_event();
  t.store.append("taken", ExpectedVersion::no_stream(), taken);
  constexpr int kThreads = 4;
  std::vector<std::string> errors(kThreads);
  const std::uint64_t base =
      std::getenv("REVIEW_SEED") ? std::strtoull(std::getenv("REVIEW_SEED"), nullptr, 10) : 7;
  std::vector<std::thread> threads;
  for (int ti = 0; ti < kThreads; ++ti) {
    threads.emplace_back([&, ti] {
      std::uint64_t seed = base * 1000 + ti;
      auto rnd = [&](std::uint64_t n) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        return (seed >> 33) % n;
      };
      EventStore* stores[2] = {&t.store, &other};
      std::map<std::string, StreamVersion> version;
      std::vector<std::tuple<std::string, std::vector<EventData>, AppendResult>> done;
      auto fail = [&](const std::string& what) {
        if (errors[ti].empty()) errors[ti] = what;
      };
      for (int step = 0; step < 300 && errors[ti].empty(); ++step) {
        EventStore& s = *stores[rnd(2)];
        const std::string stream = "t" + std::to_string(ti) + "-" + std::to_string(rnd(3));
        const std::string where = " at step " + std::to_string(step) + " on " + stream;
        try {
          switch (rnd(8)) {
            case 0:
            case 1:
            case 2: {
              auto batch = make_events(1 + rnd(3));
              const auto r = s.append(stream, ExpectedVersion::exact(version[stream]), batch);
              if (r.stream_version != version[stream] + batch.size()) fail("bad version" + where);
              version[stream] = r.stream_version;
              done.emplace_back(stream, batch, r);
              break;
            }
            case 3:
              if (!done.empty()) {
                const auto& [st, batch, res] = done[rnd(done.size())];
                const ExpectedVersion kinds[] = {ExpectedVersion::any(),
                                                 ExpectedVersion::no_stream(),
                                                 ExpectedVersion::exact(version[st])};
                if (s.append(st, kinds[rnd(3)], batch) != res) fail("retry result differs" + where);
              }
              break;
            case 4:
              try {
                s.append(stream, ExpectedVersion::exact(version[stream] + 1), make_event());
                fail("no ConcurrencyError" + where);
              } catch (const ConcurrencyError&) {
              }
              break;
            case 5: {
              // A new stream whose batch fails after its stream row is written.
              const std::string fresh = stream + "-new-" + std::to_string(step);
              try {
                if (rnd(2)) {
                  s.append(fresh, ExpectedVersion::no_stream(), taken);
                } else {
                  EventData e = make_event();
                  e.metadata.compensates = EventId::generate();
                  s.append(fresh, ExpectedVersion::no_stream(),
                           std::vector<EventData>{make_event(), e});
                }
                fail("no error" + where);
              } catch (const DuplicateEventError&) {
              } catch (const InvalidArgument&) {
              }
              if (s.stream_version(fresh) != 0) fail("failed stream left events" + where);
              break;
            }
            case 6: {
              std::vector<EventData> batch{make_event(), make_event("test.Refused")};
              try {
                s.append(stream, ExpectedVersion::exact(version[stream]), batch);
                if (&s == &other) fail("slot did not refuse" + where);
                version[stream] += 2;
              } catch (const std::runtime_error& e) {
                if (&s != &other) fail(std::string("unexpected: ") + e.what() + where);
              }
              break;
            }
            default:
              if (rnd(4) == 0) s.write_sql([](Sql& sql) { sql.execute("SELECT 1"); });
              break;
          }
        } catch (const std::exception& e) {
          fail(std::string(e.what()) + where);
        }
      }
      for (const auto& [name, v] : version)
        if (t.store.stream_version(name) != v) fail("final version of " + name);
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kThreads; ++i) {
    CAPTURE(i);
    CHECK(errors[i] == "");
  }
  std::optional<std::int64_t> empty_streams;
  t.store.read_sql([&](Sql& sql) {
    empty_streams = sql.query_integer(
        "SELECT count(*) FROM streams s WHERE NOT EXISTS (SELECT 1 FROM events e WHERE "
        "e.stream_key = s.stream_key)");
  });
  CHECK(empty_streams == 0);
  CHECK(t.store.verify().ok());
}

TEST_CASE("random mix with injected WAL faults over two store objects") {
  FaultInjection fault;
  TempStore t(TempStore::durable_options());
  EventStore other = EventStore::open(t.path, TempStore::durable_options());
  EventStore* stores[2] = {&t.store, &other};
  std::map<std::string, StreamVersion> version;
  Position head = 0;
  std::uint64_t seed =
      std::getenv("REVIEW_SEED") ? std::strtoull(std::getenv("REVIEW_SEED"), nullptr, 10) : 99;
  auto rnd = [&](std::uint64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 33) % n;
  };
  const int codes[] = {factum::test::fault_codes::kIoErrFsync,
                       factum::test::fault_codes::kIoErrWrite, factum::test::fault_codes::kFull};
  for (int step = 0; step < 300; ++step) {
    CAPTURE(step);
    EventStore& s = *stores[rnd(2)];
    const std::string stream = "s-" + std::to_string(rnd(4));
    auto batch = make_events(1 + rnd(3));
    const StreamVersion v = version[stream];
    const bool multi = rnd(3) == 0;
    const std::string stream2 = "s-" + std::to_string(rnd(4));
    auto batch2 = make_events(1);
    auto run = [&]() -> std::pair<AppendResult, AppendResult> {
      if (!multi) return {s.append(stream, ExpectedVersion::exact(v), batch), {}};
      std::vector<StreamAppend> m{
          {stream, ExpectedVersion::exact(v), batch},
          {stream2, ExpectedVersion::exact(stream2 == stream ? v + batch.size() : version[stream2]),
           batch2}};
      auto r = s.append_multi(m);
      return {r[0], r[1]};
    };
    if (rnd(3) == 0) {
      const int which = static_cast<int>(rnd(3));
      fault.fail(which == 0 ? FaultOp::sync : FaultOp::write, 1 + static_cast<int>(rnd(3)),
                 codes[which], 1, FaultFile::wal);
    }
    std::pair<AppendResult, AppendResult> r;
    bool ok = false;
    try {
      r = run();
      ok = true;
    } catch (const StorageError&) {
      CHECK(!s.read_event(batch.front().id).has_value());
    } catch (const std::exception& e) {
      FAIL("unexpected error: " << e.what());
    }
    fault.clear();
    if (!ok) {
      REQUIRE_NOTHROW(r = run());  // the same batch again, now without a fault
    }
    CHECK(r.first == AppendResult{v + batch.size(), head + 1, head + batch.size()});
    version[stream] = r.first.stream_version;
    head = r.first.last_position;
    if (multi) {
      version[stream2] = r.second.stream_version;
      head = r.second.last_position;
    }
    // And a retry right after: the same result, nothing written.
    if (rnd(2) == 0)
      CHECK(stores[rnd(2)]->append(stream, ExpectedVersion::any(), batch) == r.first);
  }
  CHECK(t.store.head_position() == head);
  for (const auto& [name, v] : version) CHECK(t.store.stream_version(name) == v);
  CHECK(t.store.verify().ok());
}

TEST_CASE("a compensating batch appended again to another stream is a duplicate") {
  // Before fbd3606 the first id was looked up before anything else: a batch stored in stream
  // "s" and appended to "t" was a DuplicateEventError. Now, with a matching expected version,
  // check_compensates runs first (for t's key) and the caller gets InvalidArgument instead.
  TempStore t;
  const EventData target = make_event();
  t.store.append("s", ExpectedVersion::no_stream(), target);
  t.store.append("t", ExpectedVersion::no_stream(), make_event());
  EventData undo = make_event("test.Undone");
  undo.metadata.compensates = target.id;
  t.store.append("s", ExpectedVersion::exact(1), undo);
  CHECK_THROWS_AS(t.store.append("t", ExpectedVersion::any(), undo), DuplicateEventError);
  CHECK_THROWS_AS(t.store.append("t", ExpectedVersion::exact(1), undo), DuplicateEventError);
  CHECK_THROWS_AS(t.store.append("n", ExpectedVersion::no_stream(), undo), DuplicateEventError);
  // With a version that does not match, the retry look-up still comes first.
  CHECK_THROWS_AS(t.store.append("t", ExpectedVersion::exact(7), undo), DuplicateEventError);
}
