// tests/samples/orders_kafka_test.cpp — factum-orders' Kafka channel end to end (labels samples
// and kafka; built only with the Kafka bridge): `demo --kafka-mock` against the program's own
// in-process mock cluster, and `outbox --kafka` against a mock cluster of this test process,
// whose topic the test reads back and compares with the store, event by event.
#include <doctest/doctest.h>

#include <factum/factum.hpp>
#include <factum/kafka/headers.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "mock_cluster.hpp"
#include "sample_cli.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace {

using factum::test::contains;
using factum::test::ProgramRun;

constexpr const char* kTopic = "orders";
constexpr int kPartitions = 3;

// A temporary folder to run factum-orders in; `args` is shell text.
struct Folder {
  factum::test::TempDir dir;

  ProgramRun run(const std::string& args) const {
    return factum::test::run_shell("'" FACTUM_ORDERS_BIN "' " + args, dir.path());
  }
  std::string ok(const std::string& args) const {
    const ProgramRun r = run(args);
    INFO(args, "\n", r.err);
    REQUIRE(r.code == 0);
    return r.out;
  }
  std::filesystem::path db() const { return dir.file("orders.db"); }
  // Every event of the store, in position order.
  std::vector<factum::RecordedEvent> events() const {
    std::vector<factum::RecordedEvent> out;
    const factum::EventStore store = factum::EventStore::open(db());
    for (const factum::RecordedEvent& e : store.read_all()) out.push_back(e);
    return out;
  }
  // A relay's durable checkpoint (by default the outbox's).
  factum::Position checkpoint(const std::string& name = "kafka-relay:orders-to-kafka") const {
    factum::EventStore store = factum::EventStore::open(db());
    return factum::CheckpointStore(store).load(name);
  }
};

std::string text_of(const factum::Bytes& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Checks that `records` are `events`, each exactly once: key, value, id, type and position as
// stored, and each partition in position order (so each order's events in stream order).
void check_published_as_stored(const std::vector<factum::test::ConsumedRecord>& records,
                               const std::vector<factum::RecordedEvent>& events) {
  REQUIRE(records.size() == events.size());
  std::set<std::string> ids;
  std::map<std::int32_t, factum::Position> last;
  for (const factum::test::ConsumedRecord& r : records) {
    const factum::Position position = std::stoull(r.headers.at(factum::kafka::kPositionHeader));
    REQUIRE(position >= 1);
    REQUIRE(position <= events.size());
    const factum::RecordedEvent& e = events[position - 1];
    INFO("position ", position);
    CHECK(r.headers.at(factum::kafka::kEventIdHeader) == e.id.to_string());
    CHECK(r.headers.at(factum::kafka::kTypeHeader) == e.type);
    CHECK(r.key == e.stream_id);
    CHECK(r.value == text_of(e.payload));
    CHECK(position > last[r.partition]);
    last[r.partition] = position;
    ids.insert(e.id.to_string());
  }
  CHECK(ids.size() == events.size());  // every event, none twice
}

// Exactly one line on stderr, "factum-orders: " and `part` in it, nothing on stdout, exit 1.
void check_error(const ProgramRun& r, const std::string& part) {
  INFO(r.err);
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("factum-orders: ", 0) == 0);
  CHECK(r.err.find('\n') == r.err.size() - 1);
  CHECK(contains(r.err, part));
}

}  // namespace

TEST_CASE("demo --kafka-mock relays every order event to a mock cluster and reads it back") {
  Folder f;
  const std::string out = f.ok("demo --orders 40 --kafka-mock");
  const std::vector<factum::RecordedEvent> events = f.events();
  REQUIRE(events.size() > 40);
  const std::string n = std::to_string(events.size());
  INFO(out);
  CHECK(contains(out, "relay 'orders-demo-kafka-mock' published " + n +
                          " events of the category order; checkpoint " + n + " = head " + n +
                          "\n"));
  CHECK(contains(out, "run again: 0 events published (checkpoint " + n + ")\n"));
  CHECK(contains(out, "read back " + n + " records: partition 0: "));
  CHECK(contains(out, n + " distinct event ids, " + n +
                          " records equal to their stored event (key, payload, id, type), 0 "
                          "stored events missing; each order's events in stream order: yes\n"));
  // The demo's relay left no checkpoint behind, and never moved the outbox's.
  CHECK(f.checkpoint() == 0);
  CHECK(f.checkpoint("kafka-relay:orders-demo-kafka-mock") == 0);
  // The Kafka part comes after everything the demo printed before.
  CHECK(out.find("redelivery (checkpoint reset to 0)") < out.find("kafka (--kafka-mock"));
}

