// factum::kafka::Ingest against librdkafka's mock cluster: records appended to the streams their
// keys map to, with their offsets stored; no duplicate when records are read again from an
// earlier offset; the ids of records the relay wrote kept; a failed record read again; ingests of
// one name in a consumer group sharing the partitions, and taking over from one that closes or
// stalls, each record stored once.
#include <doctest/doctest.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "factum/kafka/headers.hpp"
#include "factum/kafka/ingest.hpp"
#include "factum/kafka/relay.hpp"
#include "mock_cluster.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::kafka::Ingest;
using factum::kafka::IngestOptions;
using factum::test::MockCluster;
using factum::test::produce_all;
using factum::test::RecordToProduce;
using factum::test::TempStore;

namespace {

constexpr const char* kTopic = "payments";

IngestOptions ingest_options(const MockCluster& cluster, const std::string& name = "in") {
  IngestOptions options;
  options.name = name;
  options.topic = kTopic;
  options.kafka = {{"bootstrap.servers", cluster.bootstrap_servers()}};
  options.stream_for_key = [](std::string_view key) { return "payment-" + std::string(key); };
  return options;
}

// Records with keys k0, k1, k2, k0, ... and values v0, v1, ...
std::vector<RecordToProduce> records(int count) {
  std::vector<RecordToProduce> out;
  for (int i = 0; i < count; ++i) {
    // Appended rather than "k" + to_string(...): GCC 12's -Wrestrict misfires on that at -O3.
    RecordToProduce r;
    r.key = "k";
    r.key += std::to_string(i % 3);
    r.value = "v";
    r.value += std::to_string(i);
    out.push_back(std::move(r));
  }
  return out;
}

// Polls until `count` records were handled (or 20 s passed); returns how many were.
std::size_t poll_until(Ingest& ingest, std::size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::size_t handled = 0;
  while (handled < count && std::chrono::steady_clock::now() < deadline) {
    handled += ingest.poll_once();
  }
  return handled;
}

std::set<std::string> ids_of(const EventStore& store) {
  std::set<std::string> out;
  for (const RecordedEvent& e : store.read_all()) out.insert(e.id.to_string());
  return out;
}

}  // namespace

TEST_CASE("ingest appends each record to the stream of its key and stores the next offset") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 2);
  produce_all(cluster.bootstrap_servers(), kTopic, records(9));
  TempStore t;
  Ingest ingest(t.store, ingest_options(cluster));
  CHECK(poll_until(ingest, 9) == 9);
  CHECK(t.store.head_position() == 9);
  for (int k = 0; k < 3; ++k) {
    std::vector<std::string> values;
    for (const RecordedEvent& e : t.store.read_stream("payment-k" + std::to_string(k))) {
      CHECK(e.type == "kafka.Record");
      CHECK(e.metadata.values.at("kafka.topic") == kTopic);
      values.push_back(to_string(e.payload));
    }
    // One key lands in one partition: its records keep their order.
    CHECK(values == std::vector<std::string>{"v" + std::to_string(k), "v" + std::to_string(k + 3),
                                             "v" + std::to_string(k + 6)});
  }
  std::int64_t stored = 0;
  for (const auto& [partition, next] : ingest.offsets()) stored += next;
  CHECK(stored == 9);  // each partition's next offset is its record count
}

TEST_CASE("reading records again from an earlier offset appends no duplicate") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  produce_all(cluster.bootstrap_servers(), kTopic, records(10));
  TempStore t;
  {
    Ingest ingest(t.store, ingest_options(cluster));
    REQUIRE(poll_until(ingest, 10) == 10);
  }
  const auto before = ids_of(t.store);
  REQUIRE(before.size() == 10);

  // As if a crash or a rebalance had lost the newest offsets: back to offset 3.
  t.store.write_sql([](Sql& sql) {
    sql.execute("UPDATE factum_kafka_offsets SET next_offset = 3 WHERE name = 'in'");
  });
  {
    Ingest again(t.store, ingest_options(cluster));
    CHECK(again.offsets().at(0) == 3);
    CHECK(poll_until(again, 7) == 7);
    CHECK(again.offsets().at(0) == 10);
  }
  // Another ingest name starts at the beginning of the topic.
  {
    Ingest other(t.store, ingest_options(cluster, "other"));
    CHECK(poll_until(other, 10) == 10);
  }
  CHECK(t.store.head_position() == 10);
  CHECK(ids_of(t.store) == before);
}

