#include "hash_chain.hpp"

#include <openssl/evp.h>

#include <new>

#include "factum/eventstore/errors.hpp"

namespace factum::detail {
namespace {

void append_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

bool read_u32(std::span<const std::byte>& in, std::uint32_t& v) {
  if (in.size() < 4) return false;
  v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<std::uint8_t>(in[i]);
  in = in.subspan(4);
  return true;
}

bool read_string(std::span<const std::byte>& in, std::string& s) {
  std::uint32_t size = 0;
  if (!read_u32(in, size) || size > in.size()) return false;
  s.assign(reinterpret_cast<const char*>(in.data()), size);
  in = in.subspan(size);
  return true;
}

}  // namespace

ChainHasher::ChainHasher()
    : ctx_(EVP_MD_CTX_new()), sha256_(EVP_MD_fetch(nullptr, "SHA256", nullptr)) {
  if (ctx_ == nullptr || sha256_ == nullptr) {
    EVP_MD_CTX_free(ctx_);
    EVP_MD_free(sha256_);
    throw Error("factum: OpenSSL's SHA-256 is not available");
  }
}

ChainHasher::~ChainHasher() {
  EVP_MD_CTX_free(ctx_);
  EVP_MD_free(sha256_);
}

void ChainHasher::put(const void* data, std::size_t size) {
  buffer_.append(static_cast<const char*>(data), size);
}

void ChainHasher::put_u32(std::uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (24 - 8 * i));
  put(b, sizeof b);
}

void ChainHasher::put_u64(std::uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (56 - 8 * i));
  put(b, sizeof b);
}

void ChainHasher::put_string(std::string_view s) {
  put_u32(static_cast<std::uint32_t>(s.size()));
  put(s.data(), s.size());
}

void ChainHasher::put_optional_id(const std::optional<EventId>& id) {
  const char present = id ? 1 : 0;
  put(&present, 1);
  if (id) put(id->bytes().data(), id->bytes().size());
}

void ChainHasher::put_envelope(const Hash& previous, Position position, std::string_view stream_id,
                               StreamVersion stream_version, const EventId& id,
                               std::string_view type, std::uint32_t schema_version,
                               std::span<const std::byte> payload) {
  buffer_.clear();
  put(previous.data(), previous.size());
  put_u64(position);
  put_string(stream_id);
  put_u64(stream_version);
  put(id.bytes().data(), id.bytes().size());
  put_string(type);
  put_u32(schema_version);
  put_u32(static_cast<std::uint32_t>(payload.size()));
  put(payload.data(), payload.size());
}

Hash ChainHasher::digest(std::int64_t recorded_at_us) {
  put_u64(static_cast<std::uint64_t>(recorded_at_us));
  Hash out{};
  unsigned int size = 0;
  if (EVP_DigestInit_ex(ctx_, sha256_, nullptr) != 1 ||
      EVP_DigestUpdate(ctx_, buffer_.data(), buffer_.size()) != 1 ||
      EVP_DigestFinal_ex(ctx_, out.data(), &size) != 1 || size != out.size()) {
    throw Error("factum: SHA-256 failed");
  }
  // A large payload's buffer is not kept: a thread's hasher (hash_matches) would otherwise hold
  // as much memory as the largest event it ever checked, for the thread's life.
  constexpr std::size_t kKeptCapacity = 256 * 1024;
  if (buffer_.capacity() > kKeptCapacity) std::string().swap(buffer_);
  return out;
}

void ChainHasher::put_fields(const Hash& previous, const EventFields& f) {
  put_envelope(previous, f.position, f.stream_id, f.stream_version, *f.id, f.type, f.schema_version,
               f.payload);
  const Metadata& m = *f.metadata;
  put_optional_id(m.correlation_id);
  put_optional_id(m.causation_id);
  put_optional_id(m.compensates);
  put_string(m.actor);
  put_u32(static_cast<std::uint32_t>(m.values.size()));
  for (const auto& [key, value] : m.values) {
    put_string(key);
    put_string(value);
  }
}

Hash ChainHasher::operator()(const Hash& previous, const EventFields& f) {
  put_fields(previous, f);
  return digest(f.recorded_at_us);
}

