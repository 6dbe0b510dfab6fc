#include "postgres/rows.hpp"

#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "event_rows.hpp"  // assign(), shared with SQLite
#include "hash_chain.hpp"

namespace factum::detail::pg {

namespace {

// The id held in `b`; false when it is not 16 bytes (a NULL's length is 0).
bool id_of(std::span<const std::byte> b, EventId& out) {
  EventId::Bytes bytes{};
  if (b.size() != bytes.size()) return false;
  std::memcpy(bytes.data(), b.data(), bytes.size());
  out = EventId(bytes);
  return true;
}

}  // namespace

bool read_id(const PgResult& r, int row, int col, std::optional<EventId>& out) {
  if (r.null(row, col)) {
    out.reset();
    return true;
  }
  EventId id;
  if (!id_of(r.bytes(row, col), id)) return false;
  out = id;
  return true;
}

const char* decode(const PgResult& r, int row, EventView& out, const StreamNames* names) {
  std::int64_t v = 0;
  if (!r.int64(row, kPosition, v) || v < 1) return "its position is not a positive integer";
  out.position = static_cast<Position>(v);
  if (names != nullptr) {
    const auto it = r.int64(row, kStreamId, v) ? names->find(v) : names->end();
    if (it == names->end()) {
      return r.null(row, kStreamId) ? "its stream id is missing" : "its stream key names no stream";
    }
    out.stream_id = it->second;
  } else {
    if (r.null(row, kStreamId)) return "its stream id is missing";
    out.stream_id = r.text(row, kStreamId);
  }
  if (!r.int64(row, kStreamVersion, v) || v < 1) {
    return "its stream version is not a positive integer";
  }
  out.stream_version = static_cast<StreamVersion>(v);
  // The id, like the hash and the previous hash, is read by its length alone (libpq gives a NULL
  // length 0): a PQgetisnull call fewer per column and row.
  if (!id_of(r.bytes(row, kEventId), out.id)) return "its event id is not 16 bytes";
  out.type = r.text(row, kType);
  if (!r.int64(row, kSchemaVersion, v) || v < 0 || v > UINT32_MAX) {
    return "its schema version is not a 32-bit unsigned integer";
  }
  out.schema_version = static_cast<std::uint32_t>(v);
  out.payload = r.bytes(row, kPayload);
  if (!read_id(r, row, kCorrelation, out.correlation_id) ||
      !read_id(r, row, kCausation, out.causation_id) ||
      !read_id(r, row, kCompensates, out.compensates)) {
    return "a metadata event id is not 16 bytes";
  }
  out.actor = r.null(row, kActor) ? std::string_view() : r.text(row, kActor);
  out.encoded_values = {};
  if (!r.null(row, kExtra)) {
    out.encoded_values = r.bytes(row, kExtra);
    if (!walk_values(out.encoded_values, [](std::string_view, std::string_view) {})) {
      return "its metadata key/values are malformed";
    }
  }
  if (!r.int64(row, kRecordedAt, v)) return "its recorded-at time is not an integer";
  out.recorded_at = Timestamp(std::chrono::microseconds(v));
  const auto hash = r.bytes(row, kHash);
  if (hash.size() != out.hash.size()) return "its hash is not 32 bytes";
  std::memcpy(out.hash.data(), hash.data(), out.hash.size());
  const auto previous = r.bytes(row, kPreviousHash);  // NULL: length 0, as any other size
  if (out.position != 1 && previous.size() == out.previous_hash.size()) {
    std::memcpy(out.previous_hash.data(), previous.data(), out.previous_hash.size());
  } else {
    out.previous_hash = Hash{};
  }
  return nullptr;
}

void read_view(const PgResult& r, int row, EventView& out, const StreamNames* names) {
  if (const char* problem = decode(r, row, out, names)) {
    std::int64_t at = 0;
    r.int64(row, kPosition, at);
    if (at < 1) {
      throw CorruptEventError(0, "the row at position " + std::to_string(at) +
                                     " lies outside the chain (" + problem + ")");
    }
    throw CorruptEventError(static_cast<Position>(at), problem);
  }
}

Hash hash_of(std::span<const std::byte> bytes, Position position) {
  Hash h{};
  if (bytes.size() != h.size()) throw CorruptEventError(position, "its hash is not 32 bytes");
  std::memcpy(h.data(), bytes.data(), h.size());
  return h;
}

void read_events(const PgResult& r, std::vector<RecordedEvent>& out) {
  EventView v;
  for (int i = 0; i < r.rows(); ++i) {
    read_view(r, i, v);
    assign(out.emplace_back(), v);
  }
}

std::vector<RecordedEvent> read_events(const PgResult& r) {
  std::vector<RecordedEvent> out;
  read_events(r, out);
  return out;
}

}  // namespace factum::detail::pg