TEST_CASE("a record's offset commits in the same transaction as its event") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  produce_all(cluster.bootstrap_servers(), kTopic, records(4));
  TempStore t;
  Ingest ingest(t.store, ingest_options(cluster));
  // on_appended runs after the commit and before append returns: an offset written by a later
  // transaction of its own would not be visible yet. Records may share a transaction (an
  // append_multi); each commit must carry the offset just past its last record.
  std::vector<std::int64_t> seen;       // the stored next offset when each commit was seen
  std::vector<std::int64_t> committed;  // how many events were committed by then
  std::int64_t events = 0;
  boost::signals2::scoped_connection c =
      t.store.on_appended().connect([&](const std::vector<RecordedEvent>& appended) {
        events += static_cast<std::int64_t>(appended.size());
        committed.push_back(events);
        t.store.read_sql([&](Sql& sql) {
          seen.push_back(sql.query_integer("SELECT next_offset FROM factum_kafka_offsets "
                                           "WHERE name = 'in' AND kafka_partition = 0")
                             .value_or(-1));
        });
      });
  CHECK(poll_until(ingest, 4) == 4);
  CHECK(events == 4);
  CHECK(seen == committed);
}

TEST_CASE("records polled together are appended in one transaction with their offsets") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 2);
  produce_all(cluster.bootstrap_servers(), kTopic, records(40));
  TempStore t;
  IngestOptions options = ingest_options(cluster);
  options.poll_timeout = std::chrono::milliseconds(2000);
  Ingest ingest(t.store, options);
  std::size_t commits = 0;
  boost::signals2::scoped_connection c =
      t.store.on_appended().connect([&](const std::vector<RecordedEvent>&) { ++commits; });
  CHECK(poll_until(ingest, 40) == 40);
  CHECK(t.store.head_position() == 40);
  // One transaction per record would make 40 commits; batches make a few.
  CHECK(commits < 20);
  std::int64_t stored = 0;
  for (const auto& [partition, next] : ingest.offsets()) stored += next;
  CHECK(stored == 40);
}

TEST_CASE("end_offsets gives the end of every partition, and the lag is end minus stored") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 2);
  produce_all(cluster.bootstrap_servers(), kTopic, records(9));
  TempStore t;
  Ingest ingest(t.store, ingest_options(cluster));
  const auto ends = ingest.end_offsets();
  REQUIRE(ends.size() == 2);
  CHECK(ends.at(0) + ends.at(1) == 9);
  CHECK(poll_until(ingest, 9) == 9);
  const auto stored = ingest.offsets();
  for (const auto& [partition, end] : ends) {
    CAPTURE(partition);
    // A partition without records (the keys may all hash to one) has no stored offset.
    CHECK((stored.contains(partition) ? stored.at(partition) : 0) == end);
  }
}

TEST_CASE("records the relay published keep their event ids, types and order when ingested") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  TempStore source;
  for (int i = 0; i < 6; ++i) {
    EventData e = test::make_event("bank.Deposited", std::to_string(i));
    e.schema_version = 2;
    source.store.append("account-" + std::to_string(i % 2), ExpectedVersion::any(), e);
  }
  kafka::RelayOptions relay_options;
  relay_options.name = "out";
  relay_options.topic = kTopic;
  relay_options.kafka = {{"bootstrap.servers", cluster.bootstrap_servers()}};
  kafka::Relay relay(source.store, relay_options);
  REQUIRE(relay.publish_once() == 6);

  TempStore target;
  IngestOptions options = ingest_options(cluster);
  options.stream_for_key = [](std::string_view key) { return std::string(key); };
  Ingest ingest(target.store, options);
  CHECK(poll_until(ingest, 6) == 6);
  for (const RecordedEvent& e : source.store.read_all()) {
    const auto copy = target.store.read_event(e.id);
    REQUIRE(copy.has_value());
    CHECK(copy->stream_id == e.stream_id);
    CHECK(copy->stream_version == e.stream_version);
    CHECK(copy->type == e.type);
    CHECK(copy->schema_version == 2);
    CHECK(copy->payload == e.payload);
  }
}

