// The checked walk (eventstore/src/walk_check.hpp): a read never hands out history with a hole in
// it. Events deleted behind the library's back (triggers dropped first) make every read that
// meets the hole throw CorruptStoreError naming the missing position, or the stream and its
// missing version, before the caller sees anything after it. Runs on both backends: the
// deletions go through write_sql, in each backend's own SQL.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_events;
using factum::test::TempStore;

namespace {

StoreOptions small_pages() {
  StoreOptions o = TempStore::fast_options();
  o.read_page_size = 2;  // holes at page boundaries too
  return o;
}

// Deletes the events at `positions` as someone with the database's tools would: the triggers
// that refuse it dropped first.
void delete_events(EventStore& store, std::initializer_list<Position> positions) {
  store.write_sql([&](Sql& sql) {
    if (sql.dialect() == SqlDialect::postgres) {
      sql.execute("DROP TRIGGER IF EXISTS events_are_immutable ON events");
    } else {
      sql.execute("DROP TRIGGER IF EXISTS events_are_permanent");
    }
    for (const Position p : positions) {
      sql.execute("DELETE FROM events WHERE position = ?1", {static_cast<std::int64_t>(p)});
    }
  });
}

// Positions 1-3: a-1 v1, b-1 v1, a-1 v2; 4-6: a-1 v3, b-1 v2, a-1 v4.
void write_two_streams(EventStore& store) {
  for (int round = 0; round < 2; ++round) {
    store.append("a-1", ExpectedVersion::any(), make_events(1));
    store.append("b-1", ExpectedVersion::any(), make_events(1));
    store.append("a-1", ExpectedVersion::any(), make_events(1));
  }
}

template <class Read>
CorruptStoreError hole_error(Read&& read) {
  try {
    read();
  } catch (const CorruptStoreError& e) {
    return e;
  }
  FAIL("the read did not throw CorruptStoreError");
  return CorruptStoreError(0, {}, 0, "");
}

}  // namespace

TEST_CASE("a stream read throws CorruptStoreError naming the stream and its missing version") {
  TempStore t(small_pages());
  write_two_streams(t.store);
  delete_events(t.store, {3});  // a-1 v2
  const CorruptStoreError e = hole_error([&] { t.store.read_stream("a-1").to_vector(); });
  CHECK(e.stream() == "a-1");
  CHECK(e.stream_version() == 2);
  CHECK(std::string(e.what()).find("'a-1' is missing version 2") != std::string::npos);
  // The other stream has no hole.
  CHECK(t.store.read_stream("b-1").to_vector().size() == 2);
}

TEST_CASE("a visiting stream read sees no event after the hole") {
  TempStore t(small_pages());
  write_two_streams(t.store);
  delete_events(t.store, {3});
  std::vector<StreamVersion> seen;
  const CorruptStoreError e = hole_error([&] {
    t.store.visit_stream("a-1", 1, [&](const EventView& v) { seen.push_back(v.stream_version); });
  });
  CHECK(e.stream_version() == 2);
  CHECK(seen == std::vector<StreamVersion>{1});
}

TEST_CASE("a stream read from a later version finds the hole right at its start") {
  // As an aggregate's load does after a snapshot at version 1.
  TempStore t(small_pages());
  write_two_streams(t.store);
  delete_events(t.store, {3});
  CHECK(hole_error([&] { t.store.read_stream("a-1", 2).to_vector(); }).stream_version() == 2);
  CHECK(t.store.read_stream("a-1", 3).to_vector().size() == 2);  // after the hole: intact
}

TEST_CASE("a backward stream read that does not reach version 1 names the missing version") {
  TempStore t(small_pages());
  write_two_streams(t.store);
  delete_events(t.store, {1});  // a-1 v1
  const CorruptStoreError e = hole_error([&] { t.store.read_stream_backward("a-1").to_vector(); });
  CHECK(e.stream() == "a-1");
  CHECK(e.stream_version() == 1);
  delete_events(t.store, {4});  // a-1 v3, between v4 and v2
  CHECK(hole_error([&] { t.store.read_stream_backward("a-1").to_vector(); }).stream_version() == 3);
}

