// factum/kafka/relay.hpp — publishes the log (or one category of it) to a Kafka topic, from a
// durable checkpoint kept in the store's own database (change data capture, "relay out").
//
//   factum::kafka::RelayOptions options;
//   options.name = "orders-to-kafka";
//   options.topic = "orders";
//   options.category = "order";                        // "" relays the whole log
//   options.kafka = {{"bootstrap.servers", "broker-1:9092,broker-2:9092"}};
//   factum::kafka::Relay relay(store, options);
//   std::jthread t([&](std::stop_token stop) { relay.run(stop); });
//
// Each event becomes one record: key = stream id, value = payload, headers as headers.hpp
// lists. The producer is idempotent (enable.idempotence=true, acks=all), so records of one
// key land in their partition in log order, without the producer's own retries duplicating
// them.
//
// Guarantee (at least once): the checkpoint moves only past events whose delivery report
// succeeded, and only over an unbroken prefix of them in position order; it never passes an
// unconfirmed event. After a crash, or a failed batch, the relay publishes again from the
// checkpoint: at most the unconfirmed tail is published twice, never an event skipped.
// Consumers drop repeats by the factum-event-id header.
//
// Order (of first appearances): once a record fails, nothing queued behind it reaches the
// topic before it is published again. Records never expire one by one inside the producer
// (message.timeout.ms=0); the relay keeps delivery_timeout itself, for all of them at once. A
// produce request that fails for good stops the producer (enable.gapless.guarantee), and on any
// failure, deadline or stop the relay withdraws every record not yet confirmed (rd_kafka_purge)
// and uses a new producer for the next batch. So in each partition the records of one producer
// are a gap-free prefix of what it was given, and each event's first appearance comes after
// those of the events before it in its stream (docs/kafka.md, "Delivery guarantee").
//
// The checkpoint is the row "kafka-relay:<name>" of factum_checkpoints (projections'
// CheckpointStore), so it is read and moved like a projection's.
//
// Transactional publishing (RelayOptions::transactional_id set): each batch is one Kafka
// transaction, committed before the checkpoint moves past it, so a read_committed consumer sees
// a batch all or nothing. It is still at least once, not exactly once: the checkpoint lives in
// the store, not in the Kafka transaction, so a crash (or a failed checkpoint write) between the
// commit and the checkpoint write publishes the committed batch again, in a new transaction.
// A transaction the broker aborts (an abortable error) throws DeliveryError and leaves the
// checkpoint where it was: the next batch publishes the same events again, and read_committed
// consumers never see the aborted ones. A fatal error (another producer with the same
// transactional id fenced this one, say) throws KafkaError and leaves the relay unusable: every
// later call throws KafkaError, run() included; destroy it and create a new one. The
// transactional id must belong to this relay alone: a second relay started with it fences the
// first.
//
// Thread-safety: one thread publishes (publish_once or run) at a time; status() may be called
// from any thread meanwhile. Several relays may share one store (distinct names).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stop_token>
#include <string>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_store.hpp"
#include "factum/kafka/errors.hpp"

