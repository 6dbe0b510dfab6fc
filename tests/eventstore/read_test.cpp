// Reads: streams forward and backward, categories, the whole log, paging and laziness.
#include <doctest/doctest.h>

#include <optional>
#include <ranges>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::TempStore;

namespace {

StoreOptions small_pages() {
  StoreOptions o = TempStore::fast_options();
  o.read_page_size = 3;  // many pages even for small logs
  return o;
}

std::vector<std::uint64_t> versions(const std::vector<RecordedEvent>& events) {
  std::vector<std::uint64_t> out;
  for (const auto& e : events) out.push_back(e.stream_version);
  return out;
}

std::vector<std::uint64_t> positions(const std::vector<RecordedEvent>& events) {
  std::vector<std::uint64_t> out;
  for (const auto& e : events) out.push_back(e.position);
  return out;
}

}  // namespace

TEST_CASE("an EventRange is a std::ranges::input_range") {
  static_assert(std::ranges::input_range<EventRange>);
  static_assert(std::input_iterator<EventRange::iterator>);
}

// A page is a short read transaction of a file, and a round trip to a server, whose latency a
// larger page spreads over more events: left unset, the page size is the backend's.
TEST_CASE("a read page size left unset is the backend's, and one given is kept") {
  TempStore unset;
  REQUIRE(unset.store.options().read_page_size.has_value());
  CHECK(*unset.store.options().read_page_size == (factum::test::testing_postgres()
                                                      ? factum::kPostgresReadPageSize
                                                      : factum::kSqliteReadPageSize));
  TempStore given(small_pages());
  CHECK(given.store.options().read_page_size == std::optional<std::size_t>(3));
  // The unset size reads a log longer than a page whole, in order.
  const std::size_t n = *unset.store.options().read_page_size + 5;
  std::vector<EventData> events = make_events(n);
  unset.store.append("s-1", ExpectedVersion::no_stream(), events);
  const auto all = unset.store.read_all().to_vector();
  REQUIRE(all.size() == n);
  CHECK(all.back().position == n);
  CHECK(all[n - 1].previous_hash == all[n - 2].hash);
}

TEST_CASE("read_stream reads forward from a version across pages") {
  TempStore t(small_pages());
  t.store.append("s-1", ExpectedVersion::any(), make_events(10));
  t.store.append("s-2", ExpectedVersion::any(), make_events(4));
  CHECK(versions(t.store.read_stream("s-1").to_vector()) ==
        std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(versions(t.store.read_stream("s-1", 8).to_vector()) ==
        std::vector<std::uint64_t>{8, 9, 10});
  CHECK(t.store.read_stream("s-1", 11).to_vector().empty());
  CHECK(t.store.read_stream("s-1", 0).to_vector().size() == 10);
}

TEST_CASE("read_stream of an unknown stream is empty") {
  TempStore t;
  CHECK(t.store.read_stream("nobody-1").to_vector().empty());
  CHECK(t.store.read_stream_backward("nobody-1").to_vector().empty());
  CHECK(t.store.stream_version("nobody-1") == 0);
}

TEST_CASE("read_stream_backward reads newest first from a version") {
  TempStore t(small_pages());
  t.store.append("s-1", ExpectedVersion::any(), make_events(7));
  CHECK(versions(t.store.read_stream_backward("s-1").to_vector()) ==
        std::vector<std::uint64_t>{7, 6, 5, 4, 3, 2, 1});
  CHECK(versions(t.store.read_stream_backward("s-1", 4).to_vector()) ==
        std::vector<std::uint64_t>{4, 3, 2, 1});
  CHECK(versions(t.store.read_stream_backward("s-1", 100).to_vector()).size() == 7);
  CHECK(versions(t.store.read_stream_backward("s-1", 1).to_vector()) ==
        std::vector<std::uint64_t>{1});
}

TEST_CASE("read_category reads every stream of a category in position order") {
  TempStore t(small_pages());
  t.store.append("account-1", ExpectedVersion::any(), make_events(2));
  t.store.append("order-1", ExpectedVersion::any(), make_events(2));
  t.store.append("account-2", ExpectedVersion::any(), make_events(3));
  t.store.append("accounting-1", ExpectedVersion::any(), make_events(1));
  t.store.append("account", ExpectedVersion::any(), make_events(1));
  t.store.append("account-1", ExpectedVersion::any(), make_events(2));
  const auto all = t.store.read_category("account").to_vector();
  CHECK(positions(all) == std::vector<std::uint64_t>{1, 2, 5, 6, 7, 9, 10, 11});
  for (const auto& e : all) CHECK(e.category() == "account");
  CHECK(positions(t.store.read_category("account", 6).to_vector()) ==
        std::vector<std::uint64_t>{6, 7, 9, 10, 11});
  CHECK(t.store.read_category("nothing").to_vector().empty());
  CHECK_THROWS_AS(t.store.read_category(""), InvalidArgument);
  CHECK_THROWS_AS(t.store.read_category("account-1"), InvalidArgument);
}

TEST_CASE("the category of a stream id is the part before the first dash") {
  CHECK(category_of("account-42") == "account");
  CHECK(category_of("account-42-x") == "account");
  CHECK(category_of("account") == "account");
  CHECK(category_of("-x").empty());
}

TEST_CASE("read_all reads the whole log from a position") {
  TempStore t(small_pages());
  for (int i = 0; i < 5; ++i)
    t.store.append("s-" + std::to_string(i), ExpectedVersion::any(), make_events(2));
  CHECK(positions(t.store.read_all().to_vector()) ==
        std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(positions(t.store.read_all(9).to_vector()) == std::vector<std::uint64_t>{9, 10});
  CHECK(t.store.read_all(11).to_vector().empty());
}

TEST_CASE("an empty store reads nothing and has head 0") {
  TempStore t;
  CHECK(t.store.read_all().to_vector().empty());
  CHECK(t.store.head_position() == 0);
  CHECK(t.store.head() == Head{});
  CHECK(t.store.verify().ok());
}

TEST_CASE("a range is lazy: events appended while walking it are seen") {
  TempStore t(small_pages());
  t.store.append("s-1", ExpectedVersion::any(), make_events(3));
  std::size_t seen = 0;
  for (const RecordedEvent& e : t.store.read_all()) {
    ++seen;
    if (e.position == 2) t.store.append("s-1", ExpectedVersion::any(), make_events(4));
  }
  CHECK(seen == 7);
}

TEST_CASE("a range keeps working after its EventStore is moved away") {
  std::optional<TempStore> t(std::in_place);
  t->store.append("s-1", ExpectedVersion::any(), make_events(5));
  EventRange range = t->store.read_all();
  EventStore moved = std::move(t->store);
  CHECK(range.to_vector().size() == 5);
}

TEST_CASE("head() returns the newest position and its hash") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_events(3));
  const auto last = t.store.read_stream_backward("s-1").to_vector().front();
  CHECK(t.store.head() == Head{3, last.hash});
}