TEST_CASE("repeats of an event within one poll (a relay that published twice) are stored once") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  TempStore source;
  for (int i = 0; i < 6; ++i) {
    source.store.append("account-" + std::to_string(i % 2), ExpectedVersion::any(),
                        test::make_event("bank.Deposited", std::to_string(i)));
  }
  for (const char* name : {"first", "second"}) {  // two relay names: every event sent twice
    kafka::RelayOptions relay_options;
    relay_options.name = name;
    relay_options.topic = kTopic;
    relay_options.kafka = {{"bootstrap.servers", cluster.bootstrap_servers()}};
    kafka::Relay relay(source.store, relay_options);
    REQUIRE(relay.publish_once() == 6);
  }
  TempStore target;
  IngestOptions options = ingest_options(cluster);
  options.poll_timeout = std::chrono::milliseconds(2000);
  options.stream_for_key = [](std::string_view key) { return std::string(key); };
  Ingest ingest(target.store, options);
  CHECK(poll_until(ingest, 12) == 12);
  CHECK(target.store.head_position() == 6);
  CHECK(ingest.offsets().at(0) == 12);
}

TEST_CASE("a record whose append fails is read again, and its offset is not stored before") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  produce_all(cluster.bootstrap_servers(), kTopic, records(3));
  TempStore t;
  bool refuse = true;
  IngestOptions options = ingest_options(cluster);
  options.stream_for_key = [&](std::string_view key) {
    return refuse && key == "k1" ? std::string() : "payment-" + std::string(key);
  };
  Ingest ingest(t.store, options);
  CHECK_THROWS_AS(poll_until(ingest, 3), InvalidArgument);  // "" is no stream id
  CHECK(t.store.head_position() == 1);
  CHECK(ingest.offsets().at(0) == 1);
  refuse = false;
  CHECK(poll_until(ingest, 2) == 2);
  CHECK(t.store.head_position() == 3);
  CHECK(ingest.offsets().at(0) == 3);
}

TEST_CASE("an ingest refuses options that name nothing") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  TempStore t;
  IngestOptions options = ingest_options(cluster);
  options.stream_for_key = nullptr;
  CHECK_THROWS_AS(Ingest(t.store, options), InvalidArgument);
  CHECK_THROWS_AS(Ingest(t.store, ingest_options(cluster, "")), InvalidArgument);
  options = ingest_options(cluster);
  options.topic.clear();
  CHECK_THROWS_AS(Ingest(t.store, options), InvalidArgument);
}

// --- Consumer groups ---------------------------------------------------------------------------

