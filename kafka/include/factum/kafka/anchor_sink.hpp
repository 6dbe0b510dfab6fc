// factum/kafka/anchor_sink.hpp — anchors (factum/eventstore/anchor.hpp) kept on a Kafka topic:
// a log of signed heads on a cluster the store's owner does not run alone.
//
//   factum::kafka::AnchorTopicOptions options;
//   options.topic = "ledger-anchors";                       // one partition
//   options.kafka = {{"bootstrap.servers", "broker-1:9092"}};
//   store_options.anchoring.sink = std::make_shared<factum::kafka::KafkaAnchorSink>(options);
//
// Each anchor is one record (key "factum-anchor", value Anchor::to_json) on partition 0 of a
// topic that has exactly one partition (a chain has one order). An append is one Kafka
// transaction of a producer whose transactional id belongs to the topic's anchors
// (`transactional_id`, default "factum-anchors:<topic>"): starting it fences every other producer
// with that id and aborts its open transaction, so between reading the last anchor (as a
// read_committed consumer) and committing the next one, no other appender can commit: two
// appenders in different processes never fork the chain (the fenced one's commit fails, nothing
// written); appenders of the same topic in one process take turns. The anchor counts once the
// commit returns (acks=all: the in-sync replicas have it). The fencing is Kafka's (KIP-98);
// librdkafka's mock cluster, which factum's tests use, does not fence, so the tests check the
// turns within a process and a fenced commit (injected), not a real broker's fencing.
//
// Errors: KafkaError (a factum::Error) when the cluster cannot be reached, does not answer within
// `timeout`, or refuses; InvalidArgument for a topic without exactly one partition or a refused
// property; AnchorError naming the topic and offset of a record that is not an anchor.
//
// Thread-safety: a KafkaAnchorSink may be shared between threads; each call uses clients of its
// own (the store anchors rarely: once every thousand events or minute by default).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "factum/eventstore/anchor.hpp"

namespace factum::kafka {

struct AnchorTopicOptions {
  // The topic the anchors go to; it must exist with exactly one partition. Required.
  std::string topic;
  // librdkafka properties of every client (bootstrap.servers at least; security.protocol,
  // sasl.*, ...). transactional.id, enable.idempotence, acks and isolation.level are the sink's
  // to set and refused here. Default: none.
  std::map<std::string, std::string> kafka;
  // The transactional id of the appending producer: shared by every appender of this topic's
  // anchors, never used by anything else. Default: "factum-anchors:<topic>".
  std::string transactional_id;
  // Each call ends within this (KafkaError otherwise). Default: 10 seconds.
  std::chrono::milliseconds timeout{10000};
};

class KafkaAnchorSink final : public AnchorSink {
 public:
  // Checks the options (InvalidArgument); talks to the cluster only when called.
  explicit KafkaAnchorSink(AnchorTopicOptions options);
  Anchor append(const std::function<Anchor(const std::optional<Anchor>& last)>& make) override;
  // Reads the partition's last records only.
  std::optional<Anchor> last() override;
  std::vector<Anchor> anchors() override;

 private:
  std::shared_ptr<const AnchorTopicOptions> options_;
};

}  // namespace factum::kafka
