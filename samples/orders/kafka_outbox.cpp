// samples/orders/kafka_outbox.cpp — the order events to Kafka through factum::kafka::Relay, and
// the demo's run against librdkafka's in-process mock cluster (see kafka_outbox.hpp). Built only
// with the Kafka bridge; kafka_missing.cpp stands in for it otherwise.
#include "orders/kafka_outbox.hpp"

#include <factum/kafka/headers.hpp>
#include <factum/kafka/librdkafka.hpp>
#include <factum/kafka/relay.hpp>

#include <array>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "orders/errors.hpp"
#include "orders/events.hpp"

namespace orders {

namespace {

// librdkafka's own log lines (connection refused, ...) would break the one-line error rule.
constexpr const char* kQuietLogLevel = "2";

// The demo's mock cluster and topic.
constexpr int kMockBrokers = 3;
constexpr int kMockPartitions = 4;

struct KafkaDeleter {
  void operator()(rd_kafka_t* rk) const { factum::kafka::librdkafka().rd_kafka_destroy(rk); }
};
using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaDeleter>;

// A client of `type` with `properties`; throws Error naming what librdkafka refused.
KafkaHandle new_client(rd_kafka_type_t type,
                       const std::vector<std::pair<std::string, std::string>>& properties) {
  rd_kafka_conf_t* conf = factum::kafka::librdkafka().rd_kafka_conf_new();
  std::array<char, 512> error{};
  for (const auto& [name, value] : properties) {
    if (factum::kafka::librdkafka().rd_kafka_conf_set(
            conf, name.c_str(), value.c_str(), error.data(), error.size()) != RD_KAFKA_CONF_OK) {
      factum::kafka::librdkafka().rd_kafka_conf_destroy(conf);
      throw Error("kafka: " + name + ": " + error.data());
    }
  }
  rd_kafka_t* rk = factum::kafka::librdkafka().rd_kafka_new(type, conf, error.data(), error.size());
  if (rk == nullptr) {
    factum::kafka::librdkafka().rd_kafka_conf_destroy(conf);
    throw Error(std::string("kafka: cannot create a client: ") + error.data());
  }
  return KafkaHandle(rk);
}

// librdkafka's mock cluster: brokers in this process on 127.0.0.1, gone with the object.
class MockCluster {
 public:
  MockCluster() : client_(new_client(RD_KAFKA_PRODUCER, {{"log_level", kQuietLogLevel}})) {
    cluster_ = factum::kafka::librdkafka().rd_kafka_mock_cluster_new(client_.get(), kMockBrokers);
    if (cluster_ == nullptr) throw Error("kafka: cannot start librdkafka's mock cluster");
  }
  ~MockCluster() { factum::kafka::librdkafka().rd_kafka_mock_cluster_destroy(cluster_); }
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  std::string bootstrap_servers() const {
    return factum::kafka::librdkafka().rd_kafka_mock_cluster_bootstraps(cluster_);
  }
  void create_topic(const std::string& topic, int partitions) {
    if (factum::kafka::librdkafka().rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions,
                                                               1) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      throw Error("kafka: cannot create the topic " + topic + " on the mock cluster");
    }
  }

