// factum/eventstore/text.hpp — text made safe to show on a terminal, in one line.
//
// Stream ids, event types, actors and metadata may hold any bytes (docs/storage-format.md), and
// programs echo what their users typed in their messages. printable() turns such text into what
// a terminal shows as it is, with nothing hidden and nothing that drives the terminal:
//
// - a C0 control character (a byte below 0x20, such as a newline, ESC or BEL) and DEL (0x7f)
//   become `\xNN` (two lowercase hex digits);
// - a byte that is not part of valid UTF-8 becomes `\xNN`;
// - a code point that a terminal would act on or that shows as nothing (is_hidden_code_point:
//   the C1 controls U+0080-U+009F, CSI U+009B among them; the bidirectional controls such as
//   U+202E RIGHT-TO-LEFT OVERRIDE; zero-width and other invisible format characters; the line
//   and paragraph separators) becomes `\uXXXX` (four lowercase hex digits), or `\UXXXXXXXX` past
//   U+FFFF;
// - every other valid UTF-8 sequence stays as it is.
//
// So an ESC sequence in a stream id or an argument cannot recolour, move or clear the terminal,
// text cannot be reordered or hidden on screen, and a message stays on one line. printable() is
// idempotent (printable(printable(x)) == printable(x)): a backslash is not escaped, so a message
// built from parts already made printable can be passed through it again. The library's own
// messages, the `factum` command line and the sample programs all escape text this way.
//
//   factum::printable("acc\x1b[31m\x07")   // "acc\\x1b[31m\\x07"
//   factum::printable("caf\xc3\xa9")       // "café", unchanged
//   factum::printable("a\xe2\x80\xaeb")    // "a\\u202eb" (U+202E RIGHT-TO-LEFT OVERRIDE)
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace factum {

// True when `text` is valid UTF-8: no stray continuation bytes, no cut-off sequences, no
// overlong forms, no surrogates (U+D800-U+DFFF) and nothing past U+10FFFF.
bool is_utf8(std::string_view text) noexcept;

// True for a code point printable() escapes: the C0 controls (U+0000-U+001F), DEL (U+007F), the
// C1 controls (U+0080-U+009F), the line and paragraph separators (U+2028, U+2029), the
// bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), the
// interlinear annotation controls (U+FFF9-U+FFFB) and Unicode's default-ignorable code points
// (characters that show as nothing: U+00AD, U+034F, U+115F, U+1160, U+17B4, U+17B5,
// U+180B-U+180F, U+200B-U+200F, U+2060-U+206F, U+3164, U+FE00-U+FE0F, U+FEFF, U+FFA0,
// U+1BCA0-U+1BCA3, U+1D173-U+1D17A, U+E0000-U+E0FFF).
bool is_hidden_code_point(char32_t code_point) noexcept;

// `text` with each control character and each byte that is not valid UTF-8 written as \xNN,
// and each other hidden code point as \uXXXX (or \UXXXXXXXX); see above.
std::string printable(std::string_view text);

}  // namespace factum
