#include "headers.hpp"

#include <optional>
#include <string>

#include "factum/kafka/headers.hpp"

namespace factum::kafka::detail {
namespace {

void add(rd_kafka_headers_t& headers, const char* name, const std::string& value) {
  rd_kafka_header_add(&headers, name, -1, value.data(), static_cast<ssize_t>(value.size()));
}

void add_id(rd_kafka_headers_t& headers, const char* name, const std::optional<EventId>& id) {
  if (id) add(headers, name, id->to_string());
}

}  // namespace

Headers event_headers(const RecordedEvent& event) {
  Headers headers(rd_kafka_headers_new(8));
  add(*headers, kEventIdHeader, event.id.to_string());
  add(*headers, kTypeHeader, event.type);
  add(*headers, kSchemaVersionHeader, std::to_string(event.schema_version));
  add(*headers, kPositionHeader, std::to_string(event.position));
  add(*headers, kStreamVersionHeader, std::to_string(event.stream_version));
  add_id(*headers, kCorrelationIdHeader, event.metadata.correlation_id);
  add_id(*headers, kCausationIdHeader, event.metadata.causation_id);
  add_id(*headers, kCompensatesHeader, event.metadata.compensates);
  return headers;
}

}  // namespace factum::kafka::detail
