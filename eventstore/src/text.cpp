// Terminal-safe text (see factum/eventstore/text.hpp).
#include "factum/eventstore/text.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace factum {
namespace {

constexpr const char* kHex = "0123456789abcdef";

// The code points printable() escapes, as sorted, disjoint, inclusive ranges (text.hpp).
struct Range {
  char32_t first;
  char32_t last;
};
constexpr Range kHidden[] = {
    {0x0000, 0x001f}, {0x007f, 0x009f},   {0x00ad, 0x00ad},   {0x034f, 0x034f},   {0x061c, 0x061c},
    {0x115f, 0x1160}, {0x17b4, 0x17b5},   {0x180b, 0x180f},   {0x200b, 0x200f},   {0x2028, 0x202e},
    {0x2060, 0x206f}, {0x3164, 0x3164},   {0xfe00, 0xfe0f},   {0xfeff, 0xfeff},   {0xffa0, 0xffa0},
    {0xfff9, 0xfffb}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
};

// The length of the UTF-8 sequence starting at text[i] and its code point, or 0 when it is not
// valid UTF-8.
std::size_t decode(std::string_view text, std::size_t i, char32_t& cp) noexcept {
  const auto b0 = static_cast<unsigned char>(text[i]);
  std::size_t n = 0;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  if ((b0 & 0xe0) == 0xc0) {
    n = 2;
    cp = b0 & 0x1f;
  } else if ((b0 & 0xf0) == 0xe0) {
    n = 3;
    cp = b0 & 0x0f;
  } else if ((b0 & 0xf8) == 0xf0) {
    n = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// `value` as `digits` lowercase hex digits after `prefix` ("\x", "\u" or "\U").
void append_escape(std::string& out, const char* prefix, std::uint32_t value, int digits) {
  out += prefix;
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xf];
}

}  // namespace

bool is_utf8(std::string_view text) noexcept {
  char32_t cp = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = decode(text, i, cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool is_hidden_code_point(char32_t code_point) noexcept {
  const auto* after = std::upper_bound(std::begin(kHidden), std::end(kHidden), code_point,
                                       [](char32_t cp, const Range& r) { return cp < r.first; });
  return after != std::begin(kHidden) && code_point <= std::prev(after)->last;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char32_t cp = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0x20 && b < 0x7f) {  // printable ASCII, the common case: as it is
      out += text[i++];
      continue;
    }
    const std::size_t n = decode(text, i, cp);
    if (n == 0 || (n == 1 && is_hidden_code_point(cp))) {
      append_escape(out, "\\x", static_cast<unsigned char>(text[i]), 2);
      ++i;
      continue;
    }
    if (is_hidden_code_point(cp)) {
      if (cp <= 0xffff) {
        append_escape(out, "\\u", cp, 4);
      } else {
        append_escape(out, "\\U", cp, 8);
      }
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace factum
