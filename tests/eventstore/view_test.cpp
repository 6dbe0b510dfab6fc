// Visiting reads (visit_stream, visit_category, visit_all): the EventViews they hand out equal
// the owned events of read_stream, read_category and read_all, page by page, and damaged rows
// throw as the owned reads do.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_events;
using factum::test::raw_exec;
using factum::test::TempStore;

namespace {

StoreOptions pages_of(std::size_t n) {
  StoreOptions o = TempStore::fast_options();
  o.read_page_size = n;
  return o;
}

// 20 events over the streams a-1, a-2 and b-1, interleaved, some with metadata.
void fill(EventStore& store) {
  for (int i = 0; i < 10; ++i) {
    auto batch = make_events(2, "e" + std::to_string(i) + "-");
    batch[0].metadata.actor = "alice";
    batch[0].metadata.correlation_id = EventId::generate();
    batch[1].metadata.values = {{"k", "v" + std::to_string(i)}, {"tenant", "t"}};
    const std::string stream = i % 3 == 0 ? "b-1" : (i % 3 == 1 ? "a-1" : "a-2");
    store.append(stream, ExpectedVersion::any(), batch);
  }
}

std::vector<RecordedEvent> copies_of_all(const EventStore& s, Position from) {
  std::vector<RecordedEvent> out;
  s.visit_all(from, [&](const EventView& e) { out.push_back(e.to_recorded()); });
  return out;
}

std::vector<RecordedEvent> copies_of_category(const EventStore& s, std::string_view c,
                                              Position from) {
  std::vector<RecordedEvent> out;
  s.visit_category(c, from, [&](const EventView& e) { out.push_back(e.to_recorded()); });
  return out;
}

std::vector<RecordedEvent> copies_of_stream(const EventStore& s, std::string_view stream,
                                            StreamVersion from) {
  std::vector<RecordedEvent> out;
  s.visit_stream(stream, from, [&](const EventView& e) { out.push_back(e.to_recorded()); });
  return out;
}

}  // namespace

TEST_CASE("visit_all hands out views equal to read_all's events, from any position") {
  for (std::size_t page : {1U, 3U, 7U, 20U, 1000U}) {
    CAPTURE(page);
    TempStore t(pages_of(page));
    fill(t.store);
    for (Position from : {0U, 1U, 2U, 3U, 4U, 10U, 19U, 20U, 21U}) {
      CAPTURE(from);
      const auto owned = t.store.read_all(from).to_vector();
      CHECK(owned.size() == (from > 20 ? 0 : 20 - std::max<Position>(from, 1) + 1));
      CHECK(copies_of_all(t.store, from) == owned);
    }
  }
}

TEST_CASE("visit_category and visit_stream hand out views equal to the owned reads") {
  for (std::size_t page : {1U, 3U, 1000U}) {
    CAPTURE(page);
    TempStore t(pages_of(page));
    fill(t.store);
    for (Position from : {1U, 5U, 12U, 40U}) {
      CHECK(copies_of_category(t.store, "a", from) == t.store.read_category("a", from).to_vector());
      CHECK(copies_of_category(t.store, "b", from) == t.store.read_category("b", from).to_vector());
    }
    CHECK(copies_of_category(t.store, "none", 1).empty());
    for (StreamVersion from : {0U, 1U, 2U, 5U, 8U, 9U}) {
      for (const char* stream : {"a-1", "a-2", "b-1", "c-1"}) {
        CAPTURE(stream);
        CHECK(copies_of_stream(t.store, stream, from) ==
              t.store.read_stream(stream, from).to_vector());
      }
    }
  }
}

TEST_CASE("visiting an empty store calls nothing and returns 0") {
  TempStore t;
  auto never = [](const EventView&) { FAIL("called on an empty store"); };
  CHECK(t.store.visit_all(1, never) == 0);
  CHECK(t.store.visit_category("a", 1, never) == 0);
  CHECK(t.store.visit_stream("a-1", 1, never) == 0);
}

TEST_CASE("a visit stops after the event its callback returns false for") {
  TempStore t(pages_of(3));
  fill(t.store);
  std::vector<Position> seen;
  const auto n = t.store.visit_all(2, [&](const EventView& e) {
    seen.push_back(e.position);
    return e.position < 7;
  });
  CHECK(n == 6);
  CHECK(seen == std::vector<Position>{2, 3, 4, 5, 6, 7});
  int calls = 0;
  CHECK(t.store.visit_stream("a-1", 1, [&](const EventView&) { return ++calls < 3; }) == 3);
  CHECK(t.store.visit_category("a", 1, [&](const EventView&) { return false; }) == 1);
}

TEST_CASE("a visit's previous_hash is the previous log event's hash across page boundaries") {
  for (std::size_t page : {1U, 2U, 3U}) {
    CAPTURE(page);
    TempStore t(pages_of(page));
    fill(t.store);
    std::vector<Hash> hashes{Hash{}};  // hashes[p] = hash of position p
    for (const RecordedEvent& e : t.store.read_all()) hashes.push_back(e.hash);
    for (Position from : {1U, 2U, 3U, 4U, 5U}) {
      t.store.visit_all(from, [&](const EventView& e) {
        CHECK(e.previous_hash == hashes[e.position - 1]);
        CHECK(hash_matches(e));
      });
      for (const RecordedEvent& e : t.store.read_all(from)) {
        CHECK(e.previous_hash == hashes[e.position - 1]);
      }
    }
    t.store.visit_category(
        "a", 1, [&](const EventView& e) { CHECK(e.previous_hash == hashes[e.position - 1]); });
    t.store.visit_stream(
        "b-1", 2, [&](const EventView& e) { CHECK(e.previous_hash == hashes[e.position - 1]); });
  }
}

