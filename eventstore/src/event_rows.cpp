#include "event_rows.hpp"

#include <cstring>

#include "factum/eventstore/errors.hpp"
#include "hash_chain.hpp"

namespace factum::detail {

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

Head head_of(Position position, std::span<const std::byte> hash) {
  Head h;
  h.position = position;
  if (hash.size() != h.hash.size()) throw CorruptEventError(position, "its hash is not 32 bytes");
  std::memcpy(h.hash.data(), hash.data(), h.hash.size());
  return h;
}

}  // namespace factum::detail
