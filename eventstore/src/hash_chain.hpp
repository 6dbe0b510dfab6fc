// The hash chain: each event's hash is SHA-256 over the previous event's hash and the event's
// own immutable fields, in the canonical encoding of docs/storage-format.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_view.hpp"

struct evp_md_ctx_st;
struct evp_md_st;

namespace factum::detail {

// The fields a hash covers, as views (no copies).
struct EventFields {
  Position position = 0;
  std::string_view stream_id;
  StreamVersion stream_version = 0;
  const EventId* id = nullptr;
  std::string_view type;
  std::uint32_t schema_version = 0;
  std::span<const std::byte> payload;
  const Metadata* metadata = nullptr;
  std::int64_t recorded_at_us = 0;
};

// The hashed fields of a stored event (views into `event`, which must outlive them).
EventFields fields_of(const RecordedEvent& event);

// The fields of `e` appended to `stream` at `position` as its version `version` at `now_us`
// (views into `stream` and `e`, which must outlive them).
EventFields event_fields(std::string_view stream, const EventData& e, Position position,
                         StreamVersion version, std::int64_t now_us);

// The stored event `f` describes, with its hash and the previous event's (copies everything).
RecordedEvent recorded_of(const EventFields& f, const Hash& hash, const Hash& previous);

// Computes chain hashes. Not thread-safe: one per thread.
class ChainHasher {
 public:
  ChainHasher();
  ~ChainHasher();
  ChainHasher(const ChainHasher&) = delete;
  ChainHasher& operator=(const ChainHasher&) = delete;

  Hash operator()(const Hash& previous, const EventFields& fields);
  // The same hash from a view: its encoded key/values are hashed as stored (the chain's
  // encoding of Metadata::values is the `extra` column's), so nothing is decoded.
  Hash operator()(const Hash& previous, const EventView& event);
  // What operator()(previous, fields) hashes around the previous hash, the position and the
  // stream version (each 8 bytes big-endian but the hash): the hash is SHA-256(previous ||
  // position || before || version || after), which a server that assigns the position and the
  // version computes itself (PostgreSQL's sha256()). fields.position and .stream_version are
  // not read.
  struct AroundVersion {
    std::string before;  // the stream id (u32 length, bytes)
    std::string after;   // the rest, from the event id to the time
  };
  AroundVersion input_around_version(const EventFields& fields);

 private:
  // The fields are laid out in buffer_ (the canonical encoding) and hashed in one update.
  void put(const void* data, std::size_t size);
  void put_u32(std::uint32_t v);
  void put_u64(std::uint64_t v);
  void put_string(std::string_view s);
  void put_optional_id(const std::optional<EventId>& id);
  // Lays out every field but the time (digest's), from the previous hash on.
  void put_fields(const Hash& previous, const EventFields& fields);
  // Lays out the fields every event has before its metadata / after its key/values.
  void put_envelope(const Hash& previous, Position position, std::string_view stream_id,
                    StreamVersion stream_version, const EventId& id, std::string_view type,
                    std::uint32_t schema_version, std::span<const std::byte> payload);
  Hash digest(std::int64_t recorded_at_us);
  evp_md_ctx_st* ctx_;
  evp_md_st* sha256_;  // fetched once: EVP_sha256() in every init costs a provider look-up
  std::string buffer_;
};

// The encoding of Metadata::values kept in the `extra` column: u32 count, then per entry
// u32 key length, key, u32 value length, value (big-endian lengths).
std::string encode_values(const std::map<std::string, std::string>& values);
// Decodes encode_values' output; false when the bytes are malformed (nothing thrown).
bool decode_values(std::span<const std::byte> bytes, std::map<std::string, std::string>& out);

// Walks encode_values' output without copying it, calling fn(key, value) per entry (views into
// `bytes`); false when the bytes are malformed (truncated, trailing bytes, keys not sorted and
// unique), possibly after some calls. An empty span is malformed (there is no count).
template <class F>
bool walk_values(std::span<const std::byte> bytes, F&& fn) {
  std::size_t at = 0;
  const auto u32 = [&](std::uint32_t& v) {
    if (bytes.size() - at < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<std::uint8_t>(bytes[at++]);
    return true;
  };
  const auto text = [&](std::string_view& out) {
    std::uint32_t size = 0;
    if (!u32(size) || size > bytes.size() - at) return false;
    out = std::string_view(reinterpret_cast<const char*>(bytes.data()) + at, size);
    at += size;
    return true;
  };
  std::uint32_t count = 0;
  if (!u32(count)) return false;
  std::string_view previous;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::string_view key;
    std::string_view value;
    if (!text(key) || !text(value)) return false;
    if (i > 0 && key <= previous) return false;  // canonical: sorted, unique
    previous = key;
    fn(key, value);
  }
  return at == bytes.size();
}

}  // namespace factum::detail
