// bench/projection_bench.cpp — rebuilding a projection over a 1,000,000-event log, against
// the raw SQLite ceiling.
//
// Builds a log of --events events (1,000,000) once per run, in a temporary file: deposits of
// an 8-byte amount to --accounts streams (account-0 .. account-9999), appended with
// append_multi in large batches under Durability::normal (setup speed; the time is printed).
// The store is then reopened with --durability (normal by default) and each side folds the
// whole log into a read model, balances(account TEXT PRIMARY KEY, events INTEGER, total
// INTEGER), one upsert per event, in transactions of --batch events (512, the engine's
// default):
//   - factum: ProjectionEngine::add of a new projection on a fresh engine (it builds
//     generation 1 from position 1: a full rebuild), timed until wait_for(head) succeeds;
//     then ProjectionEngine::rebuild (blue/green into generation 2), timed until the new
//     generation is swapped in (on_progress reports finished).
//   - raw: plain sqlite3 on the same file, per batch: BEGIN IMMEDIATE, read the checkpoint
//     row, SELECT the next --batch events in position order with the columns factum reads
//     (joined to streams for the stream id), copy each row out into a RecordedEvent (what
//     apply receives), upsert with one reused prepared statement, save the checkpoint row,
//     COMMIT.
// Runs of the two sides alternate (raw, factum, factum, raw, ...) --repeat times each; the
// best run of each side counts. Every run builds a new read model (new tables) and is checked
// afterwards: every account present, the event count and the sum of the amounts right.
// Targets: factum's build at least 0.70 of the raw ceiling's events/s, rebuild() at least
// 0.80 (a rebuild from position 1 is the same fold with a swap at the end). Besides wall-clock
// rates it prints the process CPU time per event of each side (less noisy on a shared
// machine), and --wait poll replaces wait_for by reading the checkpoint row, to show what
// waiting through the API costs.
//
// Then what an inline projection adds to an append: in a second file, --appends calls of
// store.append(account-i, any, one deposit) (the same event as the log's) with no projection,
// and as many with the same Balances projection added in ProjectionMode::inline_append (one
// upsert inside each append's transaction), alternating plain, inline, inline, plain, ...
// --repeat times each; the best run of each counts. Target: the inline rate at least 2/3 of
// the plain one (the projection adds at most 50% to an append).
//
//   projection_bench [--events N] [--batch N] [--repeat N] [--accounts N] [--appends N]
//                    [--durability normal|full] [--no-rebuild] [--no-inline | --inline-only]
//                    [--side raw|factum] [--wait api|poll] [--dir DIR] [--strict] [--verbose]
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "factum/factum.hpp"
#include "raw_sqlite.hpp"
#include "support.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using bench::check_interrupt;
using bench::copy_row;
using bench::cpu_seconds;
using bench::fixed;
using bench::RawDb;
using bench::RawStmt;
using bench::seconds_since;
using bench::TempDir;

constexpr const char* kType = "bank.Deposited";
constexpr std::size_t kSetupStreamsPerCall = 500;  // streams per append_multi while building
constexpr std::size_t kSetupEventsPerStream = 4;   // ... events each: 2,000 events per commit
constexpr double kTarget = 0.70;
constexpr double kRebuildTarget = 0.80;      // issue 15: rebuild() at least 0.8 of the raw loop
constexpr double kInlineTarget = 2.0 / 3.0;  // inline append rate / plain append rate

// ---------------------------------------------------------------------------------------------
// Options

struct Config {
  std::uint64_t events = 1'000'000;
  std::size_t batch = factum::ProjectionOptions{}.batch_size;
  int repeat = 3;
  std::size_t accounts = 10'000;
  factum::Durability durability = factum::Durability::normal;
  bool rebuild = true;
  std::uint64_t appends = 20'000;  // 1-event appends per run of the inline case; 0: skipped
  bool inline_only = false;        // the inline case alone (no log, no build)
  bool poll = false;               // wait by reading the checkpoint row, not through wait_for
  std::string side;  // "raw" or "factum": time one side only (for profiling); empty: both
  fs::path dir;
  bool strict = false;
  bool verbose = false;
};

