// The checked walk (eventstore/src/walk_check.hpp): a read never hands out history with a hole in
// it. Events deleted behind the library's back (triggers dropped first) make every read that
// meets the hole throw CorruptStoreError naming the missing position, or the stream and its
// missing version, before the caller sees anything after it. Runs on both backends: the
// deletions go through write_sql, in each backend's own SQL.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

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
