#include "sqlite/rows.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "hash_chain.hpp"

namespace factum::detail {
namespace {

// Each column's type and value are read once, through its ColumnValue: every
// sqlite3_column_* call goes through SQLite's API checks, and a row is read for every event a
// caller reads.
using Column = Statement::ColumnValue;

// A column that must be a blob of `size` bytes (an id, a hash): copied into `out`.
template <std::size_t N>
bool read_fixed_blob(Column c, std::array<std::uint8_t, N>& out) {
  if (c.type() != SQLITE_BLOB) return false;
  const auto b = c.blob();
  if (b.size() != N) return false;
  std::memcpy(out.data(), b.data(), N);
  return true;
}

// A positive integer column; 0 when it is not one.
std::int64_t positive_int(Column c) {
  if (c.type() != SQLITE_INTEGER) return 0;
  const std::int64_t v = c.as_int();
  return v > 0 ? v : 0;
}

bool read_optional_id(Column c, std::optional<EventId>& out) {
  if (c.type() == SQLITE_NULL) {
    out.reset();
    return true;
  }
  EventId::Bytes bytes{};
  if (!read_fixed_blob(c, bytes)) return false;
  out = EventId(bytes);
  return true;
}

}  // namespace

const char* decode_view(const Statement& s, EventView& out) {
  const std::int64_t position = positive_int(s.column(kPosition));
  out.position = static_cast<Position>(position);
  if (position == 0) {
    out.position = static_cast<Position>(s.column_int(kPosition));
    return "its position is not a positive integer";
  }
  const Column stream_id = s.column(kStreamId);
  if (stream_id.type() != SQLITE_TEXT) return "its stream id is missing";
  out.stream_id = stream_id.text();
  const std::int64_t version = positive_int(s.column(kStreamVersion));
  if (version == 0) return "its stream version is not a positive integer";
  out.stream_version = static_cast<StreamVersion>(version);
  EventId::Bytes id{};
  if (!read_fixed_blob(s.column(kEventId), id)) return "its event id is not 16 bytes";
  out.id = EventId(id);
  const Column type = s.column(kType);
  if (type.type() != SQLITE_TEXT) return "its type is not text";
  out.type = type.text();
  const Column schema_version = s.column(kSchemaVersion);
  if (schema_version.type() != SQLITE_INTEGER) {
    return "its schema version is not a 32-bit unsigned integer";
  }
  const std::int64_t schema = schema_version.as_int();
  if (schema < 0 || schema > UINT32_MAX) {
    return "its schema version is not a 32-bit unsigned integer";
  }
  out.schema_version = static_cast<std::uint32_t>(schema);
  const Column payload = s.column(kPayload);
  if (payload.type() != SQLITE_BLOB) return "its payload is not a blob";
  out.payload = payload.blob();
  if (!read_optional_id(s.column(kCorrelation), out.correlation_id) ||
      !read_optional_id(s.column(kCausation), out.causation_id) ||
      !read_optional_id(s.column(kCompensates), out.compensates)) {
    return "a metadata event id is not 16 bytes";
  }
  const Column actor = s.column(kActor);
  switch (actor.type()) {
    case SQLITE_NULL:
      out.actor = {};
      break;
    case SQLITE_TEXT:
      out.actor = actor.text();
      break;
    default:
      return "its actor is not text";
  }
  out.encoded_values = {};
  const Column extra = s.column(kExtra);
  switch (extra.type()) {
    case SQLITE_NULL:
      break;
    case SQLITE_BLOB:
      out.encoded_values = extra.blob();
      if (!walk_values(out.encoded_values, [](std::string_view, std::string_view) {})) {
        return "its metadata key/values are malformed";
      }
      break;
    default:
      return "its metadata key/values are malformed";
  }
  const Column recorded_at = s.column(kRecordedAt);
  if (recorded_at.type() != SQLITE_INTEGER) return "its recorded-at time is not an integer";
  out.recorded_at = Timestamp(std::chrono::microseconds(recorded_at.as_int()));
  if (!read_fixed_blob(s.column(kHash), out.hash)) return "its hash is not 32 bytes";
  // Position 1, a previous event that is missing or damaged (verify names it), or a query that
  // selects NULL here because its caller carries the previous hash itself: zeros.
  if (position == 1 || !read_fixed_blob(s.column(kPreviousHash), out.previous_hash)) {
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

Head read_head(Statement& s) {
  StatementScope scope(s);
  if (!s.step("reading the head of the log")) return Head{};
  return head_of(static_cast<Position>(s.column_int(0)), s.column_blob(1));
}

}  // namespace factum::detail
