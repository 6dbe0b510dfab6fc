// Durable positions: the CheckpointStore (name -> position in the store's own file, alone or
// inside the caller's transaction), and the consumer groups built on it (each stream of a
// category to exactly one of N members, each member with its own checkpoint).
// Handlers only record; assertions run on the test's thread. Label "concurrency" (TSan in CI).
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"

using namespace factum;
using namespace std::chrono_literals;
using factum::test::make_event;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

constexpr auto kTimeout = 10s;

// What a handler saw, in order (add() on the subscription's thread, reads under the lock).
class Recorder {
 public:
  Subscription::Handler handler() {
    return [this](const RecordedEvent& e) {
      std::lock_guard lock(mu_);
      events_.push_back(e);
    };
  }
  std::vector<RecordedEvent> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<RecordedEvent> events_;
};

std::vector<Position> positions_of(const std::vector<RecordedEvent>& events) {
  std::vector<Position> out;
  for (const RecordedEvent& e : events) out.push_back(e.position);
  return out;
}

// ---- consumer groups --------------------------------------------------------------------------

constexpr int kStreams = 30;
constexpr std::uint32_t kMembers = 3;

// `rounds` events to each of order-0 .. order-29, with events of another category between.
void append_orders(EventStore& store, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    for (int s = 0; s < kStreams; ++s) {
      store.append("order-" + std::to_string(s), ExpectedVersion::any(), make_event());
      if (s % 7 == 0)
        store.append("noise-" + std::to_string(s), ExpectedVersion::any(), make_event());
    }
  }
}

ConsumerGroupOptions shippers() {
  return {.group = "shippers",
          .category = "order",
          .members = kMembers,
          .batch_size = 16,
          .poll_interval = 0ms};
}

Position last_order_position(const EventStore& store) {
  return store.read_category("order").to_vector().back().position;
}

// Starts the group's members, each recording into its own Recorder.
std::vector<Subscription> start_members(EventStore& store, std::array<Recorder, kMembers>& seen) {
  std::vector<Subscription> members;
  for (std::uint32_t i = 0; i < kMembers; ++i)
    members.push_back(join_group(store, shippers(), i, seen[i].handler()));
  return members;
}

void wait_all_then_stop(std::vector<Subscription>& members, Position p) {
  for (Subscription& m : members) CHECK(m.wait_for(p, kTimeout));
  for (Subscription& m : members) m.stop();
}

// Every event the members saw went to its stream's member, once overall, each stream in order
// from `first_version`; returns the positions seen, sorted.
std::vector<Position> check_partitioned(const std::array<Recorder, kMembers>& seen,
                                        StreamVersion first_version = 1) {
  std::set<Position> all;
  for (std::uint32_t i = 0; i < kMembers; ++i) {
    CAPTURE(i);
    std::map<std::string, StreamVersion> last_version;
    const auto events = seen[i].events();
    CHECK_FALSE(events.empty());  // 30 stream names spread over every member
    for (const RecordedEvent& e : events) {
      CAPTURE(e.stream_id);
      CHECK(e.category() == "order");
      CHECK(group_member_for(e.stream_id, kMembers) == i);
      CHECK(all.insert(e.position).second);  // no event twice, to one member or two
      const auto it = last_version.try_emplace(e.stream_id, first_version - 1).first;
      CHECK(e.stream_version == it->second + 1);  // the stream's order, nothing skipped
      it->second = e.stream_version;
    }
  }
  return {all.begin(), all.end()};
}

}  // namespace

TEST_CASE("a consumer group gives each stream to one member and every event to exactly one") {
  TempStore t;
  append_orders(t.store, 4);  // history
  std::array<Recorder, kMembers> seen;
  auto members = start_members(t.store, seen);
  append_orders(t.store, 6);  // live, while the members catch up
  wait_all_then_stop(members, last_order_position(t.store));
  const auto orders = t.store.read_category("order").to_vector();
  REQUIRE(orders.size() == 10u * kStreams);
  CHECK(check_partitioned(seen) == positions_of(orders));
}

