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

// Computes chain hashes. Not thread-safe: one per thread.
class ChainHasher {
 public:
  ChainHasher();
  ~ChainHasher();
  ChainHasher(const ChainHasher&) = delete;
  ChainHasher& operator=(const ChainHasher&) = delete;

  Hash operator()(const Hash& previous, const EventFields& fields);

 private:
  // The fields are laid out in buffer_ (the canonical encoding) and hashed in one update.
  void put(const void* data, std::size_t size);
  void put_u32(std::uint32_t v);
  void put_u64(std::uint64_t v);
  void put_string(std::string_view s);
  void put_optional_id(const std::optional<EventId>& id);
  evp_md_ctx_st* ctx_;
  evp_md_st* sha256_;  // fetched once: EVP_sha256() in every init costs a provider look-up
  std::string buffer_;
};

// The encoding of Metadata::values kept in the `extra` column: u32 count, then per entry
// u32 key length, key, u32 value length, value (big-endian lengths).
std::string encode_values(const std::map<std::string, std::string>& values);
// Decodes encode_values' output; false when the bytes are malformed (nothing thrown).
bool decode_values(std::span<const std::byte> bytes, std::map<std::string, std::string>& out);

}  // namespace factum::detail
