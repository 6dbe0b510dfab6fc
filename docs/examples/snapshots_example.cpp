// docs/examples/snapshots_example.cpp — the complete program of docs/snapshots.md: an aggregate
// with a snapshot layout, a policy that snapshots every 10 versions and keeps the last 2, a
// manual snapshot, the hooks and counters, a new schema version that passes the old
// snapshots over, and deleting every snapshot, which changes no loaded state. It checks its
// own results and exits 1 on any mismatch (ctest runs it, label "docs").
#include <factum/factum.hpp>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tally {

struct Counted {
  static constexpr std::string_view event_type = "tally.Counted";
  std::int64_t amount = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& amount;
  }
};

// Version 1 of the code: the state is a total and a count.
class Tally : public factum::Aggregate<Tally, Counted> {
 public:
  static constexpr std::string_view category = "tally";
  static constexpr std::uint32_t snapshot_version = 1;  // the layout of serialize below
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& total_& count_;
  }

  void count(std::int64_t amount) { raise(Counted{amount}); }
  void apply(const Counted& e) {
    total_ += e.amount;
    ++count_;
  }
  std::int64_t total() const { return total_; }
  std::int64_t counted() const { return count_; }

 private:
  std::int64_t total_ = 0;
  std::int64_t count_ = 0;
};

// Version 2 of the code: the state gained a field, so the snapshot layout changed and its
// version goes up. Snapshots written by version 1 are passed over, never decoded.
class TallyV2 : public factum::Aggregate<TallyV2, Counted> {
 public:
  static constexpr std::string_view category = "tally";
  static constexpr std::uint32_t snapshot_version = 2;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& total_& count_& largest_;
  }

  void apply(const Counted& e) {
    total_ += e.amount;
    ++count_;
    if (e.amount > largest_) largest_ = e.amount;
  }
  std::int64_t total() const { return total_; }
  std::int64_t largest() const { return largest_; }

 private:
  std::int64_t total_ = 0;
  std::int64_t count_ = 0;
  std::int64_t largest_ = 0;
};

}  // namespace tally

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok   " : "FAIL ") << what << "\n";
  if (!ok) ++failures;
}

}  // namespace

int main() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("factum-snapshots-example-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  {
    factum::EventStore store = factum::EventStore::open(dir / "tally.db");
    factum::EventRegistry registry;
    registry.add<tally::Counted>();
    registry.validate();
    factum::SnapshotStore snapshots(store);  // creates the factum_snapshots table if missing

    std::vector<std::string> ignored;
    factum::RepositoryOptions options;
    options.snapshots = factum::SnapshotPolicy::every_n(10, /*keep_last=*/2);
    options.on_snapshot_ignored = [&](const factum::SnapshotIgnored& s) {
      ignored.push_back(s.stream_id + "@" + std::to_string(s.version) + ": " + s.reason);
    };
    options.on_snapshot_failed = [](const std::string& stream, const std::exception& e) {
      std::cerr << "snapshot of " << stream << " not written: " << e.what() << "\n";
    };
    factum::Repository<tally::Tally> tallies(store, registry, snapshots, options);
    factum::Repository<tally::Tally> no_snapshots(store, registry);  // replays every event

    for (int i = 1; i <= 35; ++i) tallies.execute("t1", [&](tally::Tally& t) { t.count(i); });
    // The policy wrote snapshots at 10, 20 and 30 and pruned to the newest 2.
    const auto kept = snapshots.newest("tally-t1");
    check(kept.size() == 2 && kept[0].version == 30 && kept[1].version == 20,
          "every_n(10, 2): snapshots at 30 and 20 remain");
    check(kept[0].schema_version == 1 && kept[0].digest == factum::sha256(kept[0].state),
          "a snapshot carries its schema version and the SHA-256 of its bytes");

    const tally::Tally loaded = tallies.load("t1");  // snapshot at 30 + events 31..35
    const tally::Tally replayed = no_snapshots.load("t1");
    check(loaded.total() == 630 && loaded.version() == 35, "load: snapshot plus the tail");
    check(loaded.total() == replayed.total() && loaded.counted() == replayed.counted(),
          "the same state as a full replay");
    check(tallies.load_at("t1", 25).total() == 325, "load_at uses the snapshot at 20");

    // A snapshot by hand, at the aggregate's loaded version (it must have no pending events).
    // It prunes too, by the policy's keep_last: 35 and 30 remain.
    tallies.snapshot(loaded);
    check(snapshots.newest("tally-t1")[0].version == 35 && snapshots.count("tally-t1") == 2,
          "a manual snapshot at version 35, pruned to the newest 2");

    // New code with a new snapshot layout: the old snapshots are passed over and reported.
    factum::RepositoryOptions v2_options;
    v2_options.on_snapshot_ignored = options.on_snapshot_ignored;
    factum::Repository<tally::TallyV2> v2(store, registry, snapshots, v2_options);
    const tally::TallyV2 upgraded = v2.load("t1");
    check(upgraded.total() == 630 && upgraded.largest() == 35, "v2 replays from the events");
    check(v2.snapshots_ignored() == 2 && ignored.size() == 2,
          "the 2 version-1 snapshots were ignored, never decoded");
    for (const auto& why : ignored) std::cout << "  ignored " << why << "\n";
    v2.snapshot(upgraded);
    check(v2.load("t1").largest() == 35 && v2.snapshots_ignored() == 2,
          "a version-2 snapshot is used by v2");

    // A snapshot is a cache, never the truth.
    snapshots.delete_all();
    check(tallies.load("t1").total() == replayed.total() && v2.load("t1").total() == 630,
          "deleting every snapshot changes no loaded state");
    check(tallies.snapshot_failures() == 0, "no snapshot write failed");
  }
  std::filesystem::remove_all(dir);
  std::cout << (failures == 0 ? "all checks passed\n" : "some checks FAILED\n");
  return failures == 0 ? 0 : 1;
}