ChainHasher::AroundVersion ChainHasher::input_around_version(const EventFields& f) {
  put_fields(Hash{}, f);
  put_u64(static_cast<std::uint64_t>(f.recorded_at_us));
  // put_envelope's layout: the previous hash, the position, the stream id, the version.
  const std::size_t stream_at = sizeof(Hash) + 8;
  const std::size_t version_at = stream_at + 4 + f.stream_id.size();
  AroundVersion out{buffer_.substr(stream_at, version_at - stream_at),
                    buffer_.substr(version_at + 8)};
  buffer_.clear();
  return out;
}

Hash ChainHasher::operator()(const Hash& previous, const EventView& e) {
  put_envelope(previous, e.position, e.stream_id, e.stream_version, e.id, e.type, e.schema_version,
               e.payload);
  put_optional_id(e.correlation_id);
  put_optional_id(e.causation_id);
  put_optional_id(e.compensates);
  put_string(e.actor);
  if (e.encoded_values.empty()) {
    put_u32(0);
  } else {
    put(e.encoded_values.data(), e.encoded_values.size());
  }
  return digest(e.recorded_at.time_since_epoch().count());
}

EventFields fields_of(const RecordedEvent& event) {
  EventFields f;
  f.position = event.position;
  f.stream_id = event.stream_id;
  f.stream_version = event.stream_version;
  f.id = &event.id;
  f.type = event.type;
  f.schema_version = event.schema_version;
  f.payload = event.payload;
  f.metadata = &event.metadata;
  f.recorded_at_us = event.recorded_at.time_since_epoch().count();
  return f;
}

std::string encode_values(const std::map<std::string, std::string>& values) {
  std::string out;
  append_u32(out, static_cast<std::uint32_t>(values.size()));
  for (const auto& [key, value] : values) {
    append_u32(out, static_cast<std::uint32_t>(key.size()));
    out += key;
    append_u32(out, static_cast<std::uint32_t>(value.size()));
    out += value;
  }
  return out;
}

bool decode_values(std::span<const std::byte> in, std::map<std::string, std::string>& out) {
  out.clear();
  std::uint32_t count = 0;
  if (!read_u32(in, count)) return false;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::string key;
    std::string value;
    if (!read_string(in, key) || !read_string(in, value)) return false;
    if (!out.empty() && key <= out.rbegin()->first) return false;  // canonical: sorted, unique
    out.emplace_hint(out.end(), std::move(key), std::move(value));
  }
  return in.empty();
}

EventFields event_fields(std::string_view stream, const EventData& e, Position position,
                         StreamVersion version, std::int64_t now_us) {
  EventFields f;
  f.position = position;
  f.stream_id = stream;
  f.stream_version = version;
  f.id = &e.id;
  f.type = e.type;
  f.schema_version = e.schema_version;
  f.payload = e.payload;
  f.metadata = &e.metadata;
  f.recorded_at_us = now_us;
  return f;
}

RecordedEvent recorded_of(const EventFields& f, const Hash& hash, const Hash& previous) {
  RecordedEvent r;
  r.position = f.position;
  r.stream_id.assign(f.stream_id);
  r.stream_version = f.stream_version;
  r.id = *f.id;
  r.type.assign(f.type);
  r.schema_version = f.schema_version;
  r.payload.assign(f.payload.begin(), f.payload.end());
  r.metadata = *f.metadata;
  r.recorded_at = Timestamp(std::chrono::microseconds(f.recorded_at_us));
  r.hash = hash;
  r.previous_hash = previous;
  return r;
}

}  // namespace factum::detail

namespace factum {

Hash sha256(std::span<const std::byte> bytes) {
  Hash out{};
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), out.data(), &size, EVP_sha256(), nullptr) != 1) {
    throw Error("factum: SHA-256 failed");
  }
  return out;
}

bool hash_matches(const RecordedEvent& event) {
  thread_local detail::ChainHasher hasher;
  return hasher(event.previous_hash, detail::fields_of(event)) == event.hash;
}

bool hash_matches(const EventView& event) {
  thread_local detail::ChainHasher hasher;
  return hasher(event.previous_hash, event) == event.hash;
}

}  // namespace factum
