// The store's hooks for the modules above it: on_appending slots run inside each append's
// transaction (what they write commits or rolls back with the events), and LogWatcher notices
// commits by any connection or process through PRAGMA data_version.
// Slots record under a lock; assertions run on the test's thread. Label "concurrency" (TSan in
// CI) and "process" (one case spawns support/writer_child).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

using namespace factum;
using boost::signals2::scoped_connection;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::slurp;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

// One slot call, as the slot saw it.
struct HookCall {
  std::vector<RecordedEvent> events;
  std::thread::id thread;
};

// A slot that records every call (thread-safe).
class HookLog {
 public:
  void record(AppendTransaction& tx) {
    std::lock_guard lock(mu_);
    calls_.push_back({{tx.events().begin(), tx.events().end()}, std::this_thread::get_id()});
  }
  std::vector<HookCall> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<HookCall> calls_;
};

void create_rows_table(EventStore& store) {
  store.write_sql([](Sql& sql) {
    sql.execute("CREATE TABLE hook_rows (position INTEGER PRIMARY KEY, id TEXT NOT NULL)");
  });
}

// Writes one row per event of the append, through the append's own transaction.
void write_rows(AppendTransaction& tx) {
  for (const RecordedEvent& e : tx.events()) {
    tx.sql().execute("INSERT INTO hook_rows (position, id) VALUES (?1, ?2)",
                     {static_cast<std::int64_t>(e.position), e.id.to_string()});
  }
}

// position -> event id, as the slots wrote them.
std::map<Position, std::string> rows(EventStore& store) {
  std::map<Position, std::string> out;
  store.read_sql([&](Sql& sql) {
    sql.query("SELECT position, id FROM hook_rows ORDER BY position", {}, [&](const SqlRow& r) {
      out.emplace(static_cast<Position>(r.integer(0)), r.text(1));
    });
  });
  return out;
}

std::vector<std::string> ids_of(std::span<const EventData> events) {
  std::vector<std::string> out;
  for (const EventData& e : events) out.push_back(e.id.to_string());
  return out;
}

std::vector<std::string> ids_of(const std::vector<RecordedEvent>& events) {
  std::vector<std::string> out;
  for (const RecordedEvent& e : events) out.push_back(e.id.to_string());
  return out;
}

std::vector<Position> positions_of(const std::vector<RecordedEvent>& events) {
  std::vector<Position> out;
  for (const RecordedEvent& e : events) out.push_back(e.position);
  return out;
}

}  // namespace

// ---- on_appending -----------------------------------------------------------------------------

TEST_CASE("an on_appending slot sees the append's events: positions, ids, stream versions") {
  TempStore t;
  t.store.append("other-1", ExpectedVersion::any(), make_events(2));
  t.store.append("acct-1", ExpectedVersion::any(), make_event());
  HookLog log;
  scoped_connection slot =
      t.store.on_appending().connect([&](AppendTransaction& tx) { log.record(tx); });
  const std::vector<EventData> batch{make_event("acct.Deposited", "10"),
                                     make_event("acct.Withdrawn", "4")};
  const AppendResult r = t.store.append("acct-1", ExpectedVersion::exact(1), batch);
  const auto calls = log.calls();
  REQUIRE(calls.size() == 1);
  const auto& seen = calls.front().events;
  REQUIRE(seen.size() == 2);
  CHECK((r == AppendResult{3, 4, 5}));
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(seen[i].position == 4 + i);
    CHECK(seen[i].stream_id == "acct-1");
    CHECK(seen[i].stream_version == 2 + i);
    CHECK(seen[i].id == batch[i].id);
    CHECK(seen[i].type == batch[i].type);
    CHECK(seen[i].payload == batch[i].payload);
  }
  CHECK(calls.front().thread == std::this_thread::get_id());  // an append alone: its own thread
  // They are the events as committed, hashes included.
  CHECK(seen == t.store.read_all(4).to_vector());
}

