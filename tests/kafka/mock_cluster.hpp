// Test helpers for the Kafka bridge: librdkafka's in-process mock cluster (rdkafka_mock.h) and a
// plain consumer that reads a topic back from the beginning.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

struct rd_kafka_s;
struct rd_kafka_mock_cluster_s;

namespace factum::test {

// A mock Kafka cluster of `brokers` brokers (ids 1..brokers) on 127.0.0.1, in this process.
class MockCluster {
 public:
  explicit MockCluster(int brokers = 1);
  ~MockCluster();
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  // bootstrap.servers for clients of this cluster.
  std::string bootstrap_servers() const;
  void create_topic(const std::string& topic, int partitions);
  // Disconnects broker `id` (-1: all) and refuses new connections; set_up lets them in again.
  void set_down(int id = -1);
  void set_up(int id = -1);
  // Every broker answers each request `ms` milliseconds late.
  void set_rtt(int ms);
  // Broker `id` answers each request `ms` milliseconds late.
  void set_broker_rtt(int id, int ms);
  // Metadata requests answer `error` (an rd_kafka_resp_err_t) for `topic`: with
  // RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART the topic looks as it does on a cluster that does not
  // create topics on demand (the mock cluster creates any topic asked for).
  void set_topic_error(const std::string& topic, int error);
  // The next `count` Produce requests fail with `error` (an rd_kafka_resp_err_t).
  void fail_produce_requests(int count, int error);
  // The next `count` requests of Kafka API `api_key` (22 InitProducerId, 24 AddPartitionsToTxn,
  // 26 EndTxn, ...) fail with `error`.
  void fail_requests(int api_key, int count, int error);
  // Broker `broker` becomes the leader of `partition` of `topic`.
  void set_leader(const std::string& topic, int partition, int broker);

 private:
  rd_kafka_s* client_ = nullptr;
  rd_kafka_mock_cluster_s* cluster_ = nullptr;
};

// One record read back.
struct ConsumedRecord {
  std::string key;
  std::string value;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::map<std::string, std::string> headers;
};

// The records of `topic` (partitions 0..partitions-1) from the beginning, as a read_committed
// consumer sees them (no record of an open or aborted transaction), in the order the
// consumer got them (offset order within a partition). Reads until `expected` records came or
// `timeout` passed, then half a second more, so that records beyond `expected` are seen too.
std::vector<ConsumedRecord> consume_all(
    const std::string& bootstrap_servers, const std::string& topic, int partitions,
    std::size_t expected, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// One record to produce: key, value and headers (name -> value).
struct RecordToProduce {
  std::string key;
  std::string value;
  std::map<std::string, std::string> headers;
};

// The end (high watermark) of partitions 0..partitions-1 of `topic`, summed: how many records
// the topic holds. Throws std::runtime_error when the cluster does not answer.
std::int64_t records_in(const std::string& bootstrap_servers, const std::string& topic,
                        int partitions);

// Produces `records` to `topic` (partition chosen by key) and waits until all are delivered.
// Throws std::runtime_error when one is not.
void produce_all(const std::string& bootstrap_servers, const std::string& topic,
                 const std::vector<RecordToProduce>& records);

}  // namespace factum::test
