// factum/eventstore/text.hpp — text made safe to show on a terminal, in one line.
//
// Stream ids, event types, actors and metadata may hold any bytes (docs/storage-format.md), and
// programs echo what their users typed in their messages. printable() turns such text into what
// a terminal shows as it is: a control character (a byte below 0x20, such as a newline, ESC or
// BEL, and 0x7f) and a byte that is not part of valid UTF-8 become `\xNN` (two lowercase hex
// digits); valid UTF-8 stays as it is. So an ESC sequence in a stream id or an argument cannot
// recolour, move or clear the terminal, and a message stays on one line. The library's own
// messages, the `factum` command line and the sample programs all escape text this way.
//
//   factum::printable("acc\x1b[31m\x07")   // "acc\\x1b[31m\\x07"
//   factum::printable("caf\xc3\xa9")       // "café", unchanged
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace factum {

// True when `text` is valid UTF-8: no stray continuation bytes, no cut-off sequences, no
// overlong forms, no surrogates (U+D800-U+DFFF) and nothing past U+10FFFF.
bool is_utf8(std::string_view text) noexcept;

// `text` with each control character and each byte that is not valid UTF-8 written as \xNN.
std::string printable(std::string_view text);

}  // namespace factum