TEST_CASE("the slot runs before the commit: readers do not see the events yet") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_events(3));
  Position head_seen = 0;
  std::size_t stream_seen = 0;
  scoped_connection slot = t.store.on_appending().connect([&](AppendTransaction&) {
    head_seen = t.store.head_position();  // a read connection: the committed log only
    stream_seen = t.store.read_stream("s-1").to_vector().size();
  });
  t.store.append("s-1", ExpectedVersion::any(), make_events(2));
  CHECK(head_seen == 3);
  CHECK(stream_seen == 3);
  CHECK(t.store.head_position() == 5);
}

TEST_CASE("what a slot writes through tx.sql() is in the file when append returns") {
  TempStore t;
  create_rows_table(t.store);
  scoped_connection slot = t.store.on_appending().connect(write_rows);
  const auto first = make_events(3);
  t.store.append("s-1", ExpectedVersion::no_stream(), first);
  const auto second = make_events(2);
  t.store.append("s-2", ExpectedVersion::no_stream(), second);
  const std::map<Position, std::string> want{{1, first[0].id.to_string()},
                                             {2, first[1].id.to_string()},
                                             {3, first[2].id.to_string()},
                                             {4, second[0].id.to_string()},
                                             {5, second[1].id.to_string()}};
  CHECK(rows(t.store) == want);
}

TEST_CASE("a slot that throws fails the append: nothing is written, the caller gets the error") {
  TempStore t;
  create_rows_table(t.store);
  t.store.append("s-1", ExpectedVersion::any(), make_events(2));
  const Head before = t.store.head();
  int notified = 0;
  scoped_connection after_commit =
      t.store.on_appended().connect([&](const std::vector<RecordedEvent>&) { ++notified; });
  bool fail = true;
  scoped_connection slot = t.store.on_appending().connect([&](AppendTransaction& tx) {
    write_rows(tx);  // written, then undone with the append
    if (fail) throw std::runtime_error("read model refused");
  });
  CHECK_THROWS_WITH_AS(t.store.append("s-1", ExpectedVersion::exact(2), make_events(3)),
                       "read model refused", std::runtime_error);
  CHECK(t.store.head() == before);
  CHECK(t.store.stream_version("s-1") == 2);
  CHECK(rows(t.store).empty());
  CHECK(notified == 0);
  // The store goes on: the next append takes the next position, and its rows are written.
  fail = false;
  const auto batch = make_events(1);
  CHECK((t.store.append("s-1", ExpectedVersion::exact(2), batch) == AppendResult{3, 3, 3}));
  CHECK((rows(t.store) == std::map<Position, std::string>{{3, batch[0].id.to_string()}}));
  CHECK(notified == 1);
  CHECK(t.store.verify().ok());
}

TEST_CASE("a retried append (the same ids) runs no slot") {
  TempStore t;
  HookLog log;
  scoped_connection slot =
      t.store.on_appending().connect([&](AppendTransaction& tx) { log.record(tx); });
  const auto batch = make_events(3);
  const AppendResult first = t.store.append("s-1", ExpectedVersion::no_stream(), batch);
  const AppendResult retry = t.store.append("s-1", ExpectedVersion::no_stream(), batch);
  CHECK(retry == first);
  CHECK(log.calls().size() == 1);
  CHECK(t.store.head_position() == 3);
}

TEST_CASE("an append refused for its expected version runs no slot") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  HookLog log;
  scoped_connection slot =
      t.store.on_appending().connect([&](AppendTransaction& tx) { log.record(tx); });
  CHECK_THROWS_AS(t.store.append("s-1", ExpectedVersion::no_stream(), make_event()),
                  ConcurrencyError);
  CHECK(log.calls().empty());
}

TEST_CASE("a disconnected slot is not called") {
  TempStore t;
  HookLog log;
  {
    scoped_connection slot =
        t.store.on_appending().connect([&](AppendTransaction& tx) { log.record(tx); });
    t.store.append("s-1", ExpectedVersion::any(), make_event());
  }
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  CHECK(log.calls().size() == 1);
}