namespace factum::kafka {

struct RelayOptions {
  // Names the relay's checkpoint ("kafka-relay:<name>" in factum_checkpoints). Required.
  std::string name;
  // The topic every event is published to. Required.
  std::string topic;
  // The category to relay ("order" for "order-17"); "" (the default) relays the whole log.
  std::string category;
  // librdkafka configuration properties (bootstrap.servers at least; security.protocol,
  // sasl.*, ...). enable.idempotence=true, acks=all and enable.gapless.guarantee=true are set by
  // the relay, and giving them another value is refused; message.timeout.ms (and its alias
  // delivery.timeout.ms) and transactional.id are the relay's to set and refused (give
  // delivery_timeout and transactional_id). Default: none.
  std::map<std::string, std::string> kafka;
  // At most this many events are published per publish_once. Default 1000.
  std::size_t batch_size = 1000;
  // publish_available and run hand batches over while fewer than this many records after the
  // checkpoint are handed over, confirmed or not (a batch is cut to fit): the most events a
  // crash, or a failed batch, makes the relay publish again. Must be > 0. Default 20000.
  std::size_t max_in_flight = 20000;
  // run() waits this long when there is nothing to publish, or after a failed batch.
  // Default 200 ms.
  std::chrono::milliseconds idle_wait{200};
  // How long a record handed to the producer may wait for the broker's confirmation. When the
  // oldest unconfirmed record has waited this long, the relay withdraws it and every record after
  // it, and the batch fails (DeliveryError, code RD_KAFKA_RESP_ERR__MSG_TIMED_OUT). It also
  // bounds how long a full producer queue is waited out. A topic the cluster does not have is
  // reported as such (code RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) after half of it, or 30 s
  // (topic.metadata.propagation.max.ms, unless given). Must be > 0. Default 300 s (librdkafka's
  // default message.timeout.ms).
  std::chrono::milliseconds delivery_timeout{300000};
  // The producer's transactional.id; "" (the default) publishes without transactions. When set,
  // each batch is one Kafka transaction (see the top of this file) and batches never overlap.
  // Giving transactional.id among `kafka` instead is refused. Unique per relay: a second
  // producer with the same id fences this one.
  std::string transactional_id;
  // With transactional_id: how long the constructor waits for init_transactions, and each
  // commit or abort for the broker's answer. Default 30 s.
  std::chrono::milliseconds transaction_timeout{30000};
};

// A snapshot of a relay's progress.
struct RelayStatus {
  Position checkpoint = 0;      // the last position whose delivery is confirmed (0: none)
  Position head = 0;            // the store's head position when status() read it
  std::uint64_t lag = 0;        // head - checkpoint, in positions (for a category, events of
                                // other categories count too)
  std::uint64_t in_flight = 0;  // records handed to the producer, not yet confirmed or failed
  std::uint64_t published = 0;  // events confirmed by this Relay object since it was made
  std::string last_error;       // the last failure's message; "" after a successful batch
};

class Relay {
 public:
  // Loads the checkpoint (creating the checkpoint table when missing) and creates the
  // producer. The store must outlive the relay. Throws InvalidArgument (an empty name or topic,
  // a zero batch_size or delivery_timeout, an unknown or invalid property, enable.idempotence,
  // acks or enable.gapless.guarantee given another value, message.timeout.ms or transactional.id
  // given among the properties), KafkaError (the producer cannot be created; with
  // transactional_id, init_transactions failed or took longer than transaction_timeout),
  // StorageError.
  Relay(EventStore& store, RelayOptions options);
  // Waits up to a few seconds for records still in flight (there are none once publish_once
  // has returned) and closes the producer. Never throws.
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Publishes up to batch_size events after the checkpoint, waits for every one's delivery
  // report (delivery_timeout at most), then moves the checkpoint, durably, past the confirmed
  // prefix of the batch. A full producer queue is waited out (poll and retry), never dropped.
  // Returns how many events were confirmed (0 when there was nothing to publish). Throws
  // DeliveryError naming the first unconfirmed event when one was not confirmed (the checkpoint
  // has moved past the events before it; code() is the failed record's error, or
  // RD_KAFKA_RESP_ERR__MSG_TIMED_OUT for the deadline), CorruptEventError, StorageError.
  //
  // With transactional_id: the batch is one transaction, committed (within transaction_timeout)
  // after every delivery report came; the checkpoint moves past the whole batch only after the
  // commit succeeded. An unconfirmed record or an abortable transaction error aborts the
  // transaction and throws DeliveryError naming the batch's first unconfirmed event (its first
  // event when the commit failed); the checkpoint does not move. A fatal producer error (fenced)
  // throws KafkaError: the relay is unusable from then on (see the top of this file).
  std::size_t publish_once();

  // Publishes every event after the checkpoint (and those appended meanwhile), batch_size at a
  // time. Batches are handed to the producer while fewer than max_in_flight records after the
  // checkpoint are handed over, without waiting for the reports of the batches before (publish_once
  // in a loop waits one round trip per batch). The checkpoint moves, as publish_once moves it, over
  // the oldest batches whose reports are all in, with one write for all of them. Once `stop` is
  // requested, hands over nothing more, gives the records in flight a second to be confirmed,
  // withdraws the others (the next call publishes them again) and returns without an error.
  // Returns how many events were confirmed. Throws what publish_once throws, once every record
  // handed over is settled (the checkpoint has moved past the batches before the failed one;
  // the confirmed events of the batches after it are published again later). With
  // transactional_id the batches do not overlap: one transaction at a time, each as
  // publish_once.
  std::size_t publish_available(std::stop_token stop = {});

  // Calls publish_available until `stop` is requested, waiting idle_wait when there is nothing
  // to publish; a failed batch (any factum::Error) is recorded in status().last_error and retried
  // after idle_wait. Returns when stop is requested (within about idle_wait, or a second when
  // records are in flight: see publish_available). Throws only what is not a factum::Error
  // (std::bad_alloc, say), and, with transactional_id, the KafkaError of a fatal producer error
  // (the relay is unusable).
  void run(std::stop_token stop);

  // The relay's progress. Reads the store's head. Throws StorageError.
  RelayStatus status() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace factum::kafka
