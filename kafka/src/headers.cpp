#include "headers.hpp"

#include <array>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "factum/kafka/headers.hpp"

namespace factum::kafka::detail {
namespace {

void add(rd_kafka_headers_t& headers, const char* name, std::string_view value) {
  librdkafka().rd_kafka_header_add(&headers, name, -1, value.data(),
                                   static_cast<ssize_t>(value.size()));
}

// A number as decimal text, without allocating (rd_kafka_header_add copies it).
void add_number(rd_kafka_headers_t& headers, const char* name, std::uint64_t value) {
  std::array<char, 24> text{};
  const auto end = std::to_chars(text.data(), text.data() + text.size(), value).ptr;
  add(headers, name, std::string_view(text.data(), static_cast<std::size_t>(end - text.data())));
}

void add_id(rd_kafka_headers_t& headers, const char* name, const std::optional<EventId>& id) {
  if (id) add(headers, name, id->to_string());
}

}  // namespace

Headers event_headers(const EventView& event) {
  Headers headers(librdkafka().rd_kafka_headers_new(8));
  add(*headers, kEventIdHeader, event.id.to_string());
  add(*headers, kTypeHeader, event.type);
  add_number(*headers, kSchemaVersionHeader, event.schema_version);
  add_number(*headers, kPositionHeader, event.position);
  add_number(*headers, kStreamVersionHeader, event.stream_version);
  add_id(*headers, kCorrelationIdHeader, event.correlation_id);
  add_id(*headers, kCausationIdHeader, event.causation_id);
  add_id(*headers, kCompensatesHeader, event.compensates);
  return headers;
}

}  // namespace factum::kafka::detail
