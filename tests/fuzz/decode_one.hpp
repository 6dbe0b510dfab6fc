// One fuzz input through the payload decoder: shared by the libFuzzer target (payload_fuzz.cpp)
// and by the regression test (regressions_test.cpp), so a crash input saved in
// tests/fuzz/regressions/ replays exactly as the fuzzer ran it.
//
// An input is a selector byte followed by payload bytes. The selector (the index of a target;
// a larger byte is rejected at once) picks what the payload is decoded as: an event type, a
// container, or an event record that goes through an EventRegistry and its upcasters. The
// target list only ever grows at the end: a saved input must keep meaning the same thing.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace factum::fuzz {

enum class Outcome {
  decoded,   // valid bytes for the target; the value re-encoded and decoded again
  rejected,  // refused with factum::PayloadError (CorruptEventError for the registry targets)
};

// A property of the decoder that an input broke: a bug, like a crash.
class InvariantBroken : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Decodes `input` (selector byte, then payload; an empty input picks target 0 with no
// payload; a selector past the last target is rejected). Returns the outcome; throws
// InvariantBroken when a decoded value does not survive encode -> decode, or when the encoding of a
// decoded value is longer than the bytes read. Any other exception is a decoder bug too: only
// PayloadError (and the registry's CorruptEventError) is caught.
Outcome decode_one(std::span<const std::byte> input);

// The number of targets, and the name of target `index` (for messages and file names).
std::size_t target_count();
std::string_view target_name(std::size_t index);

// An input for the target named `name`: its selector byte, then `payload`. Throws
// std::invalid_argument for an unknown name.
std::string make_input(std::string_view name, std::string_view payload);

}  // namespace factum::fuzz