TEST_CASE("each group member keeps its own checkpoint and resumes from it") {
  TempStore t;
  append_orders(t.store, 3);
  {
    std::array<Recorder, kMembers> seen;
    auto members = start_members(t.store, seen);
    wait_all_then_stop(members, last_order_position(t.store));
  }
  const Position first_run_end = last_order_position(t.store);
  CheckpointStore checkpoints(t.store);
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < kMembers; ++i) {
    names.push_back(group_checkpoint_name(shippers(), i));
    CHECK(checkpoints.load(names.back()) == first_run_end);
  }
  std::vector<std::string> listed;
  for (const Checkpoint& c : checkpoints.list()) listed.push_back(c.name);
  CHECK(listed == names);

  append_orders(t.store, 2);
  std::array<Recorder, kMembers> seen;
  auto members = start_members(t.store, seen);
  wait_all_then_stop(members, last_order_position(t.store));
  std::vector<Position> want;
  for (const RecordedEvent& e : t.store.read_category("order", first_run_end + 1))
    want.push_back(e.position);
  CHECK(want.size() == 2u * kStreams);
  CHECK(check_partitioned(seen, 4) == want);  // nothing from the first run again
  for (const std::string& name : names) CHECK(checkpoints.load(name) == want.back());
}

TEST_CASE("join_group refuses no members, an index past the last, and empty names") {
  TempStore t;
  const auto noop = [](const RecordedEvent&) {};
  ConsumerGroupOptions options = shippers();
  CHECK_THROWS_AS(join_group(t.store, options, kMembers, noop), InvalidArgument);
  options.members = 0;
  CHECK_THROWS_AS(join_group(t.store, options, 0, noop), InvalidArgument);
  options = shippers();
  options.group = "";
  CHECK_THROWS_AS(join_group(t.store, options, 0, noop), InvalidArgument);
  options = shippers();
  options.category = "";
  CHECK_THROWS_AS(join_group(t.store, options, 0, noop), InvalidArgument);
  CHECK_THROWS_AS(join_group(t.store, shippers(), 0, Subscription::Handler{}), InvalidArgument);
  CHECK(t.store.on_appended().empty());
  CHECK(CheckpointStore(t.store).list().empty());
}

