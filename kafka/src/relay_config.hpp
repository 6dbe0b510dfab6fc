// What the relay refuses among its options, and how it configures its producer.
#pragma once

#include <string>

#include "client.hpp"
#include "factum/kafka/relay.hpp"

namespace factum::kafka::detail {

// "factum: kafka: relay '<name>'" (the name escaped), the start of the relay's messages.
std::string relay_prefix(const RelayOptions& options);

// Throws InvalidArgument, naming the option and what to give instead, for options the relay
// cannot keep its promises with: an empty name or topic, a zero batch_size or delivery_timeout,
// a property that weakens the producer's guarantees (enable.idempotence, acks,
// enable.gapless.guarantee given other values), a property that is the relay's to set
// (message.timeout.ms, transactional.id).
void check_relay_options(const RelayOptions& options);

// The producer's configuration: options.kafka, then what the relay's guarantees need
// (docs/kafka.md, "Delivery guarantee"): idempotence with acks=all, a failed produce request
// that would leave a gap made a fatal error (enable.gapless.guarantee), records that never
// expire by themselves (message.timeout.ms=0: the relay keeps delivery_timeout itself), and a
// topic the cluster does not know reported as such within half of delivery_timeout.
Conf relay_producer_conf(const RelayOptions& options);

}  // namespace factum::kafka::detail
