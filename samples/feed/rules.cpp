// samples/feed/rules.cpp — checks on user names, post texts and post ids.
#include "rules.hpp"

#include <algorithm>
#include <charconv>

namespace feed {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

// Length of the UTF-8 sequence that starts with `lead`; 0 when it is no lead byte.
std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

// True when `text` is well-formed UTF-8 (lead and continuation bytes; overlongs of three and
// four bytes are not looked for: this is a sample, not a validator).
bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(static_cast<unsigned char>(text[i]));
    if (n == 0 || i + n > text.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

}  // namespace

void check_user_name(std::string_view name) {
  const bool ok = !name.empty() && name.size() <= kMaxNameLength && name[0] >= 'a' &&
                  name[0] <= 'z' && std::all_of(name.begin(), name.end(), is_name_char);
  if (!ok) {
    throw FeedError("malformed user name '" + std::string(name) +
                    "': use 1-32 lowercase letters, digits, '_' or '.', starting with a letter");
  }
}

void check_post_text(std::string_view text) {
  if (!valid_utf8(text)) throw FeedError("post text is not valid UTF-8");
  if (std::any_of(text.begin(), text.end(), is_control))
    throw FeedError("post text must be one line without control characters");
  if (text.find_first_not_of(' ') == std::string_view::npos) throw FeedError("post text is empty");
  const std::size_t length = utf8_length(text);
  if (length > kMaxTextLength) {
    throw FeedError("post text is " + std::to_string(length) + " characters; the limit is " +
                    std::to_string(kMaxTextLength));
  }
}

void check_display_name(std::string_view name) {
  if (!valid_utf8(name)) throw FeedError("display name is not valid UTF-8");
  if (std::any_of(name.begin(), name.end(), is_control))
    throw FeedError("display name must be one line without control characters");
  if (name.find_first_not_of(' ') == std::string_view::npos)
    throw FeedError("display name is empty");
  const std::size_t length = utf8_length(name);
  if (length > kMaxDisplayNameLength) {
    throw FeedError("display name is " + std::to_string(length) + " characters; the limit is " +
                    std::to_string(kMaxDisplayNameLength));
  }
}

PostId parse_post_id(std::string_view text) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '#') digits.remove_prefix(1);
  PostId id = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || id <= 0)
    throw FeedError("malformed post id '" + std::string(text) + "': use a number such as 17");
  return id;
}

std::size_t utf8_length(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  }));
}

}  // namespace feed