namespace {

// An ingest of the group "in" on its own store object (the file `path`), polled by its own
// thread until it is destroyed.
struct GroupMember {
  GroupMember(const std::filesystem::path& path, const IngestOptions& options)
      : store(EventStore::open(path, TempStore::fast_options())),
        ingest(store, options),
        worker([this](std::stop_token stop) { ingest.run(stop); }) {}
  EventStore store;
  Ingest ingest;
  std::jthread worker;  // destroyed first: stops polling before the ingest leaves the group
};

IngestOptions group_options(const std::string& bootstrap_servers) {
  IngestOptions options;
  options.name = "in";
  options.topic = kTopic;
  options.kafka = {{"bootstrap.servers", bootstrap_servers}};
  options.stream_for_key = [](std::string_view key) { return "payment-" + std::string(key); };
  options.consumer_group = true;
  options.poll_timeout = std::chrono::milliseconds(50);
  options.max_records = 20;  // small batches: a rebalance is more likely to meet one under way
  options.kafka["session.timeout.ms"] = "3000";
  options.kafka["heartbeat.interval.ms"] = "300";
  options.kafka["max.poll.interval.ms"] = "3000";
  return options;
}

// Records keyed k0..k15 (so that every partition of 4 gets some), values v<first>, v<first+1>...
std::vector<RecordToProduce> group_records(int first, int count) {
  std::vector<RecordToProduce> out;
  for (int i = first; i < first + count; ++i) {
    RecordToProduce r;
    r.key = "k";
    r.key += std::to_string(i % 16);
    r.value = "v";
    r.value += std::to_string(i);
    out.push_back(std::move(r));
  }
  return out;
}

bool wait_until(const std::function<bool()>& done,
                std::chrono::seconds timeout = std::chrono::seconds(15)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::size_t event_count(const EventStore& store) {
  std::size_t n = 0;
  for (const RecordedEvent& e : store.read_all()) {
    static_cast<void>(e);
    ++n;
  }
  return n;
}

// Every record v0..v<count-1> is stored exactly once, each key's records in the order produced.
void check_exactly_once_in_order(const EventStore& store, int count) {
  std::map<std::string, std::vector<int>> by_stream;
  std::set<int> seen;
  std::size_t events = 0;
  for (const RecordedEvent& e : store.read_all()) {
    const int value = std::stoi(to_string(e.payload).substr(1));
    ++events;
    seen.insert(value);
    by_stream[e.stream_id].push_back(value);
  }
  CHECK(events == static_cast<std::size_t>(count));  // no duplicate
  CHECK(seen.size() == static_cast<std::size_t>(count));
  CHECK((seen.empty() || (*seen.begin() == 0 && *seen.rbegin() == count - 1)));  // none lost
  for (const auto& [stream, values] : by_stream) {
    CAPTURE(stream);
    CHECK(std::is_sorted(values.begin(), values.end()));
  }
}

std::size_t assigned_count(const GroupMember& m) { return m.ingest.assigned_partitions().size(); }

// Every partition's stored offset is its end: nothing left behind, nothing beyond.
void check_offsets_at_end(const Ingest& ingest) {
  const auto ends = ingest.end_offsets();
  const auto stored = ingest.offsets();
  REQUIRE(ends.size() == 4);
  for (const auto& [partition, end] : ends) {
    CAPTURE(partition);
    CHECK((stored.contains(partition) ? stored.at(partition) : 0) == end);
  }
}

}  // namespace

TEST_CASE("ingests of one name in a consumer group share the partitions, each record stored once") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 4);
  TempStore t;
  const IngestOptions options = group_options(cluster.bootstrap_servers());
  GroupMember a(t.path, options);
  GroupMember b(t.path, options);
  REQUIRE(wait_until([&] {
    return assigned_count(a) > 0 && assigned_count(b) > 0 &&
           assigned_count(a) + assigned_count(b) == 4;
  }));
  produce_all(cluster.bootstrap_servers(), kTopic, group_records(0, 400));
  CHECK(wait_until([&] { return event_count(t.store) >= 400; }));
  check_exactly_once_in_order(t.store, 400);
  check_offsets_at_end(a.ingest);
}

// Two members share the topic; b closes while records come in; a ends with every partition.
void check_handover_on_close(const std::string& assignment_strategy) {
  MockCluster cluster;
  cluster.create_topic(kTopic, 4);
  TempStore t;
  IngestOptions options = group_options(cluster.bootstrap_servers());
  options.kafka["partition.assignment.strategy"] = assignment_strategy;
  GroupMember a(t.path, options);
  auto b = std::make_unique<GroupMember>(t.path, options);
  REQUIRE(wait_until([&] { return assigned_count(a) > 0 && assigned_count(*b) > 0; }));
  // Closed while records are coming in: b's partitions go back to a mid-stream.
  produce_all(cluster.bootstrap_servers(), kTopic, group_records(0, 300));
  REQUIRE(wait_until([&] { return event_count(t.store) >= 50; }));
  b.reset();
  REQUIRE(wait_until([&] { return assigned_count(a) == 4; }));
  produce_all(cluster.bootstrap_servers(), kTopic, group_records(300, 100));
  CHECK(wait_until([&] { return event_count(t.store) >= 400; }));
  check_exactly_once_in_order(t.store, 400);
  check_offsets_at_end(a.ingest);
}

TEST_CASE("when an ingest of a group closes, the others take over its partitions") {
  check_handover_on_close("range,roundrobin");  // eager: every partition revoked, then assigned
}

