// factum/kafka/headers.hpp — the Kafka record headers the bridge writes and reads.
//
// The relay writes each event as one record: key = stream id, value = payload bytes, and these
// headers, each a UTF-8 text value (numbers in decimal, ids in the canonical 8-4-4-4-12 UUID
// form). Headers of absent metadata (no correlation, say) are left out. Ingest reads
// kEventId, when present, as the appended event's id (docs/kafka.md).
//
// Thread-safety: constants only.
#pragma once

namespace factum::kafka {

inline constexpr const char* kEventIdHeader = "factum-event-id";
inline constexpr const char* kTypeHeader = "factum-type";
inline constexpr const char* kSchemaVersionHeader = "factum-schema-version";
inline constexpr const char* kPositionHeader = "factum-position";
inline constexpr const char* kStreamVersionHeader = "factum-stream-version";
inline constexpr const char* kCorrelationIdHeader = "factum-correlation-id";
inline constexpr const char* kCausationIdHeader = "factum-causation-id";
inline constexpr const char* kCompensatesHeader = "factum-compensates";

}  // namespace factum::kafka
