// factum/kafka/ingest.hpp — appends the records of a Kafka topic to the store ("topics in").
//
//   factum::kafka::IngestOptions options;
//   options.name = "payments-in";
//   options.topic = "payments";
//   options.kafka = {{"bootstrap.servers", "broker-1:9092"}};
//   options.stream_for_key = [](std::string_view key) { return "payment-" + std::string(key); };
//   factum::kafka::Ingest ingest(store, options);
//   std::jthread t([&](std::stop_token stop) { ingest.run(stop); });
//
// Each record becomes one event, appended (ExpectedVersion::any) to the stream that
// stream_for_key names for the record's key:
//   id             the factum-event-id header when it holds a UUID (records the Relay wrote),
//                  else a UUID (version 8) derived from SHA-256 of topic, partition and offset
//   type           the factum-type header, else options.event_type
//   schema version the factum-schema-version header, else 1
//   payload        the record's value
//   metadata       correlation and causation ids and the compensated event's id from their
//                  headers (when UUIDs); the key/value "kafka.topic" = the topic
// Every field is a function of the record alone, so consuming a record again gives the same
// event, which the store recognises as a retry and does not write again.
//
// Guarantee (effectively once into the store): the partitions' next offsets are written in the
// same transaction as the appended events (table factum_kafka_offsets, on_appending; the records
// of one poll share one transaction, an append_multi with one part per record), and the
// ingest starts each partition at its stored offset. A crash, a restart, or reading a partition
// again from an earlier offset (another ingest name, a reset) therefore adds no duplicate.
//
// Without consumer_group the ingest assigns itself every partition of the topic: run one ingest
// per name. With consumer_group, several ingests of one name and one store (in one process or
// many) subscribe to the topic as one Kafka consumer group and the group coordinator spreads
// the partitions over them; each starts a partition it is given at the stored offset, and drops
// the records of a partition taken from it that it polled but had not appended yet (the next
// owner reads them from the stored offset). A stored offset only moves forward, so an ingest
// that appends late after losing a partition (it stalled past max.poll.interval.ms, or lost the
// broker) writes only retries and cannot move the new owner back. A rebalance or a crash
// therefore neither loses nor duplicates a record in the store.
//
// No call waits for the cluster longer than IngestOptions::broker_timeout (librdkafka 2.0.2's
// rd_kafka_query_watermark_offsets, which can wait for ever once the broker is gone, is not
// used), and the waits of the constructor and end_offsets end early on a stop request.
//
// Thread-safety: one thread consumes (poll_once or run) at a time; offsets(), end_offsets(),
// known_end_offsets() and assigned_partitions() may be called from any thread. The store may be
// used by other threads meanwhile.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event_store.hpp"
#include "factum/kafka/errors.hpp"

namespace factum::kafka {

struct IngestOptions {
  // Names the stored offsets (rows of factum_kafka_offsets). Required.
  std::string name;
  // The topic to consume. Required.
  std::string topic;
  // librdkafka consumer properties (bootstrap.servers at least). group.id defaults to
  // "factum-ingest-<name>"; enable.auto.commit and enable.auto.offset.store are set to false
  // (offsets live in the store). auto.offset.reset defaults to "error": a stored offset the
  // partition no longer holds (its records deleted by retention before they were ingested)
  // makes every poll_once throw KafkaError naming the partition and the offset, instead of
  // skipping the lost records silently; give "earliest" to accept the loss and go on.
  // Default: none.
  std::map<std::string, std::string> kafka;
  // The stream of a record, from its key (the key may be empty). Required; an id the store
  // refuses makes poll_once throw InvalidArgument.
  std::function<std::string(std::string_view key)> stream_for_key;
  // The event type of a record without a factum-type header. Default "kafka.Record".
  std::string event_type = "kafka.Record";
  // How long poll_once waits for the first record. Default 100 ms.
  std::chrono::milliseconds poll_timeout{100};
  // How long the constructor waits for the cluster to name the topic's partitions, end_offsets()
  // for their ends, and poll_once (with consumer_group) for the consumer to seek back after a
  // failed append. Must be > 0. Default 10 s.
  std::chrono::milliseconds broker_timeout{10000};
  // At most this many records per poll_once. Default 500.
  std::size_t max_records = 500;
  // Join the Kafka consumer group group.id (subscribe) instead of assigning every partition:
  // ingests of the same name on the same store share the topic's partitions, and take over
  // those of an ingest that closes, crashes or stalls. Partitions are assigned in the rebalance
  // callback, each at its stored offset (never Kafka's committed offsets). Both the eager
  // assignors (range, roundrobin: librdkafka's default) and cooperative-sticky work; do not mix
  // them in one group. Rebalances happen inside poll_once, on its thread (a failure to read the
  // stored offsets then is thrown by poll_once). group.instance.id (static membership) is
  // passed through untested. Default false.
  bool consumer_group = false;
};

class Ingest {
 public:
  // Creates the offsets table when missing, creates the consumer and assigns it every partition
  // of the topic at its stored offset (the beginning when none is stored), or with
  // consumer_group subscribes to the topic (partitions come in poll_once). It waits up to
  // broker_timeout for the topic's partitions, and less when `stop` is requested meanwhile. The
  // store must outlive the ingest; the destructor leaves the group (its partitions go to the
  // others). Throws InvalidArgument (a missing name, topic or stream_for_key, a bad property, a
  // broker_timeout of 0), KafkaError (the consumer cannot be created; the topic's partitions
  // cannot be read: the topic does not exist, no broker answered within broker_timeout, or code
  // RD_KAFKA_RESP_ERR__INTR when `stop` ended the wait; the subscription is refused),
  // StorageError.
  Ingest(EventStore& store, IngestOptions options, std::stop_token stop = {});
  ~Ingest();
  Ingest(const Ingest&) = delete;
  Ingest& operator=(const Ingest&) = delete;