TEST_CASE("with cooperative-sticky, an ingest of a group that closes hands over its partitions") {
  check_handover_on_close("cooperative-sticky");  // incremental: only the moved ones revoked
}

TEST_CASE("when an ingest of a group stops polling, the others take over until it comes back") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 4);
  TempStore t;
  const IngestOptions options = group_options(cluster.bootstrap_servers());
  GroupMember a(t.path, options);
  GroupMember b(t.path, options);
  REQUIRE(wait_until([&] { return assigned_count(a) > 0 && assigned_count(b) > 0; }));
  produce_all(cluster.bootstrap_servers(), kTopic, group_records(0, 200));
  REQUIRE(wait_until([&] { return event_count(t.store) >= 20; }));
  // b hangs, holding its consumer: after max.poll.interval.ms it is out of the group and a reads
  // every partition.
  b.worker.request_stop();
  b.worker.join();
  REQUIRE(wait_until([&] { return assigned_count(a) == 4; }));
  produce_all(cluster.bootstrap_servers(), kTopic, group_records(200, 100));
  CHECK(wait_until([&] { return event_count(t.store) >= 300; }));
  // b wakes up: it learns that its partitions are lost, rejoins, and shares the work again.
  b.worker = std::jthread([&b](std::stop_token stop) { b.ingest.run(stop); });
  REQUIRE(wait_until([&] { return assigned_count(b) > 0 && assigned_count(a) < 4; }));
  produce_all(cluster.bootstrap_servers(), kTopic, group_records(300, 100));
  CHECK(wait_until([&] { return event_count(t.store) >= 400; }));
  check_exactly_once_in_order(t.store, 400);
  check_offsets_at_end(a.ingest);
}

namespace {

// The child of the crash test: reads the cluster's bootstrap servers from `pipe_in`, then runs
// an ingest of the group on the store at `path` until it is killed (60 s at most).
[[noreturn]] void run_member_until_killed(int pipe_in, const std::filesystem::path& path) {
  std::string servers;
  std::array<char, 256> buffer{};
  for (ssize_t n = 0; (n = read(pipe_in, buffer.data(), buffer.size())) > 0;) {
    servers.append(buffer.data(), static_cast<std::size_t>(n));
  }
  if (servers.empty()) _exit(0);  // the parent gave up before starting the cluster
  try {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    Ingest ingest(store, group_options(servers));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        ingest.poll_once();
      } catch (const Error&) {
        // Polled again: only the parent's checks matter.
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crash test child: %s\n", e.what());
  }
  _exit(0);
}

// Kills and reaps the child when the test ends early.
struct Child {
  pid_t pid = -1;
  void kill_now() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~Child() { kill_now(); }
};

}  // namespace

TEST_CASE("when an ingest of a group crashes, the others take over from its stored offsets") {
  // The child is forked before this process starts any thread (the cluster, the ingest), so it
  // inherits no lock held by one; ctest runs each case in a process of its own.
  test::TempDir dir;
  const std::filesystem::path path = dir.file("store.db");
  std::array<int, 2> to_child{};
  REQUIRE(pipe(to_child.data()) == 0);
  Child child{fork()};
  REQUIRE(child.pid >= 0);
  if (child.pid == 0) {
    close(to_child[1]);  // else its read never sees the end
    run_member_until_killed(to_child[0], path);
  }
  close(to_child[0]);

  MockCluster cluster;
  cluster.create_topic(kTopic, 4);
  EventStore store = EventStore::open(path, TempStore::fast_options());  // the schema, first
  const std::string servers = cluster.bootstrap_servers();
  REQUIRE(write(to_child[1], servers.data(), servers.size()) ==
          static_cast<ssize_t>(servers.size()));
  close(to_child[1]);
  GroupMember a(path, group_options(servers));
  REQUIRE(wait_until([&] { return assigned_count(a) > 0 && assigned_count(a) < 4; }));
  produce_all(servers, kTopic, group_records(0, 300));
  // The child has appended records of its partitions (and stored their offsets) when killed.
  REQUIRE(wait_until([&] {
    const auto mine = a.ingest.assigned_partitions();
    for (const auto& [partition, next] : a.ingest.offsets()) {
      if (next > 0 && std::find(mine.begin(), mine.end(), partition) == mine.end()) return true;
    }
    return false;
  }));
  child.kill_now();
  // After session.timeout.ms the group drops the dead member, and a reads every partition.
  REQUIRE(wait_until([&] { return assigned_count(a) == 4; }));
  produce_all(servers, kTopic, group_records(300, 100));
  CHECK(wait_until([&] { return event_count(store) >= 400; }));
  check_exactly_once_in_order(store, 400);
  check_offsets_at_end(a.ingest);
}

