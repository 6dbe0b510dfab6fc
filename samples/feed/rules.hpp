// samples/feed/rules.hpp — the feed's refusals and the checks on what users type: user
// names, post texts and post ids. Every refusal is a FeedError whose message is one line
// meant for the user ("unknown user 'zed'").
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "events.hpp"

namespace feed {

// A command the feed refuses (unknown user or post, a rule broken, malformed input).
// Nothing has been written when it is thrown.
class FeedError : public std::runtime_error {
 public:
  explicit FeedError(const std::string& message) : std::runtime_error(message) {}
};

// Longest post text, in characters (UTF-8 code points).
inline constexpr std::size_t kMaxTextLength = 280;
// Longest user name, in characters.
inline constexpr std::size_t kMaxNameLength = 32;

// Throws FeedError unless `name` is 1-32 lowercase ASCII letters, digits, '_' or '.',
// starting with a letter.
void check_user_name(std::string_view name);

// Longest display name, in characters.
inline constexpr std::size_t kMaxDisplayNameLength = 64;

// Throws FeedError when a display name is blank, longer than kMaxDisplayNameLength characters,
// not valid UTF-8, or holds control characters.
void check_display_name(std::string_view name);

// Throws FeedError when `text` is blank, longer than kMaxTextLength characters, not valid
// UTF-8, or holds control characters (a post is one line).
void check_post_text(std::string_view text);

// The post id written by a user ("17" or "#17"). Throws FeedError unless it is a positive
// decimal number.
PostId parse_post_id(std::string_view text);

// How many characters (code points) the UTF-8 text holds.
std::size_t utf8_length(std::string_view text);

}  // namespace feed
