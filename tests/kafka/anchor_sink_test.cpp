// factum::kafka::KafkaAnchorSink against librdkafka's mock cluster: anchors chained on a
// one-partition topic, read back whole and from the end; appenders in several threads that
// never fork the chain; a store anchoring into a topic as it runs, through a broker outage;
// what it refuses.
#include <doctest/doctest.h>
#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "factum/kafka/anchor_sink.hpp"
#include "factum/kafka/errors.hpp"
#include "mock_cluster.hpp"
#include "support/anchor_keys.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace std::chrono_literals;
using factum::kafka::AnchorTopicOptions;
using factum::kafka::KafkaAnchorSink;
using factum::test::eventually;
using factum::test::make_ed25519_keys;
using factum::test::make_events;
using factum::test::MockCluster;
using factum::test::TempStore;

namespace {

constexpr const char* kTopic = "anchors";

AnchorTopicOptions topic_options(const MockCluster& cluster) {
  AnchorTopicOptions o;
  o.topic = kTopic;
  o.kafka = {{"bootstrap.servers", cluster.bootstrap_servers()}};
  o.timeout = 5s;
  return o;
}

struct Keys {
  test::TempDir dir;
  test::KeyFiles files = make_ed25519_keys(dir.file(""));
  AnchorSigningKey key = AnchorSigningKey::from_pem_file(files.private_key);
  AnchorPublicKey pub = AnchorPublicKey::from_pem_file(files.public_key);
};

}  // namespace

TEST_CASE("anchors on a topic chain, read back whole and from the end, and verify the store") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  Keys k;
  KafkaAnchorSink sink(topic_options(cluster));
  CHECK_FALSE(sink.last().has_value());
  CHECK(sink.anchors().empty());
  TempStore t;
  std::vector<Anchor> made;
  for (int i = 0; i < 12; ++i) {  // more than the first window read back from the end
    t.store.append("s-1", ExpectedVersion::any(), make_events(2));
    made.push_back(anchor_head(t.store, k.key, sink));
  }
  CHECK(sink.anchors() == made);
  CHECK(sink.last() == made.back());
  CHECK(check_anchors(made, k.pub).ok());
  CHECK(verify_anchored(t.store, sink.anchors(), k.pub).ok());
  // A store that lost its tail is refused, and nothing is appended.
  TempStore shorter;
  shorter.store.append("s-1", ExpectedVersion::any(), make_events(5));
  CHECK_THROWS_AS(anchor_head(shorter.store, k.key, sink), AnchorError);
  CHECK(sink.anchors().size() == made.size());
}

TEST_CASE("threads anchoring to one topic at once never fork the chain") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  Keys k;
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_events(1));
  std::atomic<int> made{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      KafkaAnchorSink sink(topic_options(cluster));  // a sink (and producer) per thread
      for (int j = 0; j < 3; ++j) {
        try {
          anchor_head(t.store, k.key, sink);
          ++made;
        } catch (const kafka::KafkaError&) {
          ++refused;  // fenced by another appender: nothing written
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  KafkaAnchorSink reader(topic_options(cluster));
  const std::vector<Anchor> anchors = reader.anchors();
  CHECK(made > 0);
  CHECK(anchors.size() == static_cast<std::size_t>(made.load()));
  CHECK(check_anchors(anchors, k.pub).ok());  // one chain: each follows the one before
  CHECK(refused == 0);                        // within a process, appenders take turns
}

TEST_CASE("a fenced append writes nothing, and the next one chains to the last anchor") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  Keys k;
  TempStore t;
  KafkaAnchorSink sink(topic_options(cluster));
  t.store.append("s-1", ExpectedVersion::any(), make_events(2));
  const Anchor first = anchor_head(t.store, k.key, sink);
  t.store.append("s-1", ExpectedVersion::any(), make_events(2));
  // Another appender started meanwhile: this one's transaction is refused (AddPartitionsToTxn,
  // api key 24; the mock cluster keeps a record whose EndTxn failed visible, a broker does not).
  cluster.fail_requests(24, 1, RD_KAFKA_RESP_ERR_PRODUCER_FENCED);
  CHECK_THROWS_AS(anchor_head(t.store, k.key, sink), kafka::KafkaError);
  CHECK(sink.anchors() == std::vector<Anchor>{first});
  const Anchor second = anchor_head(t.store, k.key, sink);
  CHECK(second.previous == first.hash());
  CHECK(sink.anchors() == std::vector<Anchor>{first, second});
}

TEST_CASE("a store anchors into a topic as it runs, and catches up after a broker outage") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  Keys k;
  auto sink = std::make_shared<KafkaAnchorSink>(topic_options(cluster));
  std::atomic<int> errors{0};
  StoreOptions o = TempStore::fast_options();
  o.anchoring.key = std::make_shared<const AnchorSigningKey>(k.key);
  o.anchoring.sink = sink;
  o.anchoring.every_events = 5;
  o.anchoring.every = 0ms;
  o.anchoring.retry = 100ms;
  o.anchoring.on_error = [&](std::exception_ptr) { ++errors; };
  TempStore t;
  {
    EventStore store = EventStore::open(t.path, o);
    store.append("s-1", ExpectedVersion::any(), make_events(5));
    CHECK(eventually([&] { return sink->last() && sink->last()->position == 5; }));
    cluster.set_down();
    store.append("s-1", ExpectedVersion::any(), make_events(5));  // appends go on
    CHECK(eventually([&] { return errors > 0; }));
    cluster.set_up();
    CHECK(eventually([&] { return sink->last() && sink->last()->position == 10; }));
  }
  EventStore reopened = EventStore::open(t.path, o);  // the check at open reads the topic
  CHECK(verify_anchored(reopened, sink->anchors(), k.pub).ok());
}

TEST_CASE("a Kafka anchor sink refuses a topic of several partitions and the properties it sets") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 2);
  Keys k;
  TempStore t;
  KafkaAnchorSink sink(topic_options(cluster));
  CHECK_THROWS_WITH_AS(anchor_head(t.store, k.key, sink), doctest::Contains("exactly one"),
                       InvalidArgument);
  AnchorTopicOptions o = topic_options(cluster);
  o.kafka["transactional.id"] = "mine";
  CHECK_THROWS_AS(KafkaAnchorSink{o}, InvalidArgument);
  o = topic_options(cluster);
  o.topic.clear();
  CHECK_THROWS_AS(KafkaAnchorSink{o}, InvalidArgument);
}

TEST_CASE("a record on the anchor topic that is not an anchor is named by its offset") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  test::produce_all(cluster.bootstrap_servers(), kTopic, {{"k", "not an anchor", {}}});
  KafkaAnchorSink sink(topic_options(cluster));
  CHECK_THROWS_WITH_AS(sink.anchors(), doctest::Contains("offset 0"), AnchorError);
  CHECK_THROWS_WITH_AS(sink.last(), doctest::Contains("offset 0"), AnchorError);
}

TEST_CASE("a Kafka anchor sink whose cluster is down fails within its timeout") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  cluster.set_down();
  Keys k;
  TempStore t;
  AnchorTopicOptions o = topic_options(cluster);
  o.timeout = 1s;
  KafkaAnchorSink sink(o);
  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(anchor_head(t.store, k.key, sink), kafka::KafkaError);
  CHECK(std::chrono::steady_clock::now() - started < 10s);
  cluster.set_up();
}
