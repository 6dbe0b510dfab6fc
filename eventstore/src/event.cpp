#include "factum/eventstore/event.hpp"

#include "factum/eventstore/errors.hpp"
#include "hex.hpp"

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

std::string to_hex(const Hash& hash) { return detail::hex_of(hash); }

Hash hash_from_hex(std::string_view hex) {
  const std::optional<Hash> h = detail::bytes_of_hex<32>(hex);
  if (!h) throw InvalidArgument("factum: '" + std::string(hex) + "' is not a SHA-256 hash");
  return *h;
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
