// samples/orders/kafka_outbox.hpp — the outbox's second channel: the order events published to
// a Kafka topic through factum::kafka::Relay (docs/kafka.md), from the durable checkpoint
// "kafka-relay:orders-to-kafka" kept in the store's own file. The e-mails tell customers; the
// topic tells other services (a warehouse, billing) everything that happened to an order.
//
//   orders::KafkaTarget target;
//   target.brokers = "broker-1:9092";
//   orders::KafkaPublication p = orders::publish_to_kafka(store, target);
//   // p.published events confirmed by the broker; p.checkpoint == p.head
//
// Each event of the category `order` becomes one record: key = stream id ("order-o-7"), value =
// payload, the event id, type and position as headers. Delivery is at least once; the
// checkpoint moves only past events the broker confirmed, so a failed run loses nothing and the
// next one publishes from where it stopped.
//
// Built with the Kafka bridge only (librdkafka found by pkg-config); without it
// kafka_available() is false and the calls throw Error saying so (kafka_missing.cpp).
// Thread-safety: one publication per store at a time (the relay's checkpoint has one writer).
#pragma once

#include <factum/factum.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>

namespace orders {

// The relay's name: its checkpoint is the row "kafka-relay:orders-to-kafka" of
// factum_checkpoints.
inline constexpr const char* kKafkaRelayName = "orders-to-kafka";
// The demo's relay (demo --kafka-mock) into a mock cluster that is gone when the demo ends: a
// checkpoint of its own, removed at the end, so that the demo never marks an event as published
// that the real outbox's relay has not published.
inline constexpr const char* kKafkaDemoRelayName = "orders-demo-kafka-mock";
// The topic the order events go to unless --topic says otherwise.
inline constexpr const char* kDefaultKafkaTopic = "orders";

// True when this program was built with the Kafka bridge.
bool kafka_available() noexcept;
// Throws Error "<option>: this factum-orders was built without the Kafka bridge ..." unless
// kafka_available(). Commands call it before they open the store.
void require_kafka(std::string_view option);

// Where to publish.
struct KafkaTarget {
  std::string brokers;                     // bootstrap.servers, HOST:PORT[,HOST:PORT...]
  std::string topic = kDefaultKafkaTopic;  // the topic
  // RelayOptions::delivery_timeout: how long a broker may take to confirm a record.
  std::chrono::milliseconds timeout{30000};
  // The relay's name: its checkpoint is the row "kafka-relay:<relay>" of factum_checkpoints.
  std::string relay = kKafkaRelayName;
};

// What a publication did.
struct KafkaPublication {
  std::uint64_t published = 0;  // events confirmed by the broker in this run
  factum::Position checkpoint = 0;
  factum::Position head = 0;
};

// Publishes every event of the category `order` after the relay's checkpoint to
// `target.topic`, and waits for the broker to confirm them. Throws Error naming the first event
// not confirmed (the checkpoint stays before it; nothing in the store is lost) or when the
// program was built without the Kafka bridge; factum::Error for a bad broker list.
KafkaPublication publish_to_kafka(factum::EventStore& store, const KafkaTarget& target);

// The demo's finale (demo --kafka-mock): starts librdkafka's in-process mock cluster, publishes
// the order events through publish_to_kafka as the relay kKafkaDemoRelayName, publishes again
// (nothing new: the checkpoint is at the head), reads the topic back with a consumer and prints
// a summary checked against the store: records per partition, distinct event ids, records equal
// to their stored event. Removes the demo relay's checkpoint at the end; the outbox's own
// (kKafkaRelayName) is never touched. Throws Error without the Kafka bridge, or when the mock
// cluster cannot be started.
void run_kafka_mock_demo(factum::EventStore& store, std::ostream& out);

}  // namespace orders