TEST_CASE("a category read names the stream whose version is missing") {
  TempStore t(small_pages());
  write_two_streams(t.store);
  t.store.append("a-2", ExpectedVersion::any(), make_events(2));
  delete_events(t.store, {4});  // a-1 v3: category a is damaged, category b is not
  CHECK(t.store.read_category("b").to_vector().size() == 2);
  const CorruptStoreError e = hole_error([&] { t.store.read_category("a").to_vector(); });
  CHECK(e.stream() == "a-1");
  CHECK(e.stream_version() == 3);
}

TEST_CASE("a category read from the log's start finds a stream's missing first event") {
  TempStore t(small_pages());
  write_two_streams(t.store);
  delete_events(t.store, {2});  // b-1 v1
  CHECK(hole_error([&] { t.store.read_category("b").to_vector(); }).stream_version() == 1);
}

TEST_CASE("a read of the log throws CorruptStoreError naming the first missing position") {
  TempStore t(small_pages());
  write_two_streams(t.store);
  delete_events(t.store, {3, 4});
  const CorruptStoreError e = hole_error([&] { t.store.read_all().to_vector(); });
  CHECK(e.position() == 3);
  CHECK(e.stream().empty());
  CHECK(std::string(e.what()).find("positions 3 to 4 are missing") != std::string::npos);
  // From a position after the hole, the log is whole; from one inside it, it is not.
  CHECK(t.store.read_all(5).to_vector().size() == 2);
  CHECK(hole_error([&] { t.store.read_all(4).to_vector(); }).position() == 4);
}

TEST_CASE("a visiting read of the log sees no event after the hole") {
  TempStore t(small_pages());
  write_two_streams(t.store);
  delete_events(t.store, {4});
  std::vector<Position> seen;
  CHECK(hole_error([&] {
          t.store.visit_all(1, [&](const EventView& v) { seen.push_back(v.position); });
        }).position() == 4);
  CHECK(seen == std::vector<Position>{1, 2, 3});
}

TEST_CASE("a read of the log finds events removed from its end") {
  // The store's high-water mark of positions stays at 6 (verify reports `truncated`).
  TempStore t(small_pages());
  write_two_streams(t.store);
  delete_events(t.store, {5, 6});
  REQUIRE(t.store.verify().problem == VerifyResult::Problem::truncated);
  const CorruptStoreError e = hole_error([&] { t.store.read_all().to_vector(); });
  CHECK(e.position() == 5);
  CHECK(std::string(e.what()).find("positions up to 6 were written") != std::string::npos);
  std::uint64_t visited = 0;
  CHECK(hole_error([&] {
          t.store.visit_all(1, [&](const EventView&) { ++visited; });
        }).position() == 5);
  CHECK(visited == 4);
  // A category read that reaches the end of the log says so too.
  CHECK(hole_error([&] { t.store.read_category("a").to_vector(); }).position() == 5);
  // A read that stops before the end does not reach the check.
  std::uint64_t first_three = 0;
  t.store.visit_all(1, [&](const EventView& v) {
    ++first_three;
    return v.position < 3;
  });
  CHECK(first_three == 3);
}

TEST_CASE("events appended while the log is read to its end are never taken for a hole") {
  TempStore t(small_pages());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) t.store.append("w-1", ExpectedVersion::any(), make_events(3));
    done = true;
  });
  std::uint64_t reads = 0;
  while (!done) {
    CHECK_NOTHROW(t.store.read_all().to_vector());
    CHECK_NOTHROW(t.store.read_stream("w-1").to_vector());
    ++reads;
  }
  writer.join();
  CHECK(reads > 0);
  CHECK(t.store.read_all().to_vector().size() == 600);
}