 private:
  KafkaHandle client_;  // the mock cluster lives on this handle's threads
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
};

// One record read back from the topic: its partition, key, value and the headers the relay sets.
struct ReadRecord {
  std::int32_t partition = 0;
  std::string key;
  std::string value;
  std::string event_id;
  std::string type;
};

std::string header(const rd_kafka_message_t& message, const char* name) {
  rd_kafka_headers_t* headers = nullptr;
  if (factum::kafka::librdkafka().rd_kafka_message_headers(&message, &headers) !=
      RD_KAFKA_RESP_ERR_NO_ERROR)
    return "";
  const void* value = nullptr;
  std::size_t size = 0;
  if (factum::kafka::librdkafka().rd_kafka_header_get_last(headers, name, &value, &size) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    return "";
  }
  return std::string(static_cast<const char*>(value), size);
}

// Records in all `partitions` of `topic` right now: the sum of their ends (the demo's topic is
// new, so every partition starts at 0). Asked with rd_kafka_offsets_for_times (the time
// "latest"), which keeps to its timeout.
std::int64_t records_in(rd_kafka_t* rk, const std::string& topic, int partitions) {
  rd_kafka_topic_partition_list_t* ends =
      factum::kafka::librdkafka().rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    factum::kafka::librdkafka().rd_kafka_topic_partition_list_add(ends, topic.c_str(), p)->offset =
        RD_KAFKA_OFFSET_END;
  }
  rd_kafka_resp_err_t error =
      factum::kafka::librdkafka().rd_kafka_offsets_for_times(rk, ends, 10000);
  std::int64_t total = 0;
  for (int i = 0; i < ends->cnt; ++i) {
    if (error == RD_KAFKA_RESP_ERR_NO_ERROR) error = ends->elems[i].err;
    total += ends->elems[i].offset;
  }
  factum::kafka::librdkafka().rd_kafka_topic_partition_list_destroy(ends);
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw Error("kafka: cannot read the ends of the topic " + topic + ": " +
                factum::kafka::librdkafka().rd_kafka_err2str(error));
  }
  return total;
}

// Every record of `topic` from the beginning: a consumer reads until it holds as many records
// as the partitions do (at most 30 s).
std::vector<ReadRecord> read_topic(const std::string& brokers, const std::string& topic,
                                   int partitions) {
  KafkaHandle rk = new_client(RD_KAFKA_CONSUMER, {{"bootstrap.servers", brokers},
                                                  {"group.id", "factum-orders-demo"},
                                                  {"enable.auto.commit", "false"},
                                                  {"log_level", kQuietLogLevel}});
  factum::kafka::librdkafka().rd_kafka_poll_set_consumer(rk.get());
  const std::int64_t expected = records_in(rk.get(), topic, partitions);
  rd_kafka_topic_partition_list_t* assignment =
      factum::kafka::librdkafka().rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    factum::kafka::librdkafka()
        .rd_kafka_topic_partition_list_add(assignment, topic.c_str(), p)
        ->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  factum::kafka::librdkafka().rd_kafka_assign(rk.get(), assignment);
  factum::kafka::librdkafka().rd_kafka_topic_partition_list_destroy(assignment);
  std::vector<ReadRecord> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (static_cast<std::int64_t>(out.size()) < expected &&
         std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* message = factum::kafka::librdkafka().rd_kafka_consumer_poll(rk.get(), 100);
    if (message == nullptr) continue;
    if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      out.push_back({message->partition,
                     std::string(static_cast<const char*>(message->key), message->key_len),
                     std::string(static_cast<const char*>(message->payload), message->len),
                     header(*message, factum::kafka::kEventIdHeader),
                     header(*message, factum::kafka::kTypeHeader)});
    }
    factum::kafka::librdkafka().rd_kafka_message_destroy(message);
  }
  factum::kafka::librdkafka().rd_kafka_consumer_close(rk.get());
  return out;
}

// What the records read back say about the store's events.
struct ReadBack {
  std::map<std::int32_t, std::size_t> per_partition;
  std::size_t distinct_ids = 0;
  std::size_t equal = 0;     // records equal to their stored event (key, value, id, type)
  bool stream_order = true;  // each stream's records in stream-version order
  std::size_t missing = 0;   // stored events of the category no record carries
};