TEST_CASE("outbox --kafka publishes every order event exactly as stored, and only once") {
  factum::test::MockCluster cluster;
  cluster.create_topic(kTopic, kPartitions);
  const std::string brokers = cluster.bootstrap_servers();
  Folder f;
  f.ok("demo --orders 25");
  std::vector<factum::RecordedEvent> events = f.events();
  const std::string n = std::to_string(events.size());
  const std::string out = f.ok("outbox --limit 0 --kafka " + brokers);
  CHECK(out.rfind("published " + n +
                      " order events to Kafka topic 'orders' (relay 'orders-to-kafka'); "
                      "checkpoint " +
                      n + ", head " + n + "\n",
                  0) == 0);
  CHECK(contains(out, " emails sent\n"));  // the e-mail outbox as before
  check_published_as_stored(factum::test::consume_all(brokers, kTopic, kPartitions, events.size()),
                            events);
  CHECK(f.checkpoint() == events.size());

  SUBCASE("a second run publishes nothing new: it starts at the checkpoint") {
    CHECK(f.ok("outbox --limit 0 --kafka " + brokers)
              .rfind("published 0 order events to Kafka topic 'orders' (relay 'orders-to-kafka'); "
                     "checkpoint " +
                         n + ", head " + n + "\n",
                     0) == 0);
    check_published_as_stored(
        factum::test::consume_all(brokers, kTopic, kPartitions, events.size()), events);
  }
  SUBCASE("a new order is published by the next run, alone") {
    f.ok("place o-9000 ann mug-01:1:12.50");
    events = f.events();
    CHECK(contains(f.ok("outbox --limit 0 --kafka " + brokers + " --topic " + kTopic),
                   "published 1 order events"));
    check_published_as_stored(
        factum::test::consume_all(brokers, kTopic, kPartitions, events.size()), events);
    CHECK(f.checkpoint() == events.size());
  }
}

// The demo relays into a mock cluster of its own that is gone when it ends: what it published
// there must not count as published to the cluster `outbox --kafka` talks to.
TEST_CASE("demo --kafka-mock leaves the outbox's checkpoint alone: outbox --kafka publishes all") {
  factum::test::MockCluster cluster;
  cluster.create_topic(kTopic, kPartitions);
  const std::string brokers = cluster.bootstrap_servers();
  Folder f;
  f.ok("demo --orders 20 --kafka-mock");
  CHECK(f.checkpoint() == 0);
  const std::vector<factum::RecordedEvent> events = f.events();
  const std::string n = std::to_string(events.size());
  CHECK(f.ok("outbox --limit 0 --kafka " + brokers)
            .rfind("published " + n + " order events to Kafka topic 'orders'", 0) == 0);
  check_published_as_stored(factum::test::consume_all(brokers, kTopic, kPartitions, events.size()),
                            events);
  CHECK(f.checkpoint() == events.size());
}

TEST_CASE("outbox --kafka with the broker unreachable: one line, exit 1, nothing lost") {
  factum::test::MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  const std::string brokers = cluster.bootstrap_servers();
  Folder f;
  f.ok("demo --orders 5");
  const std::vector<factum::RecordedEvent> before = f.events();
  cluster.set_down();
  const ProgramRun r = f.run("outbox --kafka " + brokers + " --timeout 1");
  check_error(r, "the event at position 1 (id " + before.front().id.to_string() +
                     ", stream order-o-1) was not delivered to topic 'orders'");
  CHECK(contains(r.err, "nothing is lost: the checkpoint stays at 0"));
  // The log is as it was, and the relay has not moved past an unconfirmed event.
  const std::vector<factum::RecordedEvent> after = f.events();
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) CHECK(after[i].id == before[i].id);
  CHECK(f.checkpoint() == 0);
  // Once the broker is back, the next run publishes everything.
  cluster.set_up();
  CHECK(contains(f.ok("outbox --kafka " + brokers),
                 "published " + std::to_string(before.size()) + " order events"));
  CHECK(f.checkpoint() == before.size());
}

// factum-orders does not link librdkafka: factum::kafka loads it on first use
// (factum/kafka/librdkafka.hpp). Without it the Kafka channel is refused with one line that names
// the library, the store is left as it was, and the rest of the program works.
TEST_CASE("without librdkafka, the Kafka channel is one line, exit 1, and nothing is lost") {
  Folder f;
  f.ok("demo --orders 5");
  const std::vector<factum::RecordedEvent> before = f.events();
  const std::string missing = f.dir.file("no-such-librdkafka.so.1").string();
  const auto without = [&](const std::string& args) {
    return factum::test::run_shell(
        "FACTUM_LIBRDKAFKA='" + missing + "' '" FACTUM_ORDERS_BIN "' " + args, f.dir.path());
  };
  check_error(without("outbox --kafka 127.0.0.1:9 --timeout 1"),
              "cannot load librdkafka ('" + missing + "')");
  const std::vector<factum::RecordedEvent> after = f.events();
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) CHECK(after[i].id == before[i].id);
  CHECK(f.checkpoint() == 0);
  const ProgramRun mock = without("demo --orders 3 --fresh --kafka-mock");
  INFO(mock.err);
  CHECK(mock.code == 1);
  CHECK(mock.err.find('\n') == mock.err.size() - 1);
  CHECK(contains(mock.err, "cannot load librdkafka"));
  CHECK(without("outbox --limit 0").code == 0);  // the outbox without --kafka needs no Kafka
}

TEST_CASE("the Kafka options: usage errors exit 2, bad values one line with exit 1") {
  Folder f;
  f.ok("demo --orders 3");
  CHECK(f.run("outbox --topic t").code == 2);  // --topic needs --kafka
  CHECK(f.run("outbox --timeout 1").code == 2);
  CHECK(f.run("outbox --kafka 127.0.0.1:9 --timeout 0").code == 2);
  check_error(f.run("outbox --kafka ''"), "outbox --kafka: give the brokers");
  CHECK(contains(f.ok("outbox --help"), "--kafka"));
  CHECK(contains(f.ok("demo --help"), "--kafka-mock"));
}