TEST_CASE("append_multi runs the slots once per stream, each with that stream's events") {
  TempStore t;
  create_rows_table(t.store);
  t.store.append("b-1", ExpectedVersion::any(), make_events(2));
  HookLog log;
  scoped_connection record =
      t.store.on_appending().connect([&](AppendTransaction& tx) { log.record(tx); });
  scoped_connection rows_slot = t.store.on_appending().connect(write_rows);
  const std::vector<StreamAppend> appends{
      {"a-1", ExpectedVersion::no_stream(), make_events(2)},
      {"b-1", ExpectedVersion::exact(2), make_events(1)},
      {"c-1", ExpectedVersion::any(), make_events(3)},
  };
  const auto results = t.store.append_multi(appends);
  const auto calls = log.calls();
  REQUIRE(calls.size() == 3);
  Position next = 3;
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    const auto& events = calls[i].events;
    CHECK(ids_of(events) == ids_of(appends[i].events));
    for (const RecordedEvent& e : events) {
      CHECK(e.stream_id == appends[i].stream);
      CHECK(e.position == next++);
    }
    CHECK(events.back().stream_version == results[i].stream_version);
    CHECK(events.front().position == results[i].first_position);
  }
  CHECK(rows(t.store).size() == 6);
}

TEST_CASE("a slot failing on one stream of an append_multi fails all of it") {
  TempStore t;
  create_rows_table(t.store);
  scoped_connection slot = t.store.on_appending().connect([&](AppendTransaction& tx) {
    write_rows(tx);
    if (tx.events().front().stream_id == "b-1") throw std::runtime_error("not b");
  });
  const std::vector<StreamAppend> appends{
      {"a-1", ExpectedVersion::any(), make_events(2)},
      {"b-1", ExpectedVersion::any(), make_events(1)},
      {"c-1", ExpectedVersion::any(), make_events(1)},
  };
  CHECK_THROWS_WITH_AS(t.store.append_multi(appends), "not b", std::runtime_error);
  CHECK(t.store.head_position() == 0);
  CHECK(t.store.stream_version("a-1") == 0);
  CHECK(rows(t.store).empty());
}

TEST_CASE("tx.read_log returns the log before the append, read inside its transaction") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_events(10));
  std::map<std::string, std::vector<RecordedEvent>> read;
  scoped_connection slot = t.store.on_appending().connect([&](AppendTransaction& tx) {
    const std::string& stream = tx.events().front().stream_id;
    read[stream + " all"] = tx.read_log(1, 1000);
    read[stream + " 4..6"] = tx.read_log(4, 3);
    read[stream + " from itself"] = tx.read_log(tx.events().front().position, 10);
    read[stream + " none"] = tx.read_log(1, 0);
  });
  const std::vector<StreamAppend> appends{
      {"a-1", ExpectedVersion::any(), make_events(2)},  // positions 11, 12
      {"b-1", ExpectedVersion::any(), make_events(1)},  // position 13
  };
  t.store.append_multi(appends);
  const auto log = t.store.read_all().to_vector();
  REQUIRE(log.size() == 13);
  CHECK(read["a-1 all"] == std::vector<RecordedEvent>(log.begin(), log.begin() + 10));
  CHECK((positions_of(read["a-1 4..6"]) == std::vector<Position>{4, 5, 6}));
  CHECK(read["a-1 4..6"].front() == log[3]);
  CHECK(read["a-1 from itself"].empty());
  CHECK(read["a-1 none"].empty());
  // b-1's slot runs in the same transaction, after a-1's events were written but before the
  // commit: it reads them.
  CHECK(read["b-1 all"] == std::vector<RecordedEvent>(log.begin(), log.begin() + 12));
}