ReadBack check_against_store(const factum::EventStore& store,
                             const std::vector<ReadRecord>& records) {
  std::unordered_map<std::string, factum::RecordedEvent> stored;
  for (const factum::RecordedEvent& e : store.read_category(kCategory)) {
    stored.emplace(e.id.to_string(), e);
  }
  ReadBack out;
  std::set<std::string> ids;
  std::map<std::string, factum::StreamVersion, std::less<>> last_version;
  for (const ReadRecord& r : records) {
    ++out.per_partition[r.partition];
    ids.insert(r.event_id);
    const auto found = stored.find(r.event_id);
    if (found == stored.end()) continue;
    const factum::RecordedEvent& e = found->second;
    const std::string payload(reinterpret_cast<const char*>(e.payload.data()), e.payload.size());
    if (r.key == e.stream_id && r.value == payload && r.type == e.type) ++out.equal;
    factum::StreamVersion& last = last_version[e.stream_id];
    if (e.stream_version <= last) out.stream_order = false;
    last = e.stream_version;
  }
  out.distinct_ids = ids.size();
  for (const auto& [id, event] : stored) out.missing += ids.count(id) == 0 ? 1 : 0;
  return out;
}

}  // namespace

bool kafka_available() noexcept { return true; }

void require_kafka(std::string_view) {}

KafkaPublication publish_to_kafka(factum::EventStore& store, const KafkaTarget& target) {
  factum::kafka::RelayOptions options;
  options.name = target.relay;
  options.topic = target.topic;
  options.category = std::string(kCategory);
  options.kafka = {{"bootstrap.servers", target.brokers}, {"log_level", kQuietLogLevel}};
  options.delivery_timeout = target.timeout;
  factum::kafka::Relay relay(store, options);
  try {
    relay.publish_available();
  } catch (const factum::kafka::DeliveryError& e) {
    throw Error(std::string(e.what()) + "; nothing is lost: the checkpoint stays at " +
                std::to_string(relay.status().checkpoint) +
                " and the next outbox --kafka publishes from there");
  }
  const factum::kafka::RelayStatus status = relay.status();
  return {status.published, status.checkpoint, status.head};
}

namespace {

// Removes the demo relay's checkpoint when the demo ends, however it ends: it counted events
// published to a cluster that is gone.
struct DemoCheckpoint {
  factum::EventStore& store;
  ~DemoCheckpoint() {
    try {
      factum::CheckpointStore(store).remove(std::string("kafka-relay:") + kKafkaDemoRelayName);
    } catch (const factum::Error&) {
      // A store that cannot be written now: the row names the demo, no real relay reads it.
    }
  }
};

}  // namespace

void run_kafka_mock_demo(factum::EventStore& store, std::ostream& out) {
  const DemoCheckpoint demo_checkpoint{store};
  MockCluster cluster;
  KafkaTarget target;
  target.brokers = cluster.bootstrap_servers();
  target.relay = kKafkaDemoRelayName;
  cluster.create_topic(target.topic, kMockPartitions);
  out << "  kafka (--kafka-mock: librdkafka's in-process mock cluster, " << kMockBrokers
      << " brokers; topic '" << target.topic << "', " << kMockPartitions << " partitions):\n";
  const KafkaPublication first = publish_to_kafka(store, target);
  out << "    relay '" << target.relay << "' published " << first.published
      << " events of the category " << kCategory << "; checkpoint " << first.checkpoint
      << (first.checkpoint == first.head ? " = head " : ", head ") << first.head << "\n";
  const KafkaPublication again = publish_to_kafka(store, target);
  out << "    run again: " << again.published << " events published (checkpoint "
      << again.checkpoint << ")\n";
  const std::vector<ReadRecord> records = read_topic(target.brokers, target.topic, kMockPartitions);
  const ReadBack back = check_against_store(store, records);
  out << "    read back " << records.size() << " records:";
  for (int p = 0; p < kMockPartitions; ++p) {
    const auto found = back.per_partition.find(p);
    out << (p == 0 ? " partition " : ", ") << p << ": "
        << (found == back.per_partition.end() ? 0 : found->second);
  }
  out << "\n    " << back.distinct_ids << " distinct event ids, " << back.equal
      << " records equal to their stored event (key, payload, id, type), " << back.missing
      << " stored events missing; each order's events in stream order: "
      << (back.stream_order ? "yes" : "no") << "\n";
  out << "    (the demo's relay has a checkpoint of its own, removed now with its mock cluster: "
         "outbox --kafka BROKERS still publishes every event, as relay '"
      << kKafkaRelayName << "')\n";
}

}  // namespace orders
