// bench/aggregate_bench.cpp — loading a long-lived aggregate with and without snapshots.
//
// Builds one aggregate whose stream holds --events events (100,000), saved 100 at a time
// through a Repository whose policy snapshots every --every versions (100), in a store
// opened with Durability::normal (the history is built fast; durability does not change how
// a load reads). Then times, best of --reps runs each:
//   - load without snapshots: a Repository with no snapshot store replays every event;
//   - load with snapshots: the newest snapshot (at the head) and no events to replay;
//   - worst case with snapshots: load_at(head - 1), a snapshot every-1 events back and
//     every-1 events to replay;
//   - the raw floor: read_stream of every row, not decoded (what reading costs by itself).
// It prints the times and the ratios; target: load with snapshots >= 100x faster.
//
//   aggregate_bench [--events N] [--every N] [--reps N] [--dir DIR] [--strict]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "factum/factum.hpp"
#include "support.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Added {
  static constexpr std::string_view event_type = "bench.Added";
  std::int64_t amount = 0;
  std::string note;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& amount& note;
  }
};

class Counter : public factum::Aggregate<Counter, Added> {
 public:
  static constexpr std::string_view category = "counter";
  static constexpr std::uint32_t snapshot_version = 1;
  void add(std::int64_t amount) { raise(Added{amount, "a note of some thirty bytes.."}); }
  void apply(const Added& e) {
    total_ += e.amount;
    ++count_;
  }
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& total_& count_;
  }
  std::int64_t total() const { return total_; }
  std::int64_t count() const { return count_; }

 private:
  std::int64_t total_ = 0;
  std::int64_t count_ = 0;
};

struct Args {
  std::uint64_t events = 100000;
  std::uint64_t every = 100;
  int reps = 5;
  fs::path dir = fs::temp_directory_path();
  bool strict = false;
};

Args parse(int argc, char** argv) {
  Args a;
  std::string dir;
  CLI::App app("measures loading an aggregate with and without snapshots", "aggregate_bench");
  bench::cli_defaults(app);
  bench::add_positive(app, "--events", a.events,
                      "events in the aggregate's stream (default 100000)");
  bench::add_positive(app, "--every", a.every, "a snapshot every N versions (default 100)");
  bench::add_positive(app, "--reps", a.reps,
                      "timed runs of each load, best counts (default 5; 100 times as many for the "
                      "loads with snapshots)");
  app.add_option("--dir", dir,
                 "where the temporary directory goes, created when missing (default $TMPDIR or "
                 "/tmp)")
      ->type_name("DIR");
  app.add_flag("--strict", a.strict, "exit with status 1 when the target is missed");
  bench::parse_or_exit(app, argc, argv);
  if (!dir.empty()) a.dir = dir;
  return a;
}

// The best (shortest) of `reps` runs of `fn`, in seconds.
double best_of(int reps, const std::function<void()>& fn) {
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    const auto start = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "aggregate_bench: wrong result: %s\n", what);
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  fs::create_directories(args.dir);
  const bench::TempDir dir(args.dir, "factum-aggbench");
  factum::StoreOptions options;
  options.durability = factum::Durability::normal;
  factum::EventStore store = factum::EventStore::open(dir.path() / "bench.db", options);
  factum::EventRegistry registry;
  registry.add<Added>();
  registry.validate();
  factum::SnapshotStore snapshots(store);
  factum::RepositoryOptions repo_options;
  repo_options.snapshots = factum::SnapshotPolicy::every_n(args.every);
  factum::Repository<Counter> with(store, registry, snapshots, repo_options);
  factum::Repository<Counter> without(store, registry);

  std::fprintf(stderr, "building %llu events (a snapshot every %llu)...\n",
               static_cast<unsigned long long>(args.events),
               static_cast<unsigned long long>(args.every));
  const auto build_start = Clock::now();
  Counter c = with.load("1");
  for (std::uint64_t v = 1; v <= args.events; ++v) {
    c.add(static_cast<std::int64_t>(v % 1000));
    if (v % 100 == 0 || v == args.events) with.save(c);
  }
  const double build_s = std::chrono::duration<double>(Clock::now() - build_start).count();
  const auto n = static_cast<std::int64_t>(args.events);
  const std::uint64_t head = args.events;

  std::int64_t rows = 0;
  const double raw_s = best_of(args.reps, [&] {
    rows = 0;
    for (const factum::RecordedEvent& e : store.read_stream("counter-1"))
      rows += e.payload.empty() ? 0 : 1;
  });
  require(rows == n, "read_stream row count");
  Counter plain;
  const double without_s = best_of(args.reps, [&] { plain = without.load("1"); });
  require(plain.count() == n && plain.version() == head, "load without snapshots");
  const int fast_reps = args.reps * 100;
  Counter fast;
  const double with_s = best_of(fast_reps, [&] { fast = with.load("1"); });
  require(fast.count() == n && fast.total() == plain.total(), "load with snapshots");
  Counter worst;
  const double worst_s = best_of(fast_reps, [&] { worst = with.load_at("1", head - 1); });
  require(worst.version() == head - 1 && worst.count() == n - 1, "load_at with snapshots");
  require(with.snapshots_ignored() == 0 && with.snapshot_failures() == 0, "snapshot counters");

  const double ratio = without_s / with_s;
  std::printf(
      "aggregate_bench: %lld events, a snapshot every %llu (%zu snapshots), "
      "Durability::normal, best of %d (%d for snapshot loads)\n",
      static_cast<long long>(n), static_cast<unsigned long long>(args.every),
      snapshots.count("counter-1"), args.reps, fast_reps);
  std::printf("  build (save 100 events per call)      %10.3f s\n", build_s);
  std::printf("  raw floor: read_stream, no decoding   %10.3f ms\n", raw_s * 1e3);
  std::printf("  load without snapshots                %10.3f ms\n", without_s * 1e3);
  std::printf("  load with snapshots (at the head)     %10.3f ms   %8.0fx faster\n", with_s * 1e3,
              ratio);
  std::printf("  load_at(head-1) with snapshots        %10.3f ms   %8.0fx faster (%llu replayed)\n",
              worst_s * 1e3, without_s / worst_s, static_cast<unsigned long long>(args.every - 1));
  const bool pass = ratio >= 100.0;
  std::printf("  target: with snapshots >= 100x faster: %s\n", pass ? "PASS" : "MISS");
  return args.strict && !pass ? 1 : 0;
}