TEST_CASE("with many threads appending (group commit), each slot call sees its own append") {
  constexpr int kThreads = 8;
  constexpr int kAppends = 40;
  TempStore t;
  create_rows_table(t.store);
  HookLog log;
  scoped_connection record =
      t.store.on_appending().connect([&](AppendTransaction& tx) { log.record(tx); });
  scoped_connection rows_slot = t.store.on_appending().connect(write_rows);
  struct Done {
    std::vector<std::string> ids;
    std::string stream;
    AppendResult result;
    std::thread::id thread;
  };
  std::vector<std::vector<Done>> done(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&t, &done, i] {
      const std::string stream = "t" + std::to_string(i) + "-1";
      for (int n = 0; n < kAppends; ++n) {
        const auto batch = make_events(1 + static_cast<std::size_t>(n % 3));
        const AppendResult r = t.store.append(stream, ExpectedVersion::any(), batch);
        done[static_cast<std::size_t>(i)].push_back(
            {ids_of(batch), stream, r, std::this_thread::get_id()});
      }
    });
  }
  for (std::thread& th : threads) th.join();

  const auto calls = log.calls();
  REQUIRE(calls.size() == static_cast<std::size_t>(kThreads * kAppends));
  std::map<std::string, const HookCall*> by_first_id;
  for (const HookCall& c : calls) {
    REQUIRE_FALSE(c.events.empty());
    CHECK(by_first_id.emplace(c.events.front().id.to_string(), &c).second);
  }
  std::size_t led_by_another = 0;
  std::size_t events = 0;
  for (const auto& per_thread : done) {
    for (const Done& d : per_thread) {
      const auto it = by_first_id.find(d.ids.front());
      REQUIRE(it != by_first_id.end());
      const HookCall& c = *it->second;
      CHECK(ids_of(c.events) == d.ids);
      CHECK(c.events.front().position == d.result.first_position);
      CHECK(c.events.back().position == d.result.last_position);
      CHECK(c.events.back().stream_version == d.result.stream_version);
      for (const RecordedEvent& e : c.events) CHECK(e.stream_id == d.stream);
      if (c.thread != d.thread) ++led_by_another;
      events += d.ids.size();
    }
  }
  MESSAGE("slot calls run by another thread's group commit: ", led_by_another);
  CHECK(t.store.head_position() == events);
  const auto written = rows(t.store);
  REQUIRE(written.size() == events);
  for (const RecordedEvent& e : t.store.read_all().to_vector())
    CHECK(written.at(e.position) == e.id.to_string());
}

