// bench/dcb_bench.cpp — what consistency by query costs (docs/dcb.md, issue 32 item 8):
//
//   1. a read by query of one tag among --events events (one event matches), per query, against
//      the same index query run as plain SQL through the store's Sql handle (the raw ceiling,
//      rows stepped and not decoded) in the same run; target < 2 ms;
//   2. a read by query of a tag that --events / 10 events carry, events/s, against that raw
//      SQL; target >= 0.5 of it;
//   3. conditional appends of one tagged event with a one-tag condition, against plain appends
//      of the same event, one per append; target >= 0.7.
//
//   dcb_bench [--events N] [--appends N] [--durability full|normal]
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "factum/eventstore/query.hpp"
#include "factum/eventstore/tags.hpp"
#include "factum/factum.hpp"
#include "support.hpp"

namespace {

using bench::Clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

factum::EventData tagged_event(std::vector<std::string> tags) {
  factum::EventData e;
  e.type = "bench.Claimed";
  e.payload = factum::to_bytes(std::string(100, 'p'));
  factum::set_tags(e.metadata, std::move(tags));
  return e;
}

// The raw ceiling of a read by one tag: the statement read_query runs for a one-tag item on
// SQLite (the backend this bench runs), as plain SQL through the store's Sql handle, every
// column stepped but nothing decoded.
std::size_t raw_read(const factum::EventStore& store, const std::string& tag) {
  std::size_t rows = 0;
  store.read_sql([&](factum::Sql& sql) {
    sql.query(
        "SELECT e.position, s.stream_id, e.stream_version, e.event_id, e.type, "
        "e.schema_version, e.payload, e.correlation_id, e.causation_id, e.compensates, e.actor, "
        "e.extra, e.recorded_at, e.hash, p.hash FROM factum_event_tags t JOIN events e ON "
        "e.position = t.position JOIN streams s ON s.stream_key = e.stream_key LEFT JOIN events "
        "p ON p.position = e.position - 1 WHERE t.tag = ?1 AND t.position > 0 ORDER BY "
        "t.position",
        {tag}, [&](const factum::SqlRow&) { ++rows; });
  });
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t events = 100000;
  std::size_t appends = 2000;
  factum::Durability durability = factum::Durability::full;
  CLI::App app("dcb_bench: the cost of reads by query and conditional appends");
  bench::cli_defaults(app);
  bench::add_positive(app, "--events", events, "Events in the store that is queried");
  bench::add_positive(app, "--appends", appends, "Appends, each way");
  bench::add_durability(app, durability, "Durability of the stores");
  bench::parse_or_exit(app, argc, argv);
  bench::catch_interrupts();
  return bench::run_reporting("dcb_bench", [&] {
    bench::TempDir dir(std::filesystem::temp_directory_path(), "factum-dcb-bench");
    factum::StoreOptions o;
    o.durability = durability;
    factum::EventStore store = factum::EventStore::open(dir.path() / "query.db", o);
    // Every event has a tag of its own; one in ten also "group:hot".
    for (std::size_t i = 0; i < events; i += 1000) {
      std::vector<factum::EventData> batch;
      for (std::size_t j = i; j < std::min(events, i + 1000); ++j) {
        std::vector<std::string> tags{"n:" + std::to_string(j)};
        if (j % 10 == 0) tags.emplace_back("group:hot");
        batch.push_back(tagged_event(std::move(tags)));
      }
      store.append("s-" + std::to_string(i / 1000), factum::ExpectedVersion::any(), batch);
      bench::check_interrupt();
    }
    std::printf("dcb_bench: %zu tagged events, %zu appends each way\n\n", events, appends);

    // 1. One tag among them.
    std::mt19937 random(7);
    const int queries = 2000;
    std::size_t sink = 0;
    auto t = Clock::now();
    for (int q = 0; q < queries; ++q) {
      sink += raw_read(store, "n:" + std::to_string(random() % events));
    }
    const double raw_ms = seconds_since(t) * 1e3 / queries;
    t = Clock::now();
    for (int q = 0; q < queries; ++q) {
      sink += factum::read_query(store,
                                 factum::Query::tagged({"n:" + std::to_string(random() % events)}))
                  .events.size();
    }
    const double one_ms = seconds_since(t) * 1e3 / queries;
    std::printf("%-46s %8.3f ms  (raw SQL %.3f ms, ratio %.2f)  target < 2 ms\n",
                "read by query, one tag among them", one_ms, raw_ms, raw_ms / one_ms);

    // 2. A tag of one event in ten.
    double raw_rate = 0;
    double query_rate = 0;
    for (int round = 0; round < 3; ++round) {
      t = Clock::now();
      const std::size_t n = raw_read(store, "group:hot");
      raw_rate = std::max(raw_rate, static_cast<double>(n) / seconds_since(t));
      t = Clock::now();
      const std::size_t m =
          factum::read_query(store, factum::Query::tagged({"group:hot"})).events.size();
      query_rate = std::max(query_rate, static_cast<double>(m) / seconds_since(t));
      sink += n + m;
    }
    std::printf("%-46s %8.0f events/s  (raw SQL %.0f/s, ratio %.2f)  target >= 0.50\n\n",
                "read by query, a tag of one event in ten", query_rate, raw_rate,
                query_rate / raw_rate);

    // 3. Appends: plain against conditional, interleaved, best of two.
    double plain_rate = 0;
    double conditional_rate = 0;
    for (int round = 0; round < 2; ++round) {
      factum::EventStore a =
          factum::EventStore::open(dir.path() / ("plain" + std::to_string(round) + ".db"), o);
      factum::EventStore b =
          factum::EventStore::open(dir.path() / ("cond" + std::to_string(round) + ".db"), o);
      t = Clock::now();
      for (std::size_t i = 0; i < appends; ++i) {
        a.append("u-" + std::to_string(i), factum::ExpectedVersion::any(),
                 tagged_event({"username:u" + std::to_string(i)}));
      }
      plain_rate = std::max(plain_rate, static_cast<double>(appends) / seconds_since(t));
      t = Clock::now();
      for (std::size_t i = 0; i < appends; ++i) {
        const std::string name = "username:u" + std::to_string(i);
        const factum::EventData e = tagged_event({name});
        b.append("u-" + std::to_string(i), factum::ExpectedVersion::any(), {&e, 1},
                 factum::AppendCondition{factum::Query::tagged({name}), 0});
      }
      conditional_rate =
          std::max(conditional_rate, static_cast<double>(appends) / seconds_since(t));
      bench::check_interrupt();
    }
    std::printf("%-46s %8.0f events/s\n", "append one tagged event", plain_rate);
    std::printf("%-46s %8.0f events/s  (ratio %.2f)  target >= 0.70\n",
                "append it on a one-tag condition", conditional_rate,
                conditional_rate / plain_rate);
    return sink == 0 ? 1 : 0;
  });
}
