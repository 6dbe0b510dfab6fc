// What the relay refuses among its options, and how it configures its producer.
#pragma once

#include <cstddef>
#include <string>

#include "client.hpp"
#include "factum/eventstore/store_options.hpp"
#include "factum/kafka/relay.hpp"

namespace factum::kafka::detail {

// "factum: kafka: relay '<name>'" (the name escaped), the start of the relay's messages.
std::string relay_prefix(const RelayOptions& options);

// The largest Kafka record (key, value and headers, as librdkafka counts them against
// message.max.bytes) an event of a store opened with `store` can make: the payload limit, the
// longest stream id, and room for the headers (whose longest value, the type, is 256 bytes).
std::size_t max_record_bytes(const StoreOptions& store);

// Throws InvalidArgument, naming the option and what to give instead, for options the relay
// cannot keep its promises with: an empty name or topic, a zero batch_size, max_in_flight or
// delivery_timeout, a property that weakens the producer's guarantees (enable.idempotence,
// acks, enable.gapless.guarantee given other values), a property that is the relay's to set
// (message.timeout.ms, transactional.id), a message.max.bytes below max_record_bytes(store).
void check_relay_options(const RelayOptions& options, const StoreOptions& store);

// The producer's configuration: options.kafka, then what the relay's guarantees need
// (docs/kafka.md, "Delivery guarantee"): idempotence with acks=all, a failed produce request
// that would leave a gap made a fatal error (enable.gapless.guarantee), records that never
// expire by themselves (message.timeout.ms=0: the relay keeps delivery_timeout itself), and a
// topic the cluster does not know reported as such within half of delivery_timeout, and
// message.max.bytes at least `max_record` (librdkafka's default, 1000000, refused every
// event over about 1 MB for good, though the store takes payloads up to 4 MiB).
Conf relay_producer_conf(const RelayOptions& options, std::size_t max_record);

}  // namespace factum::kafka::detail