  // Consumes up to max_records records (waiting up to poll_timeout for the first) and appends
  // them, with their partitions' next offsets, in one transaction (append_multi, one part per
  // record; a repeated event id starts another transaction). When that transaction fails, the
  // records are appended one by one, each in its own transaction, so the records before a bad
  // one are stored and the error is the bad record's. Returns how many records were handled
  // (appended, or recognised as stored already). Throws what append throws, of the same type,
  // its message naming the record (topic, partition, offset, key) and the offset that would skip
  // it (InvalidArgument for a stream id the store refuses, DuplicateEventError for an id stored
  // with other content or in another stream, StorageError); the consumer then goes back to the
  // stored offsets, so the failed record is read again. Throws KafkaError for an error the consumer
  // reports (a broker out of reach, an unknown topic; librdkafka recovers from most by itself,
  // so poll again). With consumer_group, a rebalance runs inside this call; when the stored
  // offsets of newly assigned partitions cannot be read it throws StorageError, and the next
  // call tries to start those partitions again.
  std::size_t poll_once();

  // Calls poll_once until `stop` is requested. A failure (any factum::Error) is retried after a
  // pause of poll_timeout. Throws only what is not a factum::Error.
  void run(std::stop_token stop);

  // The stored next offset of each partition of the topic (partitions without one are absent).
  // Throws StorageError.
  std::map<std::int32_t, std::int64_t> offsets() const;

  // The end of each partition of the topic, asked of the partitions' leaders (the high
  // watermark: the offset the next record produced will get). The records still to ingest are
  // end_offsets()[p] - offsets()[p] (from the start of the partition when no offset is stored).
  // With consumer_group, still every partition of the topic (offsets() holds those of every
  // instance). Waits up to broker_timeout, or `timeout`, in all, and less when `stop` is
  // requested. Throws KafkaError: no answer in time, a partition's leader refused (code says
  // why), or RD_KAFKA_RESP_ERR__INTR when `stop` ended the wait.
  std::map<std::int32_t, std::int64_t> end_offsets() const;
  std::map<std::int32_t, std::int64_t> end_offsets(std::chrono::milliseconds timeout,
                                                   std::stop_token stop = {}) const;

  // The end of each partition as the consumer last heard it from the partition's leader (its
  // fetch responses carry it), without asking: partitions it has not fetched from yet are
  // absent, and an end may be behind by the records produced since. Never waits; throws nothing.
  // For progress reports that must not wait for a broker that may be gone.
  std::map<std::int32_t, std::int64_t> known_end_offsets() const;

  // The partitions this ingest reads now, ascending: every partition of the topic, or with
  // consumer_group its share (empty before the group gave it one). Throws nothing.
  std::vector<std::int32_t> assigned_partitions() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace factum::kafka
