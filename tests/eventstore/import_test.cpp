// The library calls under `factum import` and `factum verify`: EventStore::import_events and
// import_log (events land verbatim: positions, versions, ids, recorded-at times, hashes, only
// where they continue the chain; a log given in batches lands whole or not at all) and
// verify(VerifyOptions) with its progress reports. Built for SQLite and for PostgreSQL.
#include <doctest/doctest.h>

#include <chrono>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include "support/temp_dir.hpp"

namespace factum::test {
namespace {

// A source store with two streams and five events, some with metadata.
std::vector<RecordedEvent> source_events(TempStore& source) {
  EventData opened = make_event("bank.AccountOpened", "ada");
  opened.metadata.actor = "teller-7";
  opened.metadata.values = {{"channel", "web"}};
  EventData fix = make_event("bank.Corrected", "fix");
  fix.metadata.compensates = opened.id;
  source.store.append("account-1", ExpectedVersion::no_stream(),
                      std::vector<EventData>{opened, make_event("bank.Deposited", "5")});
  source.store.append("account-2", ExpectedVersion::no_stream(), make_events(2));
  source.store.append("account-1", ExpectedVersion::exact(2), fix);
  return source.store.read_all().to_vector();
}

TEST_CASE("import_events lands events with their positions, ids, times and hashes") {
  TempStore source;
  const std::vector<RecordedEvent> events = source_events(source);
  TempStore target;
  const Head head = target.store.import_events(events);
  CHECK(head == source.store.head());
  CHECK(target.store.read_all().to_vector() == events);
  CHECK(target.store.verify(head.hash).ok());
  CHECK(target.store.stream_version("account-1") == 3);
}

TEST_CASE("import_events continues the log in several calls and appends follow it") {
  TempStore source;
  const std::vector<RecordedEvent> events = source_events(source);
  TempStore target;
  target.store.import_events(std::span(events).first(2));
  target.store.import_events(std::span(events).subspan(2));
  target.store.append("account-2", ExpectedVersion::exact(2), make_event());
  CHECK(target.store.head_position() == 6);
  CHECK(target.store.verify().ok());
}

TEST_CASE("import_events refuses an event that does not follow the head, and writes nothing") {
  TempStore source;
  const std::vector<RecordedEvent> events = source_events(source);
  TempStore target;
  CHECK_THROWS_AS(target.store.import_events(std::span(events).subspan(1)), InvalidArgument);
  std::vector<RecordedEvent> skipped{events[0], events[2]};
  CHECK_THROWS_AS(target.store.import_events(skipped), InvalidArgument);
  CHECK(target.store.head_position() == 0);
}

TEST_CASE("import_events refuses an event whose hash does not match, naming its position") {
  TempStore source;
  std::vector<RecordedEvent> events = source_events(source);
  events[3].payload = to_bytes("forged");
  TempStore target;
  try {
    target.store.import_events(events);
    FAIL("no exception");
  } catch (const CorruptEventError& e) {
    CHECK(e.position() == 4);
  }
  CHECK(target.store.head_position() == 0);
}

TEST_CASE("import_events refuses a recorded-at time outside the years 1 to 9999") {
  TempStore source;
  const std::vector<RecordedEvent> events = source_events(source);
  TempStore target;
  const std::int64_t outside[] = {
      std::numeric_limits<std::int64_t>::min(), std::int64_t{-62135596800000001},
      std::int64_t{253402300800000000}, std::numeric_limits<std::int64_t>::max()};
  for (const std::int64_t us : outside) {
    CAPTURE(us);
    std::vector<RecordedEvent> odd = events;
    odd[0].recorded_at = Timestamp(std::chrono::microseconds(us));
    try {
      target.store.import_events(odd);
      FAIL("the import did not throw");
    } catch (const InvalidArgument& e) {
      CHECK(std::string(e.what()).find("position 1") != std::string::npos);
      CHECK(std::string(e.what()).find("0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z") !=
            std::string::npos);
    }
  }
  CHECK(target.store.head_position() == 0);
}

TEST_CASE("import_events refuses a stream version out of sequence") {
  TempStore source;
  std::vector<RecordedEvent> events = source_events(source);
  TempStore target;
  target.store.import_events(std::span(events).first(1));
  events[1].stream_version = 3;
  CHECK_THROWS_AS(target.store.import_events(std::span(events).subspan(1, 1)), InvalidArgument);
}

TEST_CASE("import_events into a store with other events refuses a stored id") {
  TempStore source;
  const std::vector<RecordedEvent> events = source_events(source);
  TempStore target;
  EventData same = make_event();
  same.id = events[1].id;
  target.store.append("other-1", ExpectedVersion::any(), same);
  std::vector<RecordedEvent> next{events[1]};
  next[0].position = 2;  // the hash no longer matters: the duplicate id is found first
  next[0].stream_version = 1;
  CHECK_THROWS_AS(target.store.import_events(next), DuplicateEventError);
}

TEST_CASE("import_events tells on_appended slots about the imported events") {
  TempStore source;
  const std::vector<RecordedEvent> events = source_events(source);
  TempStore target;
  std::vector<RecordedEvent> seen;
  boost::signals2::scoped_connection c = target.store.on_appended().connect(
      [&](const std::vector<RecordedEvent>& committed) { seen = committed; });
  target.store.import_events(events);
  CHECK(seen == events);
}

TEST_CASE("verify with VerifyOptions reports progress after each page and checks the head") {
  TempStore s;
  s.store.append("bulk-1", ExpectedVersion::any(), make_events(9000));
  std::vector<Position> seen;
  VerifyOptions options;
  options.on_progress = [&](Position checked) { seen.push_back(checked); };
  options.expected_head = s.store.head().hash;
  const VerifyResult r = s.store.verify(options);
  CHECK(r.ok());
  CHECK(r.events_checked == 9000);
  CHECK(seen == std::vector<Position>{4096, 8192});
  options.expected_head = Hash{1};
  CHECK(s.store.verify(options).problem == VerifyResult::Problem::head_mismatch);
}

TEST_CASE("import_log lands a log given in batches, in one transaction") {
  TempStore source;
  const std::vector<RecordedEvent> events = source_events(source);
  TempStore target;
  std::vector<RecordedEvent> seen;
  boost::signals2::scoped_connection c =
      target.store.on_appended().connect([&](const std::vector<RecordedEvent>& committed) {
        seen.insert(seen.end(), committed.begin(), committed.end());
      });
  const Head head = target.store.import_log([&](const EventStore::ImportBatches& import) {
    import(std::span(events).first(2));
    import(std::span(events).subspan(2, 1));
    import(std::span(events).subspan(3));
  });
  CHECK(head == source.store.head());
  CHECK(target.store.read_all().to_vector() == events);
  CHECK(seen == events);  // once, after the commit
  CHECK(target.store.verify().ok());
  // An empty log writes nothing.
  CHECK(target.store.import_log([](const EventStore::ImportBatches&) {}) == head);
}

TEST_CASE("import_log writes nothing when a later batch is refused or the producer throws") {
  TempStore source;
  std::vector<RecordedEvent> events = source_events(source);
  TempStore target;
  SUBCASE("a forged event in the last batch") {
    events[4].payload = to_bytes("forged");
    CHECK_THROWS_AS(target.store.import_log([&](const EventStore::ImportBatches& import) {
      import(std::span(events).first(2));
      import(std::span(events).subspan(2));
    }),
                    CorruptEventError);
  }
  SUBCASE("a batch that does not continue the one before") {
    CHECK_THROWS_AS(target.store.import_log([&](const EventStore::ImportBatches& import) {
      import(std::span(events).first(2));
      import(std::span(events).subspan(3));
    }),
                    InvalidArgument);
  }
  SUBCASE("the producer fails after some batches (its input broke)") {
    CHECK_THROWS_WITH(target.store.import_log([&](const EventStore::ImportBatches& import) {
      import(std::span(events).first(3));
      throw std::runtime_error("the export's pipe broke");
    }),
                      "the export's pipe broke");
  }
  CHECK(target.store.head_position() == 0);
  CHECK(target.store.read_all().to_vector().empty());
  // The store is as it was: the whole log imports afterwards.
  const std::vector<RecordedEvent> good = source.store.read_all().to_vector();
  CHECK(target.store.import_log([&](const EventStore::ImportBatches& import) { import(good); }) ==
        source.store.head());
  CHECK(target.store.verify().ok());
}

}  // namespace
}  // namespace factum::test