// Pages of thousands of events (PostgreSQL's default, 4,096): PostgreSQL reads a page of the
// log or of a stream that follows a full page in parts sent at once and walked as they arrive
// (postgres/reader.hpp, ReadAhead); a part whose rows are not the next ones makes the rest of
// the page one statement. The same reads on SQLite, with the same page size.
namespace {

StoreOptions large_pages() {
  StoreOptions o = TempStore::fast_options();
  o.read_page_size = 4096;
  return o;
}

// 10,000 events: 100 streams (s-0 ... s-99) of 100 events, each stream's events together.
void write_10000(EventStore& store) {
  for (int s = 0; s < 100; ++s) {
    store.append("s-" + std::to_string(s), ExpectedVersion::no_stream(), make_events(100));
  }
}

// One stream of 10,000 events.
void write_long_stream(EventStore& store) {
  for (int i = 0; i < 100; ++i) store.append("long-1", ExpectedVersion::any(), make_events(100));
}

// Holes inside a part, at the first and last rows of parts and of pages, in the first page
// (one statement) and in the pages read in parts.
const Position kHoles[] = {1500, 4096, 4097, 5120, 5121, 5596, 6144, 8192, 8193, 9999};

}  // namespace

TEST_CASE("a read of the log in large pages hands out every event once, in order, chained") {
  TempStore t(large_pages());
  write_10000(t.store);
  // A store opened afresh: its connection knows no stream yet, and meets new streams in every
  // part of a page.
  EventStore fresh = EventStore::open(t.path, large_pages());
  // Each event's hash, by position, read in pages of 2 (one statement each).
  std::vector<Hash> hashes{Hash{}};
  {
    StoreOptions small = large_pages();
    small.read_page_size = 2;
    EventStore paged = EventStore::open(t.path, small);
    for (const RecordedEvent& e : paged.read_all()) hashes.push_back(e.hash);
  }
  REQUIRE(hashes.size() == 10001);
  for (const Position from : {Position{1}, Position{2}, Position{1500}, Position{4097}}) {
    CAPTURE(from);
    const std::vector<RecordedEvent> all = fresh.read_all(from).to_vector();
    REQUIRE(all.size() == 10000 - (from - 1));
    Hash previous = hashes[from - 1];
    for (std::size_t i = 0; i < all.size(); ++i) {
      const RecordedEvent& e = all[i];
      REQUIRE(e.position == from + i);
      CHECK(e.stream_id == "s-" + std::to_string((e.position - 1) / 100));
      CHECK(e.stream_version == (e.position - 1) % 100 + 1);
      CHECK(e.previous_hash == previous);
      previous = e.hash;
    }
  }
}

TEST_CASE("a read of a stream in large pages hands out every version once, in order") {
  TempStore t(large_pages());
  write_long_stream(t.store);
  t.store.append("other-1", ExpectedVersion::any(), make_events(3));
  EventStore fresh = EventStore::open(t.path, large_pages());
  for (const StreamVersion from : {StreamVersion{1}, StreamVersion{1500}, StreamVersion{4097}}) {
    CAPTURE(from);
    const std::vector<RecordedEvent> events = fresh.read_stream("long-1", from).to_vector();
    REQUIRE(events.size() == 10000 - (from - 1));
    for (std::size_t i = 0; i < events.size(); ++i) {
      REQUIRE(events[i].stream_version == from + i);
      CHECK(events[i].position == from + i);
      CHECK(events[i].stream_id == "long-1");
      if (i > 0) CHECK(events[i].previous_hash == events[i - 1].hash);
    }
  }
}

TEST_CASE("a read of the log in large pages names a hole wherever it falls in a page") {
  for (const Position hole : kHoles) {
    CAPTURE(hole);
    TempStore t(large_pages());
    write_10000(t.store);
    delete_events(t.store, {hole});
    CHECK(hole_error([&] { t.store.read_all().to_vector(); }).position() == hole);
    std::uint64_t seen = 0;
    Position last = 0;
    CHECK(hole_error([&] {
            t.store.visit_all(1, [&](const EventView& v) {
              ++seen;
              last = v.position;
            });
          }).position() == hole);
    CHECK(seen == hole - 1);
    CHECK(last == hole - 1);
    // From after the hole the log is whole.
    CHECK(t.store.read_all(hole + 1).to_vector().size() == 10000 - hole);
  }
}