TEST_CASE("stable_hash is FNV-1a 64 of the bytes") {
  CHECK(stable_hash("") == 0xcbf29ce484222325ULL);
  CHECK(stable_hash("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(stable_hash("foobar") == 0x85944171f73967e8ULL);
  CHECK(stable_hash("order-7") == 0xdee47a9f34bede3bULL);
  CHECK(stable_hash(std::string_view("\xff", 1)) ==
        ((0xcbf29ce484222325ULL ^ 0xffULL) * 0x100000001b3ULL));
}

TEST_CASE("group_member_for is the stream's stable hash modulo the member count") {
  std::set<std::uint32_t> used;
  for (int s = 0; s < kStreams; ++s) {
    const std::string stream = "order-" + std::to_string(s);
    CHECK(group_member_for(stream, kMembers) == stable_hash(stream) % kMembers);
    CHECK(group_member_for(stream, 1) == 0);
    used.insert(group_member_for(stream, kMembers));
  }
  const std::set<std::uint32_t> every_member{0, 1, 2};
  CHECK(used == every_member);
  CHECK(group_member_for("order-7", 0) == 0);  // no members: no division by zero
}

TEST_CASE("a member's checkpoint name holds the group, its index and the group's size") {
  ConsumerGroupOptions options{.group = "mailers", .category = "order", .members = 4};
  CHECK(group_checkpoint_name(options, 2) == "group:mailers/2of4");
}

// ---- CheckpointStore --------------------------------------------------------------------------

TEST_CASE("a checkpoint never saved loads as 0") {
  TempStore t;
  CheckpointStore checkpoints(t.store);
  CHECK(checkpoints.load("unknown") == 0);
  CHECK(checkpoints.list().empty());
}

TEST_CASE("save then load returns the saved position, a later save replaces it") {
  TempStore t;
  CheckpointStore checkpoints(t.store);
  checkpoints.save("a", 42);
  checkpoints.save("b", 7);
  CHECK(checkpoints.load("a") == 42);
  CHECK(checkpoints.load("b") == 7);
  checkpoints.save("a", 3);  // a reset to an earlier position is kept as given
  CHECK(checkpoints.load("a") == 3);
  checkpoints.save("a", 0);
  CHECK(checkpoints.load("a") == 0);
}

TEST_CASE("a saved checkpoint survives closing and reopening the store") {
  TempDir dir;
  const auto path = test::temp_store_location(dir);
  {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    CheckpointStore(store).save("durable", 123456789012ULL);
  }
  EventStore store = EventStore::open(path, TempStore::fast_options());
  CHECK(CheckpointStore(store).load("durable") == 123456789012ULL);
}

TEST_CASE("remove deletes a checkpoint and tells whether there was one") {
  TempStore t;
  CheckpointStore checkpoints(t.store);
  checkpoints.save("gone", 5);
  checkpoints.save("kept", 6);
  CHECK(checkpoints.remove("gone"));
  CHECK_FALSE(checkpoints.remove("gone"));
  CHECK_FALSE(checkpoints.remove("never"));
  CHECK(checkpoints.load("gone") == 0);
  CHECK(checkpoints.load("kept") == 6);
}

TEST_CASE("list returns every checkpoint by name, with its position and when it was saved") {
  TempStore t;
  CheckpointStore checkpoints(t.store);
  const auto before = std::chrono::floor<std::chrono::microseconds>(
      std::chrono::system_clock::now() - std::chrono::minutes(1));
  checkpoints.save("zeta", 1);
  checkpoints.save("alpha", 2);
  checkpoints.save("mid", 3);
  const auto after = std::chrono::floor<std::chrono::microseconds>(
      std::chrono::system_clock::now() + std::chrono::minutes(1));
  const auto list = checkpoints.list();
  REQUIRE(list.size() == 3);
  CHECK(list[0].name == "alpha");
  CHECK(list[0].position == 2);
  CHECK(list[1].name == "mid");
  CHECK(list[1].position == 3);
  CHECK(list[2].name == "zeta");
  CHECK(list[2].position == 1);
  for (const Checkpoint& c : list) {
    CHECK(c.updated_at >= before);
    CHECK(c.updated_at <= after);
  }
}

TEST_CASE("the Sql& overloads commit with the caller's write_sql transaction") {
  TempStore t;
  t.store.write_sql([](Sql& sql) {
    CheckpointStore::create_table(sql);
    CheckpointStore::save(sql, "inline", 9);
    CHECK(CheckpointStore::load(sql, "inline") == 9);  // seen inside the transaction
    sql.execute("CREATE TABLE model (k INTEGER)");
    sql.execute("INSERT INTO model VALUES (1)");
  });
  CheckpointStore checkpoints(t.store);
  CHECK(checkpoints.load("inline") == 9);
  t.store.write_sql([](Sql& sql) { CHECK(CheckpointStore::remove(sql, "inline")); });
  CHECK(checkpoints.load("inline") == 0);
}

TEST_CASE("the Sql& overloads roll back with the caller's write_sql transaction") {
  TempStore t;
  CheckpointStore checkpoints(t.store);
  checkpoints.save("moved", 3);
  checkpoints.save("removed", 4);
  CHECK_THROWS_WITH_AS(t.store.write_sql([](Sql& sql) {
    CheckpointStore::save(sql, "moved", 9);
    CHECK(CheckpointStore::remove(sql, "removed"));
    CheckpointStore::save(sql, "added", 1);
    throw std::runtime_error("read model failed");
  }),
                       "read model failed", std::runtime_error);
  CHECK(checkpoints.load("moved") == 3);
  CHECK(checkpoints.load("removed") == 4);
  CHECK(checkpoints.load("added") == 0);
}

TEST_CASE("a checkpoint saved by an on_appending slot commits with the append, or not at all") {
  TempStore t;
  CheckpointStore checkpoints(t.store);
  bool fail = false;
  boost::signals2::scoped_connection slot =
      t.store.on_appending().connect([&](AppendTransaction& tx) {
        CheckpointStore::save(tx.sql(), "inline", tx.events().back().position);
        if (fail) throw std::runtime_error("slot failed");
      });
  t.store.append("s-1", ExpectedVersion::any(), test::make_events(3));
  CHECK(checkpoints.load("inline") == 3);
  fail = true;
  CHECK_THROWS_AS(t.store.append("s-1", ExpectedVersion::any(), make_event()), std::runtime_error);
  CHECK(checkpoints.load("inline") == 3);
  CHECK(t.store.head_position() == 3);
}

TEST_CASE("an empty checkpoint name is refused by every call") {
  TempStore t;
  CheckpointStore checkpoints(t.store);
  CHECK_THROWS_AS(checkpoints.load(""), InvalidArgument);
  CHECK_THROWS_AS(checkpoints.save("", 1), InvalidArgument);
  CHECK_THROWS_AS(checkpoints.remove(""), InvalidArgument);
  t.store.write_sql([](Sql& sql) {
    CHECK_THROWS_AS(CheckpointStore::load(sql, ""), InvalidArgument);
    CHECK_THROWS_AS(CheckpointStore::save(sql, "", 1), InvalidArgument);
    CHECK_THROWS_AS(CheckpointStore::remove(sql, ""), InvalidArgument);
  });
  CHECK(checkpoints.list().empty());
}

TEST_CASE("a read-only store reads checkpoints and refuses to change them") {
  TempDir dir;
  const auto path = test::temp_store_location(dir);
  {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    CheckpointStore(store).save("a", 4);
  }
  StoreOptions read_only = TempStore::fast_options();
  read_only.read_only = true;
  EventStore store = EventStore::open(path, read_only);
  CheckpointStore checkpoints(store);
  CHECK(checkpoints.load("a") == 4);
  CHECK(checkpoints.load("b") == 0);
  REQUIRE(checkpoints.list().size() == 1);
  CHECK(checkpoints.list().front().position == 4);
  try {
    checkpoints.save("a", 5);
    FAIL("save on a read-only store did not throw");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::read_only);
  }
  CHECK_THROWS_AS(checkpoints.remove("a"), StorageError);
  CHECK(checkpoints.load("a") == 4);
}

TEST_CASE("a read-only store without the checkpoint table reads no checkpoints and adds none") {
  TempDir dir;
  const auto path = test::temp_store_location(dir);
  {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    store.append("s-1", ExpectedVersion::any(), make_event());
  }
  StoreOptions read_only = TempStore::fast_options();
  read_only.read_only = true;
  EventStore store = EventStore::open(path, read_only);
  CheckpointStore checkpoints(store);
  CHECK(checkpoints.load("any") == 0);
  CHECK(checkpoints.list().empty());
  store.read_sql([](Sql& sql) { CHECK(sql.object_type("factum_checkpoints").empty()); });
}

TEST_CASE("a checkpoint saved through one EventStore is loaded through another on the file") {
  TempDir dir;
  const auto path = test::temp_store_location(dir);
  EventStore writer = EventStore::open(path, TempStore::fast_options());
  EventStore reader = EventStore::open(path, TempStore::fast_options());
  CheckpointStore mine(writer);
  CheckpointStore theirs(reader);
  CHECK(theirs.load("shared") == 0);
  mine.save("shared", 11);
  CHECK(theirs.load("shared") == 11);
  mine.save("shared", 12);
  CHECK(theirs.load("shared") == 12);
}

TEST_CASE("checkpoints saved from many threads at once are all kept") {
  TempStore t;
  CheckpointStore checkpoints(t.store);
  constexpr int kThreads = 4;
  constexpr int kSaves = 50;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&checkpoints, i] {
      for (int n = 1; n <= kSaves; ++n)
        checkpoints.save("worker-" + std::to_string(i), static_cast<Position>(n * (i + 1)));
    });
  }
  for (std::thread& th : threads) th.join();
  const auto list = checkpoints.list();
  REQUIRE(list.size() == kThreads);
  for (int i = 0; i < kThreads; ++i) {
    CHECK(list[static_cast<std::size_t>(i)].name == "worker-" + std::to_string(i));
    CHECK(list[static_cast<std::size_t>(i)].position == static_cast<Position>(kSaves * (i + 1)));
  }
}