TEST_CASE("with many threads appending, a slot that throws fails only its own append") {
  constexpr int kThreads = 6;
  constexpr int kAppends = 30;
  TempStore t;
  create_rows_table(t.store);
  scoped_connection slot = t.store.on_appending().connect([](AppendTransaction& tx) {
    write_rows(tx);
    if (tx.events().front().type == "test.Refused") throw std::runtime_error("refused");
  });
  std::atomic<int> refused{0};
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kAppends; ++n) {
        const bool bad = (i + n) % 3 == 0;
        try {
          t.store.append("t" + std::to_string(i) + "-1", ExpectedVersion::any(),
                         make_event(bad ? "test.Refused" : "test.Happened"));
          ++accepted;
        } catch (const std::runtime_error&) {
          ++refused;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(refused == kThreads * kAppends / 3);
  CHECK(accepted == kThreads * kAppends - refused);
  const auto log = t.store.read_all().to_vector();
  REQUIRE(log.size() == static_cast<std::size_t>(accepted.load()));
  const auto written = rows(t.store);
  REQUIRE(written.size() == log.size());
  for (std::size_t i = 0; i < log.size(); ++i) {
    CHECK(log[i].position == i + 1);  // no gap where a refused append was undone
    CHECK(log[i].type == "test.Happened");
    CHECK(written.at(log[i].position) == log[i].id.to_string());
  }
  CHECK(t.store.verify().ok());
}

// ---- Outcome notices (AppendTransaction::on_outcome) -----------------------------------------

namespace {

// Notices heard, by the first event id of the append that registered them (thread-safe).
class Outcomes {
 public:
  void listen(AppendTransaction& tx) {
    const std::string id = tx.events().front().id.to_string();
    tx.on_outcome([this, id](AppendOutcome o) {
      std::lock_guard lock(mu_);
      heard_[id].push_back(o);
    });
  }
  std::vector<AppendOutcome> of(const EventData& first) const {
    std::lock_guard lock(mu_);
    const auto it = heard_.find(first.id.to_string());
    return it == heard_.end() ? std::vector<AppendOutcome>{} : it->second;
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return heard_.size();
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<AppendOutcome>> heard_;
};

using Heard = std::vector<AppendOutcome>;

}  // namespace

TEST_CASE("an outcome notice hears committed once, before append returns") {
  TempStore t;
  Outcomes outcomes;
  scoped_connection slot =
      t.store.on_appending().connect([&](AppendTransaction& tx) { outcomes.listen(tx); });
  const auto batch = make_events(2);
  t.store.append("a-1", ExpectedVersion::no_stream(), batch);
  CHECK(outcomes.of(batch.front()) == Heard{AppendOutcome::committed});
}

TEST_CASE("an outcome notice hears rolled_back when a later slot of the append throws") {
  TempStore t;
  Outcomes outcomes;
  scoped_connection first =
      t.store.on_appending().connect([&](AppendTransaction& tx) { outcomes.listen(tx); });
  scoped_connection second = t.store.on_appending().connect([](AppendTransaction& tx) {
    if (tx.events().front().stream_id == "b-1") throw std::runtime_error("not b");
  });
  const std::vector<StreamAppend> appends{
      {"a-1", ExpectedVersion::any(), make_events(1)},
      {"b-1", ExpectedVersion::any(), make_events(1)},
  };
  CHECK_THROWS_WITH_AS(t.store.append_multi(appends), "not b", std::runtime_error);
  // The a-1 part ran its slot and was undone with the rest.
  CHECK(outcomes.of(appends[0].events.front()) == Heard{AppendOutcome::rolled_back});
  CHECK(outcomes.of(appends[1].events.front()) == Heard{AppendOutcome::rolled_back});
  CHECK(t.store.head_position() == 0);
}

TEST_CASE("with many threads appending, each notice hears its own append's fate") {
  constexpr int kThreads = 6;
  constexpr int kAppends = 30;
  TempStore t;
  Outcomes outcomes;
  scoped_connection slot = t.store.on_appending().connect([&](AppendTransaction& tx) {
    outcomes.listen(tx);
    if (tx.events().front().type == "test.Refused") throw std::runtime_error("refused");
  });
  std::mutex mu;
  std::vector<std::pair<EventData, bool>> tried;  // first event, whether append returned
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kAppends; ++n) {
        const EventData e = make_event((i + n) % 3 == 0 ? "test.Refused" : "test.Happened");
        bool ok = true;
        try {
          t.store.append("t" + std::to_string(i) + "-1", ExpectedVersion::any(), e);
        } catch (const std::runtime_error&) {
          ok = false;
        }
        std::lock_guard lock(mu);
        tried.emplace_back(e, ok);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  REQUIRE(tried.size() == static_cast<std::size_t>(kThreads * kAppends));
  CHECK(outcomes.size() == tried.size());
  for (const auto& [e, ok] : tried) {
    CHECK(outcomes.of(e) == Heard{ok ? AppendOutcome::committed : AppendOutcome::rolled_back});
    CHECK(t.store.read_event(e.id).has_value() == ok);
  }
}

TEST_CASE("a throwing outcome notice is ignored: the append and the other notices stand") {
  TempStore t;
  Outcomes outcomes;
  scoped_connection thrower = t.store.on_appending().connect([](AppendTransaction& tx) {
    tx.on_outcome([](AppendOutcome) { throw std::runtime_error("a bad notice"); });
  });
  scoped_connection slot =
      t.store.on_appending().connect([&](AppendTransaction& tx) { outcomes.listen(tx); });
  const auto batch = make_events(1);
  CHECK_NOTHROW(t.store.append("a-1", ExpectedVersion::no_stream(), batch));
  CHECK(outcomes.of(batch.front()) == Heard{AppendOutcome::committed});
  CHECK(t.store.head_position() == 1);
}

// ---- SqlSavepoint ---------------------------------------------------------------------------

TEST_CASE("a savepoint scope undoes its own changes only, released or not") {
  TempStore t;
  t.store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE sp (n INTEGER)"); });
  t.store.write_sql([](Sql& sql) {
    sql.execute("INSERT INTO sp VALUES (1)");
    {
      SqlSavepoint kept(sql);
      sql.execute("INSERT INTO sp VALUES (2)");
      {
        SqlSavepoint inner(sql);  // left unreleased: undone
        sql.execute("INSERT INTO sp VALUES (3)");
      }
      kept.release();
    }
    {
      SqlSavepoint undone(sql);
      sql.execute("INSERT INTO sp VALUES (4)");
      undone.rollback();
    }
    try {
      SqlSavepoint thrown(sql);
      sql.execute("INSERT INTO sp VALUES (5)");
      throw std::runtime_error("apply failed");
    } catch (const std::runtime_error&) {
    }
    sql.execute("INSERT INTO sp VALUES (6)");
  });
  std::vector<std::int64_t> kept;
  t.store.read_sql([&](Sql& sql) {
    sql.query("SELECT n FROM sp ORDER BY n", {},
              [&](const SqlRow& r) { kept.push_back(r.integer(0)); });
  });
  CHECK(kept == std::vector<std::int64_t>{1, 2, 6});
}

// ---- LogWatcher -------------------------------------------------------------------------------

TEST_CASE("a watcher answers false at first and while nothing is committed") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  auto watcher = t.store.watch();
  CHECK_FALSE(watcher->changed());
  CHECK_FALSE(watcher->changed());
  (void)t.store.read_all().to_vector();  // reads commit nothing
  (void)t.store.head_position();
  CHECK_FALSE(watcher->changed());
}

TEST_CASE("a watcher answers true once after an append through its own store") {
  TempStore t;
  auto watcher = t.store.watch();
  CHECK_FALSE(watcher->changed());
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  CHECK(watcher->changed());
  CHECK_FALSE(watcher->changed());
  t.store.append("s-1", ExpectedVersion::any(), make_events(3));
  t.store.append("s-2", ExpectedVersion::any(), make_event());
  CHECK(watcher->changed());  // several commits since the last call: one answer
  CHECK_FALSE(watcher->changed());
  t.store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE side (k INTEGER)"); });
  CHECK(watcher->changed());  // any commit to the file
}

TEST_CASE("a watcher sees an append through another EventStore object on the same file") {
  TempStore t;
  EventStore& mine = t.store;
  EventStore other = EventStore::open(t.path, TempStore::fast_options());
  auto watcher = mine.watch();
  CHECK_FALSE(watcher->changed());
  other.append("s-1", ExpectedVersion::any(), make_event());
  CHECK(watcher->changed());
  CHECK_FALSE(watcher->changed());
}

TEST_CASE("a watcher of a read-only store sees appends by a writer of the file") {
  TempStore t;
  EventStore& writer = t.store;
  writer.append("s-0", ExpectedVersion::any(), make_event());  // a read-only open needs a store
  StoreOptions read_only = TempStore::fast_options();
  read_only.read_only = true;
  const EventStore reader = EventStore::open(t.path, read_only);
  auto watcher = reader.watch();
  CHECK_FALSE(watcher->changed());
  writer.append("s-1", ExpectedVersion::any(), make_event());
  CHECK(watcher->changed());
}

// SQLite only: writer_child appends to a store file.
TEST_SUITE_BEGIN("sqlite-only");
namespace {

// Runs `writer_child race <path> 0 <count> 1` to completion (its stdin is /dev/null: it starts
// at once) and requires a clean exit.
void run_race_child(const TempDir& dir, const std::filesystem::path& path, int count) {
  std::vector<std::string> args{FACTUM_WRITER_CHILD,   "race", path.string(), "0",
                                std::to_string(count), "1"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto out = dir.file("child.out");
  const auto err = dir.file("child.err");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE_MESSAGE(rc == 0, "posix_spawn failed: ", rc);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL("writer_child did not finish within a minute");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  INFO("writer_child stderr: ", slurp(err));
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

}  // namespace

TEST_CASE("a watcher sees an append by another process, and slots here do not run for it") {
  TempDir dir;
  const auto path = dir.file("store.db");
  EventStore store = EventStore::open(path, TempStore::fast_options());
  HookLog log;
  scoped_connection slot =
      store.on_appending().connect([&](AppendTransaction& tx) { log.record(tx); });
  auto watcher = store.watch();
  CHECK_FALSE(watcher->changed());
  run_race_child(dir, path, 3);
  CHECK(store.head_position() == 3);
  CHECK(watcher->changed());
  CHECK_FALSE(watcher->changed());
  CHECK(log.calls().empty());  // another process's appends run this process's slots not
}
TEST_SUITE_END();