TEST_CASE("an ingest that appends records again after another moved on keeps the offset ahead") {
  // What a member that lost its partitions does when it appends late: the records are retries,
  // and the offset it writes, behind the new owner's, does not move the stored one back.
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  produce_all(cluster.bootstrap_servers(), kTopic, records(10));
  TempStore t;
  EventStore other_store = EventStore::open(t.path, TempStore::fast_options());
  IngestOptions options = ingest_options(cluster);
  // One record per poll: a poll of up to 3 could first get 1 or 2 (whatever the fetch has yet,
  // as under load in CI) and then 3 more, and the count below would be 4 or 5.
  options.max_records = 1;
  Ingest late(t.store, options);  // starts at offset 0
  Ingest ahead(other_store, ingest_options(cluster));
  REQUIRE(poll_until(ahead, 10) == 10);
  REQUIRE(ahead.offsets().at(0) == 10);
  CHECK(poll_until(late, 3) == 3);  // records 0..2 again, offset 3
  CHECK(late.offsets().at(0) == 10);
  CHECK(event_count(t.store) == 10);
}

TEST_CASE("in a consumer group, a record whose append fails is read again from the stored offset") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  produce_all(cluster.bootstrap_servers(), kTopic, records(3));
  TempStore t;
  bool refuse = true;
  IngestOptions options = group_options(cluster.bootstrap_servers());
  options.stream_for_key = [&](std::string_view key) {
    return refuse && key == "k1" ? std::string() : "payment-" + std::string(key);
  };
  Ingest ingest(t.store, options);
  CHECK_THROWS_AS(poll_until(ingest, 3), InvalidArgument);  // "" is no stream id
  CHECK(event_count(t.store) == 1);
  CHECK(ingest.offsets().at(0) == 1);
  refuse = false;
  CHECK(poll_until(ingest, 2) == 2);  // the consumer went back to offset 1 (a seek)
  CHECK(event_count(t.store) == 3);
  CHECK(ingest.offsets().at(0) == 3);
}

// Records the broker deleted before the ingest read them (retention; here the mock cluster's
// own limit of about 5 MB per partition) cannot be ingested; skipping them silently would lose
// facts without a trace. The ingest stops at the gap with an error instead, until an operator
// accepts the loss (auto.offset.reset=earliest, or a new stored offset).
TEST_CASE("records deleted before they were ingested stop the ingest with an error, no skip") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  produce_all(cluster.bootstrap_servers(), kTopic, records(5));
  TempStore t;
  {
    Ingest ingest(t.store, ingest_options(cluster));
    REQUIRE(poll_until(ingest, 5) == 5);
  }
  // 8 MB more: the partition's oldest records, from offset 5 on, are deleted.
  std::vector<RecordToProduce> big;
  for (int i = 0; i < 8000; ++i) big.push_back({"k", std::string(1000, 'x'), {}});
  produce_all(cluster.bootstrap_servers(), kTopic, big);

  Ingest ingest(t.store, ingest_options(cluster));
  for (int attempt = 0; attempt < 2; ++attempt) {  // reported again on every poll
    bool thrown = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!thrown && std::chrono::steady_clock::now() < deadline) {
      try {
        ingest.poll_once();
      } catch (const kafka::KafkaError& e) {
        thrown = true;
        const std::string message = e.what();
        CHECK(message.find("partition 0") != std::string::npos);
        CHECK(message.find("offset 5") != std::string::npos);
        CHECK(message.find("no longer in the topic") != std::string::npos);
      }
    }
    REQUIRE(thrown);
    CHECK(t.store.head_position() == 5);  // nothing appended past the gap
    CHECK(ingest.offsets().at(0) == 5);
  }

  // Accepting the loss: the ingest goes on from the first record the partition still holds.
  IngestOptions accept = ingest_options(cluster);
  accept.kafka["auto.offset.reset"] = "earliest";
  Ingest going_on(t.store, accept);
  const std::size_t handled = poll_until(going_on, 1);
  CHECK(handled >= 1);
  CHECK(going_on.offsets().at(0) > 5);
}