// SQLite only: deletes an event by raw SQL on the store file.
TEST_SUITE_BEGIN("sqlite-only");
TEST_CASE("after a deleted event, a read from just past it gives zeros for previous_hash") {
  // A read across the hole throws CorruptStoreError (hole_test.cpp); one that starts after it
  // looks the missing event's hash up and finds none.
  TempStore t(pages_of(3));
  fill(t.store);
  raw_exec(t.path, std::string(test::kDropTriggers) + "DELETE FROM events WHERE position = 5");
  CHECK_THROWS_AS(t.store.read_all().to_vector(), CorruptStoreError);
  const auto owned = t.store.read_all(6).to_vector();
  REQUIRE(owned.size() == 15);
  CHECK(owned[0].position == 6);
  CHECK(owned[0].previous_hash == Hash{});
  CHECK(owned[1].previous_hash == owned[0].hash);
  CHECK(copies_of_all(t.store, 6) == owned);
}
TEST_SUITE_END();

TEST_CASE("a view's metadata accessors decode the stored key/values on demand") {
  TempStore t;
  fill(t.store);
  int with_values = 0;
  t.store.visit_all(1, [&](const EventView& e) {
    const RecordedEvent owned = e.to_recorded();
    CHECK(e.metadata() == owned.metadata);
    CHECK(e.metadata_values() == owned.metadata.values);
    CHECK(e.category() == owned.category());
    if (owned.metadata.values.empty()) {
      CHECK(e.encoded_values.empty());
      CHECK_FALSE(e.metadata_value("k"));
      return;
    }
    ++with_values;
    CHECK(e.metadata_value("k") == owned.metadata.values.at("k"));
    CHECK(e.metadata_value("tenant") == "t");
    CHECK_FALSE(e.metadata_value("missing"));
  });
  CHECK(with_values == 10);
}

// SQLite only: damage rows by raw SQL on the store file.
TEST_SUITE_BEGIN("sqlite-only");
TEST_CASE("hash_matches of a view finds a payload changed behind the library's back") {
  TempStore t;
  fill(t.store);
  raw_exec(t.path, std::string(test::kDropTriggers) +
                       "UPDATE events SET payload = X'00' WHERE position = 4");
  std::vector<Position> broken;
  t.store.visit_all(1, [&](const EventView& e) {
    if (!hash_matches(e)) broken.push_back(e.position);
  });
  CHECK(broken == std::vector<Position>{4});
}

TEST_CASE("a damaged row throws CorruptEventError from every visit, after the events before it") {
  const char* damage[] = {
      "UPDATE events SET event_id = X'01' WHERE position = 5",
      "UPDATE events SET payload = 'text' WHERE position = 5",
      "UPDATE events SET extra = X'00000001000000' WHERE position = 5",
      "UPDATE events SET extra = X'' WHERE position = 5",
      "UPDATE events SET hash = X'0102' WHERE position = 5",
      "UPDATE events SET type = X'00' WHERE position = 5",
      "UPDATE events SET actor = X'41' WHERE position = 5",
      "UPDATE events SET correlation_id = X'0102' WHERE position = 5",
  };
  for (const std::string sql : damage) {
    CAPTURE(sql);
    TempStore t(pages_of(3));
    fill(t.store);
    raw_exec(t.path, std::string(test::kDropTriggers) + sql);
    std::vector<Position> seen;
    try {
      t.store.visit_all(1, [&](const EventView& e) { seen.push_back(e.position); });
      FAIL("visit_all read a damaged row");
    } catch (const CorruptEventError& e) {
      CHECK(e.position() == 5);
    }
    CHECK(seen == std::vector<Position>{1, 2, 3, 4});
    CHECK_THROWS_AS(t.store.read_all().to_vector(), CorruptEventError);
    // Position 5 is the first event of batch 2, in stream a-2.
    CHECK_THROWS_AS(t.store.visit_stream("a-2", 1, [](const EventView&) {}), CorruptEventError);
    CHECK_THROWS_AS(t.store.visit_category("a", 1, [](const EventView&) {}), CorruptEventError);
    // The store still works: the failed walk gave its connection back.
    CHECK(t.store.visit_all(6, [](const EventView&) {}) == 15);
  }
}
TEST_SUITE_END();

TEST_CASE("what a visit's callback throws ends the walk and reaches the caller") {
  TempStore t(pages_of(3));
  fill(t.store);
  CHECK_THROWS_AS(t.store.visit_all(1,
                                    [](const EventView& e) {
                                      if (e.position == 4) throw std::runtime_error("stop");
                                    }),
                  std::runtime_error);
  CHECK(t.store.visit_all(1, [](const EventView&) {}) == 20);
}

TEST_CASE("a visit running beside appends sees every event of its range once, in order") {
  TempStore t(pages_of(4));
  t.store.append("w-0", ExpectedVersion::any(), make_events(10));
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) {
      t.store.append("w-" + std::to_string(i % 7), ExpectedVersion::any(), make_events(3));
    }
    done = true;
  });
  std::vector<Position> seen;
  bool intact = true;
  // Walks repeatedly while the writer runs; each walk must be gap-free and duplicate-free.
  while (!done) {
    seen.clear();
    t.store.visit_all(1, [&](const EventView& e) {
      seen.push_back(e.position);
      intact = intact && hash_matches(e);
    });
    for (std::size_t i = 0; i < seen.size(); ++i) REQUIRE(seen[i] == i + 1);
  }
  writer.join();
  CHECK(intact);
  CHECK(t.store.visit_all(1, [](const EventView&) {}) == 610);
}