Config parse(int argc, char** argv) {
  Config c;
  std::string dir;
  std::string wait = "api";
  std::uint64_t repeat = static_cast<std::uint64_t>(c.repeat);
  CLI::App app("measures a projection rebuild against raw SQLite", "projection_bench");
  bench::cli_defaults(app);
  bench::add_positive(app, "--events", c.events, "events in the log (default 1000000)");
  bench::add_positive(app, "--batch", c.batch,
                      "events per transaction, both sides (default 512, the engine's)");
  bench::add_positive(app, "--repeat", repeat,
                      "timed runs per side, best counts (default 3; at most 100)");
  bench::add_positive(app, "--accounts", c.accounts,
                      "streams, i.e. rows of the read model (default 10000)");
  bench::add_durability(app, c.durability,
                        "synchronous NORMAL (default) or FULL for the timed runs, both sides");
  bool no_rebuild = false;
  app.add_flag("--no-rebuild", no_rebuild, "skip the blue/green rebuild() measurement");
  bench::add_positive(app, "--appends", c.appends,
                      "1-event appends per run of the inline case (default 20000)");
  bool no_inline = false;
  app.add_flag("--no-inline", no_inline, "skip the inline projection's append case");
  app.add_flag("--inline-only", c.inline_only, "run the inline projection's append case alone");
  app.add_option("--side", c.side, "time only raw SQLite or only factum (to profile it)")
      ->type_name("SIDE")
      ->check(CLI::IsMember({"raw", "factum"}));
  app.add_option("--wait", wait,
                 "how the build's end is awaited: ProjectionEngine::wait_for (api, the default) "
                 "or reading the checkpoint row through a raw connection every 2 ms (poll: "
                 "shows what wait_for costs)")
      ->check(CLI::IsMember({"api", "poll"}));
  app.add_option("--dir", dir, "where the temporary directory goes (default $TMPDIR or /tmp)")
      ->type_name("DIR");
  app.add_flag("--strict", c.strict, "exit with status 1 when the target is missed");
  app.add_flag("--verbose", c.verbose, "print every timed run on stderr");
  bench::parse_or_exit(app, argc, argv);
  c.repeat = static_cast<int>(std::min<std::uint64_t>(repeat, 100));
  c.rebuild = !no_rebuild;
  if (no_inline && c.inline_only) {
    std::cerr << "projection_bench: --no-inline and --inline-only exclude each other\n";
    std::exit(2);
  }
  if (no_inline) c.appends = 0;
  c.poll = wait == "poll";
  c.dir = dir.empty() ? fs::temp_directory_path() : fs::path(dir);
  return c;
}

// ---------------------------------------------------------------------------------------------
// Timing

// One timed run: wall-clock and process CPU seconds.
struct Timing {
  double wall = 0;
  double cpu = 0;
};

class Stopwatch {
 public:
  Stopwatch() : wall_(Clock::now()), cpu_(cpu_seconds()) {}
  Timing elapsed() const { return {seconds_since(wall_), cpu_seconds() - cpu_}; }

 private:
  Clock::time_point wall_;
  double cpu_;
};

// ---------------------------------------------------------------------------------------------
// The log

factum::Bytes amount_payload(std::int64_t amount) {
  factum::Bytes b(sizeof amount);
  std::memcpy(b.data(), &amount, sizeof amount);
  return b;
}

std::int64_t amount_of(const factum::RecordedEvent& e) {
  std::int64_t amount = 0;
  if (e.payload.size() != sizeof amount) {
    throw std::runtime_error("event " + std::to_string(e.position) + ": payload is not 8 bytes");
  }
  std::memcpy(&amount, e.payload.data(), sizeof amount);
  return amount;
}

// What every read model must hold at the end.
struct Expected {
  std::uint64_t events = 0;
  std::int64_t total = 0;
  std::size_t accounts = 0;
};