TEST_CASE("recorded_at is the commit time in UTC microseconds") {
  TempStore t;
  const auto before =
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  const auto after =
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
  const auto e = t.store.read_all().to_vector().front();
  CHECK(e.recorded_at >= before);
  CHECK(e.recorded_at <= after);
}

TEST_CASE(
    "stream and category pages give every event its previous hash, its predecessor in the "
    "page or not") {
  // Runs of events side by side in the log (one append) and events whose predecessor belongs to
  // another stream or category; pages of 3 cut the runs. (PostgreSQL leaves the previous hash of
  // a row whose predecessor is the page's row before it to the reader: postgres/statements.cpp.)
  TempStore t(small_pages());
  t.store.append("a-1", ExpectedVersion::any(), make_events(5));
  t.store.append("b-1", ExpectedVersion::any(), make_events(2));
  t.store.append("a-1", ExpectedVersion::any(), make_events(1));
  t.store.append("a-2", ExpectedVersion::any(), make_events(4));
  t.store.append("b-1", ExpectedVersion::any(), make_events(1));
  t.store.append("a-1", ExpectedVersion::any(), make_events(7));
  const auto all = t.store.read_all().to_vector();
  REQUIRE(all.size() == 20);
  const auto hash_before = [&](const RecordedEvent& e) {
    return e.position == 1 ? Hash{} : all[e.position - 2].hash;
  };
  std::size_t read = 0;
  for (const char* stream : {"a-1", "b-1", "a-2"}) {
    for (const RecordedEvent& e : t.store.read_stream(stream)) {
      CAPTURE(e.position);
      CHECK(e.previous_hash == hash_before(e));
      CHECK(hash_matches(e));
      ++read;
    }
    for (const RecordedEvent& e : t.store.read_stream(stream, 2)) {
      CHECK(e.previous_hash == hash_before(e));
    }
    for (const RecordedEvent& e : t.store.read_stream_backward(stream)) {
      CHECK(e.previous_hash == hash_before(e));
    }
  }
  CHECK(read == all.size());
  for (const char* category : {"a", "b"}) {
    for (const RecordedEvent& e : t.store.read_category(category)) {
      CAPTURE(e.position);
      CHECK(e.previous_hash == hash_before(e));
      CHECK(hash_matches(e));
    }
    for (const RecordedEvent& e : t.store.read_category(category, 4)) {
      CHECK(e.previous_hash == hash_before(e));
    }
  }
}

// A PostgreSQL page of the whole log names its streams from a per-connection cache of stream
// names, emptied when it holds 65,536 (postgres/connection.hpp): a read of a log of more streams
// than that, by a store that knows none of them, names every event's stream — also where the
// cache fills up in the middle of a page.
TEST_CASE("a read of the whole log names the streams of a log of 70,000 streams") {
  StoreOptions o = TempStore::fast_options();
  o.read_page_size = 4096;
  TempStore t(o);
  constexpr int kStreams = 70000;
  constexpr int kPerCall = 2000;
  for (int first = 0; first < kStreams; first += kPerCall) {
    std::vector<StreamAppend> batch;
    for (int s = first; s < first + kPerCall; ++s) {
      batch.push_back({"many-" + std::to_string(s), ExpectedVersion::no_stream(), make_events(1)});
    }
    t.store.append_multi(batch);
  }
  EventStore fresh = EventStore::open(t.path, o);
  std::uint64_t seen = 0;
  std::uint64_t misnamed = 0;
  fresh.visit_all(1, [&](const EventView& v) {
    if (v.stream_id != "many-" + std::to_string(v.position - 1)) ++misnamed;
    ++seen;
  });
  CHECK(seen == kStreams);
  CHECK(misnamed == 0);
  CHECK(fresh.read_all(60000).to_vector().back().stream_id == "many-69999");
}
