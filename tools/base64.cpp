// tools/base64.cpp — base64 encoding and strict decoding (see base64.hpp).
#include "base64.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace factum::cli {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<std::int8_t, 256> decoding_table() {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i)
    t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  return t;
}

constexpr std::array<std::int8_t, 256> kDecoding = decoding_table();

}  // namespace

std::string base64_encode(const void* data, std::size_t size) {
  const auto* in = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    const std::uint32_t v = (in[i] << 16) | (in[i + 1] << 8) | in[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < size) {
    std::uint32_t v = in[i] << 16;
    if (i + 1 < size) v |= in[i + 1] << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < size ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

void base64_encode_pieces(std::span<const std::byte> bytes,
                          const std::function<void(std::string_view)>& write) {
  constexpr std::size_t kPiece = 3 * 21'846;  // 64 KiB of text, a whole number of 3-byte groups
  for (std::size_t at = 0; at < bytes.size(); at += kPiece) {
    const std::string text = base64_encode(bytes.data() + at, std::min(kPiece, bytes.size() - at));
    write(text);
  }
}

std::optional<Bytes> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  Bytes out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (pad == 1 && text[i + 2] == '=') return std::nullopt;  // "x=y=" is not base64
    std::uint32_t v = 0;
    for (int k = 0; k < 4 - pad; ++k) {
      const std::int8_t d = kDecoding[static_cast<unsigned char>(text[i + k])];
      if (d < 0) return std::nullopt;
      v |= static_cast<std::uint32_t>(d) << (18 - 6 * k);
    }
    // Canonical form: the bits a padded group does not use are zero.
    if ((pad == 1 && (v & 0xff) != 0) || (pad == 2 && (v & 0xffff) != 0)) return std::nullopt;
    out.push_back(static_cast<std::byte>(v >> 16));
    if (pad < 2) out.push_back(static_cast<std::byte>((v >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<std::byte>(v & 0xff));
  }
  return out;
}

}  // namespace factum::cli