// Appends `c.events` deposits, kSetupEventsPerStream to each of kSetupStreamsPerCall streams
// per append_multi, walking round the accounts: the log interleaves the accounts.
Expected build_log(const Config& c, const fs::path& file) {
  factum::StoreOptions options;
  options.durability = factum::Durability::normal;
  factum::EventStore store = factum::EventStore::open(file, options);
  std::vector<std::string> accounts;
  accounts.reserve(c.accounts);
  for (std::size_t i = 0; i < c.accounts; ++i) accounts.push_back("account-" + std::to_string(i));

  Expected x;
  std::size_t next_account = 0;
  std::vector<factum::StreamAppend> appends;
  std::vector<bool> touched(c.accounts);
  while (x.events < c.events) {
    check_interrupt();
    appends.clear();
    for (std::size_t s = 0; s < kSetupStreamsPerCall && x.events < c.events; ++s) {
      factum::StreamAppend& a = appends.emplace_back();
      const std::size_t account = next_account++ % c.accounts;
      a.stream = accounts[account];
      if (!touched[account]) {
        touched[account] = true;
        ++x.accounts;
      }
      for (std::size_t k = 0; k < kSetupEventsPerStream && x.events < c.events; ++k) {
        const auto amount = static_cast<std::int64_t>(x.events % 997) + 1;
        factum::EventData& e = a.events.emplace_back();
        e.type = kType;
        e.payload = amount_payload(amount);
        ++x.events;
        x.total += amount;
      }
    }
    store.append_multi(appends);
  }
  if (store.head_position() != x.events) throw std::runtime_error("setup: wrong head position");
  return x;
}

// ---------------------------------------------------------------------------------------------
// The read model, both sides

std::string create_sql(const std::string& table) {
  return "CREATE TABLE " + table +
         " (account TEXT PRIMARY KEY, events INTEGER NOT NULL, total INTEGER NOT NULL)";
}

std::string upsert_sql(const std::string& table) {
  return "INSERT INTO " + table +
         " (account, events, total) VALUES (?1, 1, ?2) ON CONFLICT (account) DO UPDATE SET "
         "events = events + 1, total = total + excluded.total";
}

// factum's side: one upsert per deposit into ctx.table(logical). The SQL text is built once
// per generation (what a careful projection does; the engine's statement cache keys on it).
class Balances final : public factum::Projection {
 public:
  Balances(std::string name, std::string logical)
      : name_(std::move(name)), logical_(std::move(logical)) {}
  std::string name() const override { return name_; }
  std::uint32_t version() const override { return 1; }
  std::vector<std::string> event_types() const override { return {kType}; }
  void reset(factum::ProjectionContext& ctx) override {
    ctx.sql().execute(create_sql(ctx.table(logical_)));
  }
  void apply(const factum::RecordedEvent& e, factum::ProjectionContext& ctx) override {
    if (ctx.generation() != generation_) {
      upsert_ = upsert_sql(ctx.table(logical_));
      generation_ = ctx.generation();
    }
    ctx.sql().execute(upsert_, {e.stream_id, amount_of(e)});
  }

 private:
  std::string name_;
  std::string logical_;
  std::uint64_t generation_ = 0;
  std::string upsert_;
};

// Checks a finished read model (outside the timing), through a raw connection.
void check_model(const fs::path& file, const std::string& table, const Expected& x) {
  RawDb db(file, factum::Durability::normal);
  const std::string sql = "SELECT count(*), sum(events), sum(total) FROM " + table;
  RawStmt s(db, sql.c_str());
  if (!s.step()) throw std::runtime_error("check: no row from " + table);
  const auto rows = static_cast<std::size_t>(sqlite3_column_int64(s.get(), 0));
  const auto events = static_cast<std::uint64_t>(sqlite3_column_int64(s.get(), 1));
  const std::int64_t total = sqlite3_column_int64(s.get(), 2);
  s.reset();
  if (rows != x.accounts || events != x.events || total != x.total) {
    throw std::runtime_error("check: " + table + " holds " + std::to_string(rows) + " rows, " +
                             std::to_string(events) + " events, total " + std::to_string(total) +
                             "; expected " + std::to_string(x.accounts) + ", " +
                             std::to_string(x.events) + ", " + std::to_string(x.total));
  }
}

