#include "record_event.hpp"

#include <charconv>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

#include "factum/eventstore/errors.hpp"
#include "factum/kafka/headers.hpp"

namespace factum::kafka::detail {
namespace {

std::optional<std::string> header(const rd_kafka_message_t& record, const char* name) {
  rd_kafka_headers_t* headers = nullptr;
  if (librdkafka().rd_kafka_message_headers(&record, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR)
    return {};
  const void* value = nullptr;
  std::size_t size = 0;
  if (librdkafka().rd_kafka_header_get_last(headers, name, &value, &size) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    return {};
  }
  if (value == nullptr) return std::string();
  return std::string(static_cast<const char*>(value), size);
}

// The header as an event id, when it holds a UUID.
std::optional<EventId> header_id(const rd_kafka_message_t& record, const char* name) {
  const auto text = header(record, name);
  if (!text) return {};
  try {
    return EventId::parse(*text);
  } catch (const InvalidArgument&) {
    return {};
  }
}

std::uint32_t schema_version(const rd_kafka_message_t& record) {
  const auto text = header(record, kSchemaVersionHeader);
  std::uint32_t out = 0;
  if (!text) return 1;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), out);
  if (error != std::errc() || end != text->data() + text->size() || out == 0) return 1;
  return out;
}

}  // namespace

EventId derived_id(const std::string& topic, std::int32_t partition, std::int64_t offset) {
  const std::string text = "factum-kafka-ingest\n" + topic + "\n" + std::to_string(partition) +
                           "\n" + std::to_string(offset);
  const Hash digest = sha256(std::as_bytes(std::span(text.data(), text.size())));
  EventId::Bytes bytes{};
  std::memcpy(bytes.data(), digest.data(), bytes.size());
  bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0f) | 0x80);  // version 8
  bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3f) | 0x80);  // RFC 9562 variant
  return EventId(bytes);
}

EventData record_event(const rd_kafka_message_t& record, const std::string& topic,
                       const std::string& default_type) {
  EventData out;
  out.id = header_id(record, kEventIdHeader)
               .value_or(derived_id(topic, record.partition, record.offset));
  out.type = header(record, kTypeHeader).value_or(default_type);
  if (out.type.empty()) out.type = default_type;
  out.schema_version = schema_version(record);
  const auto* value = static_cast<const std::byte*>(record.payload);
  if (value != nullptr) out.payload.assign(value, value + record.len);
  out.metadata.correlation_id = header_id(record, kCorrelationIdHeader);
  out.metadata.causation_id = header_id(record, kCausationIdHeader);
  out.metadata.compensates = header_id(record, kCompensatesHeader);
  out.metadata.values["kafka.topic"] = topic;
  return out;
}

}  // namespace factum::kafka::detail