TEST_CASE("a compensation keeps the id it compensates through relay and ingest") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  TempStore source;
  source.store.append("account-1", ExpectedVersion::any(), test::make_event("bank.Deposited", "5"));
  const RecordedEvent deposit = *source.store.read_all(1).begin();
  EventData reversal = test::make_event("bank.DepositReversed", "5");
  reversal.metadata.compensates = deposit.id;
  source.store.append("account-1", ExpectedVersion::any(), reversal);
  kafka::RelayOptions relay_options;
  relay_options.name = "out";
  relay_options.topic = kTopic;
  relay_options.kafka = {{"bootstrap.servers", cluster.bootstrap_servers()}};
  kafka::Relay relay(source.store, relay_options);
  REQUIRE(relay.publish_once() == 2);

  TempStore target;
  IngestOptions options = ingest_options(cluster);
  options.stream_for_key = [](std::string_view key) { return std::string(key); };
  Ingest ingest(target.store, options);
  REQUIRE(poll_until(ingest, 2) == 2);
  const auto copy = target.store.read_event(reversal.id);
  REQUIRE(copy.has_value());
  CHECK(copy->metadata.compensates == deposit.id);
}

TEST_CASE("the error of a record that cannot be appended names its topic, partition and offset") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  produce_all(cluster.bootstrap_servers(), kTopic, records(3));
  TempStore t;
  IngestOptions options = ingest_options(cluster);
  options.stream_for_key = [](std::string_view key) {
    return key == "k1" ? std::string() : "payment-" + std::string(key);
  };
  Ingest ingest(t.store, options);
  try {
    poll_until(ingest, 3);
    FAIL("a record with no stream id was appended");
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("topic 'payments' partition 0 offset 1 (key 'k1')") != std::string::npos);
    CHECK(what.find("store the offset 2 for partition 0") != std::string::npos);
  }
}

// librdkafka 2.0.2's rd_kafka_query_watermark_offsets never returns once the broker is gone.
TEST_CASE("end_offsets with the broker gone throws KafkaError instead of waiting for ever") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 2);
  produce_all(cluster.bootstrap_servers(), kTopic, records(4));
  TempStore t;
  IngestOptions options = ingest_options(cluster);
  options.broker_timeout = std::chrono::milliseconds(1000);
  Ingest ingest(t.store, options);
  REQUIRE(poll_until(ingest, 4) == 4);
  cluster.set_down();
  CHECK_THROWS_AS(ingest.end_offsets(), kafka::KafkaError);
  cluster.set_up();
}

TEST_CASE("a stop request ends a new ingest's wait for a cluster out of reach") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  TempStore t;
  IngestOptions options = ingest_options(cluster);
  options.broker_timeout = std::chrono::seconds(60);
  cluster.set_down();
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  try {
    Ingest ingest(t.store, options, stop.get_token());
    FAIL("an ingest started with its cluster out of reach");
  } catch (const kafka::KafkaError& e) {
    CHECK(e.code() == RD_KAFKA_RESP_ERR__INTR);
    CHECK(std::string(e.what()).find("interrupted") != std::string::npos);
  }
  cluster.set_up();
}

TEST_CASE("known_end_offsets gives the ends the consumer has heard of, without asking") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  produce_all(cluster.bootstrap_servers(), kTopic, records(5));
  TempStore t;
  Ingest ingest(t.store, ingest_options(cluster));
  REQUIRE(poll_until(ingest, 5) == 5);
  cluster.set_down();  // nothing to ask any more
  const auto known = ingest.known_end_offsets();
  REQUIRE(known.size() == 1);
  CHECK(known.at(0) == 5);
  cluster.set_up();
}
