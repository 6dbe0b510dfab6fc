// No reader of the factum command line fails on a store that verifies, and none says more or
// less than the store holds (issue 28, item 6): any 64-bit recorded_at prints as its right date
// (ISO 8601's expanded years past 9999), and audit counts each event a causation cycle reaches
// once, and stops.
#include "cli_fixture.hpp"
#include "support/chain_hash.hpp"

namespace factum::test {
namespace {

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// A store of one event in stream clock-1, recorded at `us` (written with raw SQL, the chain
// rewritten so that the store verifies).
struct ClockStore {
  TempDir dir;
  std::filesystem::path path = dir.file("clock.db");
  explicit ClockStore(std::int64_t us) {
    EventStore::open(path, TempStore::fast_options())
        .append("clock-1", ExpectedVersion::any(), make_event("test.Ticked", "{}"));
    set_recorded_at(path, 1, us);
  }
  std::string file() const { return path.string(); }
};

TEST_CASE("the most negative recorded_at prints as its date in every reader, and stats counts it") {
  ClockStore s(kMin);
  REQUIRE(run_cli({"verify", s.file()}).code == 0);
  const std::string shown = "-290308-12-21T19:59:05.224192Z";
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"info", s.file()},
                                             {"streams", s.file()},
                                             {"read", s.file(), "clock-1"},
                                             {"tail", s.file()},
                                             {"audit", s.file(), "--position", "1"}}) {
    CAPTURE(args[0]);
    const CliResult r = run_cli(args);
    CHECK(r.code == 0);
    CHECK(contains(r.out, shown));
  }
  const CliResult stats = run_cli({"stats", s.file()});
  CHECK(stats.code == 0);
  CHECK(contains(stats.out, "-290308-12-21       1"));
  const CliResult json = run_cli({"stats", s.file(), "--json"});
  REQUIRE(json.code == 0);
  CHECK(Json::parse(json.out)["days"][0]["day"] == "-290308-12-21");
}

TEST_CASE("the largest recorded_at prints as its date, year 294247, in every reader") {
  ClockStore s(kMax);
  REQUIRE(run_cli({"verify", s.file()}).code == 0);
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"info", s.file()},
                                             {"streams", s.file()},
                                             {"tail", s.file(), "--json"},
                                             {"export", s.file()}}) {
    CAPTURE(args[0]);
    const CliResult r = run_cli(args);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "+294247-01-10T04:00:54.775807Z"));
  }
  CHECK(contains(run_cli({"stats", s.file()}).out, "+294247-01-10"));
}

TEST_CASE("times around the epoch and before year 1 print as ISO 8601 dates") {
  ClockStore before_epoch(-1);
  CHECK(contains(run_cli({"tail", before_epoch.file()}).out, "1969-12-31T23:59:59.999999Z"));
  CHECK(contains(run_cli({"stats", before_epoch.file()}).out, "1969-12-31"));
  // 0001-01-01 less one microsecond: year 0 (1 BC), four digits as ISO 8601 writes it.
  ClockStore year_zero(-62135596800000001);
  CHECK(contains(run_cli({"tail", year_zero.file()}).out, "0000-12-31T23:59:59.999999Z"));
  ClockStore year_minus_one(-62167219200000001);
  CHECK(contains(run_cli({"tail", year_minus_one.file()}).out, "-000001-12-31T23:59:59.999999Z"));
}

TEST_CASE("read shows a stream whose id is longer than the default limit, as streams lists it") {
  TempDir dir;
  const auto path = dir.file("long.db");
  const std::string stream = "long-" + std::string(295, 'x');  // 300 bytes; the default is 200
  StoreOptions options = TempStore::fast_options();
  options.max_stream_id_length = 1000;
  EventStore::open(path, options)
      .append(stream, ExpectedVersion::any(), make_event("test.Long", "{}"));
  CHECK(contains(run_cli({"streams", path.string()}).out, stream));
  const CliResult r = run_cli({"read", path.string(), stream, "--json"});
  CHECK(r.code == 0);
  REQUIRE(lines_of(r.out).size() == 1);
  CHECK(Json::parse(lines_of(r.out)[0])["stream"] == stream);
}

// A store whose causation ids form a cycle through the event at position 1: 1 causes 2, 2
// causes 3, 3 causes 1 (the API accepts any causation id), and 3 also causes 4.
struct CycleStore {
  TempDir dir;
  std::filesystem::path path = dir.file("cycle.db");
  CycleStore() {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    std::vector<EventData> events;
    for (int n = 1; n <= 4; ++n) {
      EventData e = make_event("test.Looped", std::to_string(n));
      e.id = id(n);
      e.metadata.causation_id = id(n == 1 ? 3 : n == 4 ? 3 : n - 1);
      events.push_back(e);
    }
    store.append("loop-1", ExpectedVersion::any(), events);
  }
  std::string file() const { return path.string(); }
};

TEST_CASE("audit lists each event of a causation cycle once, at its shortest depth") {
  CycleStore s;
  const CliResult r = run_cli({"audit", s.file(), "--position", "1", "--json"});
  REQUIRE(r.code == 0);
  const Json caused = Json::parse(r.out)["caused"];
  CHECK(caused["total"] == 4);  // 2, 3, 4, and 1 itself (3 causes it)
  std::map<int, int> depth;
  for (const Json& e : caused["events"]) depth[e["position"].get<int>()] = e["depth"].get<int>();
  CHECK(depth == std::map<int, int>{{1, 3}, {2, 1}, {3, 2}, {4, 3}});
  CHECK(caused["depth_limit_reached"] == false);
}

TEST_CASE("audit of a self-causing event lists it once") {
  TempDir dir;
  const auto path = dir.file("self.db");
  EventData e = make_event("test.Selfish", "{}");
  e.id = id(1);
  e.metadata.causation_id = id(1);
  EventStore::open(path, TempStore::fast_options()).append("self-1", ExpectedVersion::any(), e);
  const CliResult r = run_cli({"audit", path.string(), "--position", "1"});
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "caused: 1 event\n"));
  const CliResult json = run_cli({"audit", path.string(), "--position", "1", "--json"});
  CHECK(Json::parse(json.out)["caused"]["events"].size() == 1);
}

TEST_CASE("audit says when the causation walk stopped at its depth limit") {
  TempDir dir;
  const auto path = dir.file("chain.db");
  std::vector<EventData> events;
  for (int n = 1; n <= 70; ++n) {  // 1 causes 2, 2 causes 3, ...: 69 levels below 1
    EventData e = make_event("test.Chained", std::to_string(n));
    e.id = id(n);
    if (n > 1) e.metadata.causation_id = id(n - 1);
    events.push_back(e);
  }
  EventStore::open(path, TempStore::fast_options())
      .append("chain-1", ExpectedVersion::any(), events);
  const CliResult r = run_cli({"audit", path.string(), "--position", "1"});
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "caused: 64 events"));
  CHECK(contains(r.out, "the walk stopped at depth 64"));
  const CliResult json = run_cli({"audit", path.string(), "--position", "1", "--json"});
  CHECK(Json::parse(json.out)["caused"]["depth_limit_reached"] == true);
}

}  // namespace
}  // namespace factum::test