// ---------------------------------------------------------------------------------------------
// The raw ceiling

// The columns factum reads for an event (eventstore/src/sqlite/schema.hpp, without the previous
// event's hash, which only factum's chain needs), the stream id joined from streams.
constexpr const char* kRawRead =
    "SELECT e.position, s.stream_id, e.stream_version, e.event_id, e.type, e.schema_version, "
    "e.payload, e.correlation_id, e.causation_id, e.compensates, e.actor, e.extra, "
    "e.recorded_at, e.hash FROM events e JOIN streams s ON s.stream_key = e.stream_key "
    "WHERE e.position > ?1 ORDER BY e.position LIMIT ?2";

// One raw build of `table` from position 1; returns the time it took (setup included:
// creating the tables, like the engine's add()).
Timing raw_build(const Config& c, const fs::path& file, const std::string& table) {
  const Stopwatch watch;
  RawDb db(file, c.durability);
  const std::string checkpoints = table + "_checkpoint";
  db.exec("BEGIN IMMEDIATE");
  db.exec(create_sql(table).c_str());
  db.exec(("CREATE TABLE " + checkpoints +
           " (name TEXT PRIMARY KEY NOT NULL, position INTEGER NOT NULL) WITHOUT ROWID")
              .c_str());
  db.exec(("INSERT INTO " + checkpoints + " VALUES ('balances', 0)").c_str());
  db.exec("COMMIT");

  RawStmt begin(db, "BEGIN IMMEDIATE");
  RawStmt commit(db, "COMMIT");
  RawStmt load(db, ("SELECT position FROM " + checkpoints + " WHERE name = 'balances'").c_str());
  RawStmt save(db,
               ("UPDATE " + checkpoints + " SET position = ?1 WHERE name = 'balances'").c_str());
  RawStmt read(db, kRawRead);
  RawStmt upsert(db, upsert_sql(table).c_str());
  std::vector<factum::RecordedEvent> batch;
  batch.reserve(c.batch);
  for (;;) {
    check_interrupt();
    begin.run();
    if (!load.step()) throw std::runtime_error("raw: no checkpoint row");
    const std::int64_t from = sqlite3_column_int64(load.get(), 0);
    load.reset();
    sqlite3_bind_int64(read.get(), 1, from);
    sqlite3_bind_int64(read.get(), 2, static_cast<sqlite3_int64>(c.batch));
    batch.clear();
    while (read.step()) copy_row(read.get(), batch.emplace_back());
    read.reset();
    for (const factum::RecordedEvent& e : batch) {
      if (e.type != kType) continue;  // the projection's type filter
      sqlite3_bind_text(upsert.get(), 1, e.stream_id.data(), static_cast<int>(e.stream_id.size()),
                        SQLITE_STATIC);
      sqlite3_bind_int64(upsert.get(), 2, amount_of(e));
      upsert.run();
    }
    if (!batch.empty()) {
      sqlite3_bind_int64(save.get(), 1, static_cast<sqlite3_int64>(batch.back().position));
      save.run();
    }
    commit.run();
    if (batch.size() < c.batch) break;
  }
  return watch.elapsed();
}

// ---------------------------------------------------------------------------------------------
// factum

// Waits for the rebuild of one projection to be swapped in, through EngineOptions::on_progress.
struct RebuildWatch {
  std::mutex mu;
  std::condition_variable cv;
  std::string finished;  // the projection whose rebuild finished last

  void report(const factum::RebuildProgress& p) {
    if (!p.finished) return;
    {
      std::lock_guard lock(mu);
      finished = p.projection;
    }
    cv.notify_all();
  }
  bool wait(const std::string& name, std::chrono::seconds timeout) {
    std::unique_lock lock(mu);
    const auto deadline = Clock::now() + timeout;
    while (finished != name) {
      check_interrupt();
      if (Clock::now() >= deadline) return false;
      cv.wait_for(lock, std::chrono::milliseconds(50));
    }
    return true;
  }
};

