#include "rows.hpp"

#include <algorithm>
#include <cstring>

#include "hash_chain.hpp"

namespace factum::detail {
namespace {

enum Col {
  kPosition,
  kStreamId,
  kStreamVersion,
  kEventId,
  kType,
  kSchemaVersion,
  kPayload,
  kCorrelation,
  kCausation,
  kCompensates,
  kActor,
  kExtra,
  kRecordedAt,
  kHash,
  kPreviousHash
};

bool is_blob_of(const Statement& s, int col, std::size_t size) {
  return s.column_type(col) == SQLITE_BLOB && s.column_blob(col).size() == size;
}

bool is_positive_int(const Statement& s, int col) {
  return s.column_type(col) == SQLITE_INTEGER && s.column_int(col) > 0;
}

}  // namespace

bool read_optional_id(const Statement& s, int col, std::optional<EventId>& out) {
  if (s.column_type(col) == SQLITE_NULL) {
    out.reset();
    return true;
  }
  if (!is_blob_of(s, col, 16)) return false;
  EventId::Bytes b{};
  std::memcpy(b.data(), s.column_blob(col).data(), b.size());
  out = EventId(b);
  return true;
}

const char* decode_view(const Statement& s, EventView& out) {
  out.position = static_cast<Position>(s.column_int(kPosition));
  if (!is_positive_int(s, kPosition)) return "its position is not a positive integer";
  if (s.column_type(kStreamId) != SQLITE_TEXT) return "its stream id is missing";
  out.stream_id = s.column_text(kStreamId);
  if (!is_positive_int(s, kStreamVersion)) return "its stream version is not a positive integer";
  out.stream_version = static_cast<StreamVersion>(s.column_int(kStreamVersion));
  std::optional<EventId> id;
  if (!read_optional_id(s, kEventId, id) || !id) return "its event id is not 16 bytes";
  out.id = *id;
  if (s.column_type(kType) != SQLITE_TEXT) return "its type is not text";
  out.type = s.column_text(kType);
  const std::int64_t schema = s.column_int(kSchemaVersion);
  if (s.column_type(kSchemaVersion) != SQLITE_INTEGER || schema < 0 || schema > UINT32_MAX) {
    return "its schema version is not a 32-bit unsigned integer";
  }
  out.schema_version = static_cast<std::uint32_t>(schema);
  if (s.column_type(kPayload) != SQLITE_BLOB) return "its payload is not a blob";
  out.payload = s.column_blob(kPayload);
  if (!read_optional_id(s, kCorrelation, out.correlation_id) ||
      !read_optional_id(s, kCausation, out.causation_id) ||
      !read_optional_id(s, kCompensates, out.compensates)) {
    return "a metadata event id is not 16 bytes";
  }
  const int actor_type = s.column_type(kActor);
  if (actor_type != SQLITE_NULL && actor_type != SQLITE_TEXT) return "its actor is not text";
  out.actor = s.column_text(kActor);
  out.encoded_values = {};
  if (s.column_type(kExtra) != SQLITE_NULL) {
    if (s.column_type(kExtra) != SQLITE_BLOB) return "its metadata key/values are malformed";
    out.encoded_values = s.column_blob(kExtra);
    if (!walk_values(out.encoded_values, [](std::string_view, std::string_view) {})) {
      return "its metadata key/values are malformed";
    }
  }
  if (s.column_type(kRecordedAt) != SQLITE_INTEGER) return "its recorded-at time is not an integer";
  out.recorded_at = Timestamp(std::chrono::microseconds(s.column_int(kRecordedAt)));
  if (!is_blob_of(s, kHash, out.hash.size())) return "its hash is not 32 bytes";
  std::memcpy(out.hash.data(), s.column_blob(kHash).data(), out.hash.size());
  if (out.position != 1 && is_blob_of(s, kPreviousHash, out.previous_hash.size())) {
    std::memcpy(out.previous_hash.data(), s.column_blob(kPreviousHash).data(),
                out.previous_hash.size());
  } else {
    // Position 1, a previous event that is missing or damaged (verify names it), or a query
    // that selects NULL here because its caller carries the previous hash itself.
    out.previous_hash = Hash{};
  }
  return nullptr;
}

std::string decode_row(const Statement& s, RecordedEvent& out) {
  EventView v;
  if (const char* problem = decode_view(s, v)) {
    out.position = v.position;
    return problem;
  }
  assign(out, v);
  return {};
}

void assign(RecordedEvent& out, const EventView& v) {
  out.position = v.position;
  out.stream_id.assign(v.stream_id);
  out.stream_version = v.stream_version;
  out.id = v.id;
  out.type.assign(v.type);
  out.schema_version = v.schema_version;
  out.payload.assign(v.payload.begin(), v.payload.end());
  Metadata& m = out.metadata;
  m.correlation_id = v.correlation_id;
  m.causation_id = v.causation_id;
  m.compensates = v.compensates;
  m.actor.assign(v.actor);
  m.values.clear();
  if (!v.encoded_values.empty() && !decode_values(v.encoded_values, m.values)) {
    throw CorruptEventError(v.position, "its metadata key/values are malformed");
  }
  out.recorded_at = v.recorded_at;
  out.hash = v.hash;
  out.previous_hash = v.previous_hash;
}

void throw_corrupt(const Statement& s, const char* problem) {
  const std::int64_t position = s.column_int(kPosition);
  if (position < 1) {  // a row outside the chain: named by its stored value, reported as 0
    throw CorruptEventError(0, "the row at position " + std::to_string(position) +
                                   " lies outside the chain (" + problem + ")");
  }
  throw CorruptEventError(static_cast<Position>(position), problem);
}

void read_row(const Statement& s, RecordedEvent& out) {
  const std::string problem = decode_row(s, out);
  if (!problem.empty()) throw_corrupt(s, problem.c_str());
}

void read_view(const Statement& s, EventView& out) {
  if (const char* problem = decode_view(s, out)) throw_corrupt(s, problem);
}

Head head_of(Position position, std::span<const std::byte> hash) {
  Head h;
  h.position = position;
  if (hash.size() != h.hash.size()) throw CorruptEventError(position, "its hash is not 32 bytes");
  std::memcpy(h.hash.data(), hash.data(), h.hash.size());
  return h;
}

Head read_head(Statement& s) {
  StatementScope scope(s);
  if (!s.step("reading the head of the log")) return Head{};
  return head_of(static_cast<Position>(s.column_int(0)), s.column_blob(1));
}

}  // namespace factum::detail
