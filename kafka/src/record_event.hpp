// The event an ingested Kafka record becomes (factum/kafka/ingest.hpp lists the fields).
#pragma once

#include "factum/kafka/librdkafka.hpp"

#include <cstdint>
#include <string>

#include "factum/eventstore/event.hpp"

namespace factum::kafka::detail {

// A UUID (version 8) from SHA-256 of topic, partition and offset: the same record, the same id.
EventId derived_id(const std::string& topic, std::int32_t partition, std::int64_t offset);
// The event of `record`, a function of the record alone.
EventData record_event(const rd_kafka_message_t& record, const std::string& topic,
                       const std::string& default_type);

}  // namespace factum::kafka::detail