struct FactumTimes {
  Timing build;    // add() until the checkpoint reached the head
  Timing rebuild;  // rebuild() until swapped in (zero: not measured)
};

[[noreturn]] void not_reached(const factum::ProjectionEngine& engine, const std::string& name) {
  const factum::ProjectionStatus s = engine.status(name);
  throw std::runtime_error("factum: projection " + name + " did not reach the head (" +
                           std::string(factum::to_string(s.state)) +
                           (s.error ? ": " + s.error->message : std::string()) + ")");
}

// Waits until `name` reflects `head`: through wait_for (in short steps, so that Ctrl-C is
// noticed), or (--wait poll) by reading its checkpoint row every 2 ms, wait_for's period,
// through a raw read connection of its own. Throws when it does not get there.
void wait_for_head(const Config& c, const fs::path& file, const factum::ProjectionEngine& engine,
                   const std::string& name, factum::Position head) {
  const auto deadline = Clock::now() + std::chrono::minutes(10);
  if (!c.poll) {
    while (!engine.wait_for(name, head, std::chrono::milliseconds(200))) {
      check_interrupt();
      const factum::ProjectionStatus s = engine.status(name);
      if (s.state == factum::ProjectionState::failed || Clock::now() >= deadline) {
        not_reached(engine, name);
      }
    }
    return;
  }
  RawDb db(file, c.durability);
  db.exec("PRAGMA query_only=1");
  RawStmt read(db, "SELECT position FROM factum_checkpoints WHERE name = ?1");
  for (int i = 0;; ++i) {
    check_interrupt();
    sqlite3_bind_text(read.get(), 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
    const bool found = read.step();
    const auto at = found ? static_cast<factum::Position>(sqlite3_column_int64(read.get(), 0)) : 0;
    read.reset();
    if (at >= head) return;
    if (Clock::now() >= deadline) not_reached(engine, name);
    if (i % 100 == 99 && engine.status(name).state == factum::ProjectionState::failed) {
      not_reached(engine, name);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

FactumTimes factum_build(const Config& c, factum::EventStore& store, const std::string& name,
                         const std::string& logical, bool rebuild) {
  const factum::Position head = store.head_position();
  RebuildWatch watch;
  factum::EngineOptions engine_options;
  engine_options.on_progress = [&watch](const factum::RebuildProgress& p) { watch.report(p); };
  factum::ProjectionEngine engine(store, engine_options);
  factum::ProjectionOptions options;
  options.batch_size = c.batch;
  FactumTimes t;
  const Stopwatch build;
  engine.add(std::make_shared<Balances>(name, logical), options);
  wait_for_head(c, store.path(), engine, name, head);
  t.build = build.elapsed();
  if (rebuild) {
    const Stopwatch again;
    engine.rebuild(name);
    if (!watch.wait(name, std::chrono::minutes(10))) {
      throw std::runtime_error("factum: the rebuild of " + name + " did not finish");
    }
    t.rebuild = again.elapsed();
    const factum::ProjectionStatus s = engine.status(name);
    if (s.generation != 2 || s.checkpoint < head) {
      throw std::runtime_error("factum: after the rebuild " + name + " serves generation " +
                               std::to_string(s.generation) + " at " +
                               std::to_string(s.checkpoint));
    }
  }
  engine.stop();
  return t;
}

// ---------------------------------------------------------------------------------------------
// What an inline projection adds to an append

const char* const kInlineName = "inline-balances";
const char* const kInlineTable = "inline_balances";

// `c.appends` calls of append(account, any, one deposit), walking round the accounts; `x`
// follows what the store holds.
Timing append_run(const Config& c, factum::EventStore& store,
                  const std::vector<std::string>& accounts, Expected& x) {
  const Stopwatch watch;
  for (std::uint64_t i = 0; i < c.appends; ++i) {
    if (i % 1024 == 0) check_interrupt();
    const auto amount = static_cast<std::int64_t>(x.events % 997) + 1;
    factum::EventData e;  // a new event id each time
    e.type = kType;
    e.payload = amount_payload(amount);
    store.append(accounts[x.events % accounts.size()], factum::ExpectedVersion::any(), e);
    ++x.events;
    x.total += amount;
  }
  x.accounts = std::max(x.accounts, std::min<std::size_t>(x.events, accounts.size()));
  return watch.elapsed();
}

// The same run with the Balances projection added inline on a fresh engine (add() catches it
// up over the earlier runs' events first, outside the timing).
Timing inline_run(const Config& c, factum::EventStore& store,
                  const std::vector<std::string>& accounts, Expected& x) {
  factum::ProjectionEngine engine(store);
  factum::ProjectionOptions options;
  options.mode = factum::ProjectionMode::inline_append;
  options.batch_size = c.batch;
  engine.add(std::make_shared<Balances>(kInlineName, kInlineTable), options);
  const Timing t = append_run(c, store, accounts, x);
  const factum::ProjectionStatus s = engine.status(kInlineName);
  if (s.checkpoint != store.head_position()) not_reached(engine, kInlineName);
  return t;
}

struct InlineTimes {
  std::vector<Timing> plain;
  std::vector<Timing> with_inline;
};

// Alternates plain and inline runs on one store in `file`, then checks the read model.
InlineTimes inline_case(const Config& c, const fs::path& file) {
  factum::StoreOptions store_options;
  store_options.durability = c.durability;
  factum::EventStore store = factum::EventStore::open(file, store_options);
  std::vector<std::string> accounts;
  for (std::size_t i = 0; i < c.accounts; ++i) accounts.push_back("account-" + std::to_string(i));
  Expected x;
  InlineTimes t;
  for (int rep = 0; rep < c.repeat; ++rep) {
    const bool plain_first = rep % 2 == 0;
    for (int side = 0; side < 2; ++side) {
      const bool plain = (side == 0) == plain_first;
      const Timing run =
          plain ? append_run(c, store, accounts, x) : inline_run(c, store, accounts, x);
      (plain ? t.plain : t.with_inline).push_back(run);
      if (c.verbose) {
        std::cerr << "  " << (plain ? "plain " : "inline") << " appends " << fixed(run.wall, 2)
                  << " s (CPU " << fixed(run.cpu, 2) << " s)\n";
      }
    }
  }
  {
    factum::ProjectionEngine engine(store);  // catches the last plain run up, then checks
    factum::ProjectionOptions options;
    options.mode = factum::ProjectionMode::inline_append;
    engine.add(std::make_shared<Balances>(kInlineName, kInlineTable), options);
    if (!engine.wait_for(kInlineName, store.head_position(), std::chrono::minutes(5))) {
      not_reached(engine, kInlineName);
    }
  }
  check_model(file, kInlineTable, x);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Report

// The best (shortest) wall-clock run as events/s; 0 when there is none.
double best_rate(const std::vector<Timing>& runs, std::uint64_t events) {
  if (runs.empty()) return 0;
  double best = runs.front().wall;
  for (const Timing& t : runs) best = std::min(best, t.wall);
  return static_cast<double>(events) / best;
}

// The least process CPU time per event over the runs, in microseconds; 0 when there is none.
double best_cpu_us(const std::vector<Timing>& runs, std::uint64_t events) {
  if (runs.empty()) return 0;
  double best = runs.front().cpu;
  for (const Timing& t : runs) best = std::min(best, t.cpu);
  return best * 1e6 / static_cast<double>(events);
}

// "3.38/2.05 3.48/2.10" (wall/CPU seconds per run).
std::string runs_text(const std::vector<Timing>& runs) {
  std::string out;
  for (const Timing& t : runs) {
    out += (out.empty() ? "" : "  ") + fixed(t.wall, 2) + "/" + fixed(t.cpu, 2);
  }
  return out.empty() ? "-" : out;
}

struct Row {
  std::string name;
  double events = 0;   // events/s, best run
  double ceiling = 0;  // events/s, best raw run
  double cpu_us = 0;   // process CPU per event, best run
  std::optional<double> target;
};

// "PASS", "MISS", "info" (no target) or "-" (a side was not measured).
std::string result_of(const Row& r) {
  if (r.events <= 0 || r.ceiling <= 0) return "-";
  if (!r.target) return "info";
  return r.events / r.ceiling >= *r.target ? "PASS" : "MISS";
}

void print_row(const Row& r) {
  const bool both = r.events > 0 && r.ceiling > 0;
  std::printf("%-24s %10s %13s %6s %8s %6s %9s\n", r.name.c_str(),
              r.events > 0 ? fixed(r.events, 0).c_str() : "-",
              r.ceiling > 0 ? fixed(r.ceiling, 0).c_str() : "-",
              both ? fixed(r.events / r.ceiling, 2).c_str() : "-",
              r.target ? (">= " + fixed(*r.target, 2)).c_str() : "-", result_of(r).c_str(),
              r.cpu_us > 0 ? fixed(r.cpu_us, 2).c_str() : "-");
}

// The inline case's table; returns whether its target was missed.
bool print_inline(const Config& c, const InlineTimes& t) {
  const double plain = best_rate(t.plain, c.appends);
  const double with_inline = best_rate(t.with_inline, c.appends);
  const double plain_us = 1e6 / plain;
  const double inline_us = 1e6 / with_inline;
  const bool pass = with_inline / plain >= kInlineTarget;
  std::printf(
      "\ninline projection: %llu appends of 1 event per run (append(stream, any, event)), best of "
      "%d\n%-24s %10s %9s %9s\n",
      static_cast<unsigned long long>(c.appends), c.repeat, "case", "appends/s", "us/append",
      "CPU us");
  std::printf("%-24s %10s %9s %9s\n", "plain append", fixed(plain, 0).c_str(),
              fixed(plain_us, 1).c_str(), fixed(best_cpu_us(t.plain, c.appends), 1).c_str());
  std::printf("%-24s %10s %9s %9s\n", "append + inline upsert", fixed(with_inline, 0).c_str(),
              fixed(inline_us, 1).c_str(), fixed(best_cpu_us(t.with_inline, c.appends), 1).c_str());
  std::printf("inline adds %.1f us per append (+%.0f%%); rate ratio %.2f, target >= %.2f: %s\n",
              inline_us - plain_us, (inline_us / plain_us - 1) * 100, with_inline / plain,
              kInlineTarget, pass ? "PASS" : "MISS");
  std::printf("runs, wall/CPU s: plain %s; inline %s\n", runs_text(t.plain).c_str(),
              runs_text(t.with_inline).c_str());
  return !pass;
}

int run(const Config& c) {
  TempDir dir(c.dir, "factum-projbench");
  const fs::path file = dir.path() / "log.db";
  auto stage = [](const std::string& what) { std::cerr << "projection_bench: " << what << "\n"; };

  InlineTimes inline_times;
  if (c.appends > 0) {
    stage("inline case: " + std::to_string(c.appends) +
          " 1-event appends per run, plain and with an inline projection");
    inline_times = inline_case(c, dir.path() / "inline.db");
  }
  if (c.inline_only) {
    const bool missed = print_inline(c, inline_times);
    return c.strict && missed ? 1 : 0;
  }

  stage("building a log of " + std::to_string(c.events) + " events over " +
        std::to_string(c.accounts) + " accounts (append_multi, Durability::normal)");
  const auto setup_start = Clock::now();
  const Expected x = build_log(c, file);
  const double setup = seconds_since(setup_start);
  const auto file_mib = static_cast<double>(fs::file_size(file)) / (1024.0 * 1024.0);
  stage("setup: " + fixed(setup, 2) + " s (" + fixed(static_cast<double>(x.events) / setup, 0) +
        " events/s appended), file " + fixed(file_mib, 1) + " MiB");

  factum::StoreOptions options;
  options.durability = c.durability;
  factum::EventStore store = factum::EventStore::open(file, options);

  std::vector<Timing> raw_runs;
  std::vector<Timing> build_runs;
  std::vector<Timing> rebuild_runs;
  for (int rep = 0; rep < c.repeat; ++rep) {
    const bool raw_first = rep % 2 == 0;
    for (int side = 0; side < 2; ++side) {
      const bool is_raw = (side == 0) == raw_first;
      if (!c.side.empty() && c.side != (is_raw ? "raw" : "factum")) continue;
      const std::string n = std::to_string(rep + 1);
      if (is_raw) {
        stage("raw run " + n);
        const std::string table = "raw_balances_" + n;
        const Timing t = raw_build(c, file, table);
        check_model(file, table, x);
        raw_runs.push_back(t);
        if (c.verbose) {
          std::cerr << "  raw    build " << fixed(t.wall, 2) << " s (CPU " << fixed(t.cpu, 2)
                    << " s)\n";
        }
      } else {
        stage("factum run " + n);
        const std::string logical = "balances_" + n;
        const FactumTimes t = factum_build(c, store, "balances-" + n, logical, c.rebuild);
        check_model(file, logical, x);  // the view on the serving generation
        build_runs.push_back(t.build);
        if (c.rebuild) rebuild_runs.push_back(t.rebuild);
        if (c.verbose) {
          std::cerr << "  factum build " << fixed(t.build.wall, 2) << " s (CPU "
                    << fixed(t.build.cpu, 2) << " s)";
          if (c.rebuild) {
            std::cerr << ", rebuild " << fixed(t.rebuild.wall, 2) << " s (CPU "
                      << fixed(t.rebuild.cpu, 2) << " s)";
          }
          std::cerr << "\n";
        }
      }
    }
  }

  const Row build{"projection build (add)", best_rate(build_runs, x.events),
                  best_rate(raw_runs, x.events), best_cpu_us(build_runs, x.events), kTarget};
  const Row rebuild{"rebuild() blue/green", best_rate(rebuild_runs, x.events),
                    best_rate(raw_runs, x.events), best_cpu_us(rebuild_runs, x.events),
                    kRebuildTarget};
  const Row raw{"raw sqlite3 loop", best_rate(raw_runs, x.events), 0,
                best_cpu_us(raw_runs, x.events), std::nullopt};
  std::printf(
      "projection_bench: %llu events, %zu accounts, 8-byte payload, %zu events per transaction,\n"
      "durability %s for the timed runs (the log was appended with normal), wait %s,\n"
      "%u cores, SQLite %s, best of %d run(s) per side; ratio = events/s / raw events/s\n"
      "setup: %.2f s to append the log (%.0f events/s), file %.1f MiB\n\n",
      static_cast<unsigned long long>(x.events), x.accounts, c.batch,
      c.durability == factum::Durability::full ? "full" : "normal",
      c.poll ? "poll (raw checkpoint reads)" : "api (wait_for)",
      std::thread::hardware_concurrency(), sqlite3_libversion(), c.repeat, setup,
      static_cast<double>(x.events) / setup, file_mib);
  std::printf("%-24s %10s %13s %6s %8s %6s %9s\n", "case", "events/s", "raw events/s", "ratio",
              "target", "result", "CPU us/ev");
  print_row(build);
  if (c.rebuild) print_row(rebuild);
  print_row(raw);
  std::printf("\nruns, wall/CPU s: build %s; rebuild %s; raw %s\n", runs_text(build_runs).c_str(),
              runs_text(rebuild_runs).c_str(), runs_text(raw_runs).c_str());
  if (build.cpu_us > 0 && raw.cpu_us > 0) {
    std::printf("CPU ratio (raw CPU/event / factum CPU/event): build %.2f",
                raw.cpu_us / build.cpu_us);
    if (rebuild.cpu_us > 0) std::printf(", rebuild %.2f", raw.cpu_us / rebuild.cpu_us);
    std::printf("\n");
  }
  bool missed = result_of(build) == "MISS" || result_of(rebuild) == "MISS";
  if (c.appends > 0) missed = print_inline(c, inline_times) || missed;
  return c.strict && missed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Config config = parse(argc, argv);
  bench::catch_interrupts();
  return bench::run_reporting("projection_bench", [&] { return run(config); });
}
