#include "factum/eventstore/event.hpp"

#include "factum/eventstore/errors.hpp"

namespace factum {

Bytes to_bytes(std::string_view text) {
  Bytes out(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) out[i] = static_cast<std::byte>(text[i]);
  return out;
}

std::string to_string(const Bytes& bytes) {
  std::string out(bytes.size(), '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) out[i] = static_cast<char>(bytes[i]);
  return out;
}

std::string to_hex(const Hash& hash) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(hash.size() * 2);
  for (std::uint8_t b : hash) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 0xf]);
  }
  return s;
}

Hash hash_from_hex(std::string_view hex) {
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Hash h{};
  bool valid = hex.size() == h.size() * 2;
  for (std::size_t i = 0; valid && i < h.size(); ++i) {
    const int hi = value(hex[2 * i]);
    const int lo = value(hex[2 * i + 1]);
    valid = hi >= 0 && lo >= 0;
    h[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  if (!valid) throw InvalidArgument("factum: '" + std::string(hex) + "' is not a SHA-256 hash");
  return h;
}

std::string_view category_of(std::string_view stream_id) noexcept {
  return stream_id.substr(0, stream_id.find('-'));
}

std::string_view RecordedEvent::category() const noexcept { return category_of(stream_id); }

Metadata caused_by(const RecordedEvent& cause) {
  Metadata m;
  m.causation_id = cause.id;
  m.correlation_id = cause.metadata.correlation_id.value_or(cause.id);
  m.actor = cause.metadata.actor;
  return m;
}

}  // namespace factum
