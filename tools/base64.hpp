// tools/base64.hpp — standard base64 (RFC 4648, with padding) for payloads in exports.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "factum/eventstore/event.hpp"

namespace factum::cli {

std::string base64_encode(const void* data, std::size_t size);
inline std::string base64_encode(std::span<const std::byte> bytes) {
  return base64_encode(bytes.data(), bytes.size());
}
// Encodes `bytes` a piece at a time, handing each piece of text to `write`: what
// base64_encode(bytes) returns, without holding it whole.
void base64_encode_pieces(std::span<const std::byte> bytes,
                          const std::function<void(std::string_view)>& write);
// Decodes canonical base64 (padding required, no whitespace); nullopt when malformed.
std::optional<Bytes> base64_decode(std::string_view text);

}  // namespace factum::cli
