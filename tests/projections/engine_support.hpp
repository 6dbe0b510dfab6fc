// Shared pieces of the ProjectionEngine suite: a folding projection with hooks for gates and
// failures, the same fold computed from the log, and small waiting helpers.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace factum::test {

using namespace std::chrono_literals;

// Per stream: how many events and the sum of their numeric payloads.
struct Tally {
  std::int64_t n = 0;
  std::int64_t total = 0;
  friend bool operator==(const Tally&, const Tally&) = default;
};
using Tallies = std::map<std::string, Tally>;

inline std::int64_t payload_number(const RecordedEvent& e) {
  const std::string text = to_string(e.payload);
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    return 0;  // "boom" and other markers count as 0
  }
}

inline doctest::String toString(const Tallies& t) {
  std::string out = "{";
  for (const auto& [stream, tally] : t) {
    out += stream + ":" + std::to_string(tally.n) + "/" + std::to_string(tally.total) + " ";
  }
  return (out + "}").c_str();
}

// Folds the log as the projection should: count and sum (times `weight`) per stream, for the
// events whose type is in `types` (all when empty).
inline Tallies fold_log(const EventStore& store, const std::vector<std::string>& types = {},
                        std::int64_t weight = 1, Position up_to = 0) {
  Tallies out;
  for (const RecordedEvent& e : store.read_all()) {
    if (up_to != 0 && e.position > up_to) break;
    if (!types.empty() && std::find(types.begin(), types.end(), e.type) == types.end()) continue;
    Tally& t = out[e.stream_id];
    t.n += weight;
    t.total += weight * payload_number(e);
  }
  return out;
}

// What the logical view `table` serves (stream, n, total).
inline Tallies read_model(const EventStore& store, const std::string& table = "counts") {
  Tallies out;
  store.read_sql([&](Sql& sql) {
    sql.query("SELECT stream, n, total FROM " + table, {}, [&](const SqlRow& r) {
      out[r.text(0)] = Tally{r.integer(1), r.integer(2)};
    });
  });
  return out;
}

// Whether the store's database has a `type` ("table", "view") named `name` (on either
// backend: Sql::object_type).
inline bool schema_has(const EventStore& store, const std::string& type, const std::string& name) {
  bool found = false;
  store.read_sql([&](Sql& sql) { found = sql.object_type(name) == type; });
  return found;
}

inline Position saved_checkpoint(const EventStore& store, const std::string& name) {
  Position out = 0;
  store.read_sql([&](Sql& sql) { out = CheckpointStore::load(sql, name); });
  return out;
}

// Polls `condition` until it holds or `timeout` passes; returns whether it held.
// Appends `n` events with payloads first, first+1, ... to streams "<prefix>-0".."<prefix>-<k-1>".
inline void append_numbers(EventStore& store, int n, int first = 1, const std::string& prefix = "s",
                           int streams = 3, const std::string& type = "test.Happened") {
  for (int i = 0; i < n; ++i) {
    const int value = first + i;
    store.append(prefix + "-" + std::to_string(value % streams), ExpectedVersion::any(),
                 make_event(type, std::to_string(value)));
  }
}

// A one-shot barrier inside apply: the projection's thread arrives and waits until the test
// opens it. It opens by itself after kWait so that a broken test fails instead of hanging.
class Gate {
 public:
  void arrive_and_wait() {
    std::unique_lock lock(mu_);
    reached_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, kWait, [&] { return open_; });
  }
  bool wait_reached() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return reached_; });
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool reached_ = false;
  bool open_ = false;
};

// Folds events into `counts` (stream, n, total): n += weight, total += weight * payload.
// A logical table name belongs to one projection: two projections on one store need two names.
// Hooks (set before add, constant afterwards) run inside apply after the row is written, so a
// hook that throws leaves a partial write for the engine to roll back.
class Fold : public Projection {
 public:
  struct Options {
    std::string name = "fold";
    std::string table = "counts";  // logical name: unique among the store's projections
    std::uint32_t version = 1;
    std::int64_t weight = 1;
    std::vector<std::string> types = {};
  };
  using Hook = std::function<void(const RecordedEvent&, ProjectionContext&)>;

  Fold() : Fold(Options{}) {}
  explicit Fold(Options o) : o_(std::move(o)) {}

  std::string name() const override { return o_.name; }
  std::uint32_t version() const override { return o_.version; }
  std::vector<std::string> event_types() const override { return o_.types; }
  // SQL both backends accept: table_ddl for 64-bit integers on PostgreSQL, and the update's
  // columns qualified by the table (PostgreSQL finds a bare "n" ambiguous beside excluded.n).
  void reset(ProjectionContext& ctx) override {
    ctx.sql().execute(table_ddl(
        ctx.sql(), "CREATE TABLE " + ctx.table(o_.table) +
                       " (stream TEXT PRIMARY KEY, n INTEGER NOT NULL, total INTEGER NOT NULL)"));
    ++resets;
  }
  void apply(const RecordedEvent& e, ProjectionContext& ctx) override {
    const std::string table = ctx.table(o_.table);
    ctx.sql().execute("INSERT INTO " + table +
                          " VALUES (?1, ?2, ?3) ON CONFLICT (stream) DO UPDATE SET n = " + table +
                          ".n + ?2, total = " + table + ".total + ?3",
                      {e.stream_id, o_.weight, o_.weight * payload_number(e)});
    ++applies;
    if (after_write) after_write(e, ctx);
  }

  std::atomic<int> applies{0};
  std::atomic<int> resets{0};
  Hook after_write;

 private:
  Options o_;
};

// Throws (after writing its row) on every event whose payload is "boom" while `broken`.
inline Fold::Hook boom_while(const std::atomic<bool>& broken) {
  return [&broken](const RecordedEvent& e, ProjectionContext&) {
    if (broken && to_string(e.payload) == "boom") {
      throw std::runtime_error("boom at " + std::to_string(e.position));
    }
  };
}

}  // namespace factum::test