TEST_CASE("a read of a stream in large pages names a hole wherever it falls in a page") {
  for (const StreamVersion hole : kHoles) {
    CAPTURE(hole);
    TempStore t(large_pages());
    write_long_stream(t.store);
    delete_events(t.store, {hole});  // position and version alike
    const CorruptStoreError e = hole_error([&] { t.store.read_stream("long-1").to_vector(); });
    CHECK(e.stream() == "long-1");
    CHECK(e.stream_version() == hole);
    std::uint64_t seen = 0;
    CHECK(hole_error([&] {
            t.store.visit_stream("long-1", 1, [&](const EventView&) { ++seen; });
          }).stream_version() == hole);
    CHECK(seen == hole - 1);
    CHECK(t.store.read_stream("long-1", hole + 1).to_vector().size() == 10000 - hole);
  }
}

TEST_CASE("a read in large pages stopped inside a page leaves the store usable") {
  TempStore t(large_pages());
  write_long_stream(t.store);
  // In the first page (one statement), at its end, in the parts of the second page: the
  // first, the second, the last.
  for (const Position stop : {Position{10}, Position{4096}, Position{4500}, Position{6000},
                              Position{7596}, Position{8192}}) {
    CAPTURE(stop);
    std::uint64_t seen = 0;
    t.store.visit_all(1, [&](const EventView& v) {
      ++seen;
      return v.position < stop;
    });
    CHECK(seen == stop);
    seen = 0;
    t.store.visit_stream("long-1", 1, [&](const EventView& v) {
      ++seen;
      return v.stream_version < stop;
    });
    CHECK(seen == stop);
    // The same connections read and write on.
    CHECK(t.store.read_all().to_vector().size() == 10000);
    CHECK(t.store.read_stream("long-1").to_vector().size() == 10000);
  }
  // A visitor that throws inside a part.
  struct Thrown {};
  for (const Position at : {Position{4500}, Position{7596}}) {
    CAPTURE(at);
    CHECK_THROWS_AS(t.store.visit_all(1,
                                      [&](const EventView& v) {
                                        if (v.position == at) throw Thrown{};
                                      }),
                    Thrown);
    CHECK_THROWS_AS(t.store.visit_stream("long-1", 1,
                                         [&](const EventView& v) {
                                           if (v.stream_version == at) throw Thrown{};
                                         }),
                    Thrown);
    CHECK(t.store.read_all().to_vector().size() == 10000);
  }
  t.store.append("long-1", ExpectedVersion::exact(10000), make_events(1));
  CHECK(t.store.read_all().to_vector().size() == 10001);
}

TEST_CASE("events appended while the log is read in large pages are never taken for a hole") {
  TempStore t(large_pages());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 160; ++i) t.store.append("w-1", ExpectedVersion::any(), make_events(100));
    done = true;
  });
  std::uint64_t reads = 0;
  std::size_t longest = 0;
  std::size_t longest_stream = 0;
  while (!done) {
    std::vector<RecordedEvent> all;
    CHECK_NOTHROW(all = t.store.read_all().to_vector());
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].position != i + 1) {
        FAIL_CHECK("position " << all[i].position << " at index " << i);
        break;
      }
    }
    CHECK(all.size() >= longest);  // a later read sees at least what an earlier one saw
    longest = std::max(longest, all.size());
    std::vector<RecordedEvent> stream;
    CHECK_NOTHROW(stream = t.store.read_stream("w-1").to_vector());
    for (std::size_t i = 0; i < stream.size(); ++i) {
      if (stream[i].stream_version != i + 1) {
        FAIL_CHECK("version " << stream[i].stream_version << " at index " << i);
        break;
      }
    }
    CHECK(stream.size() >= longest_stream);
    longest_stream = std::max(longest_stream, stream.size());
    ++reads;
  }
  writer.join();
  CHECK(reads > 0);
  CHECK(t.store.read_all().to_vector().size() == 16000);
  CHECK(t.store.read_stream("w-1").to_vector().size() == 16000);
}
