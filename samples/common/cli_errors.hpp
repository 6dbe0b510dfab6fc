// samples/common/cli_errors.hpp — how the sample programs end with an error, the same way in
// each: one line on stderr, "<program>: <message>", and an exit code.
//
//   0  success
//   1  an error: bad input, a refused command, a missing file, another program's store, ...
//   2  a usage error found by CLI11: an unknown command or option, a missing argument, an
//      option value out of range
//
// The line is escaped as the `factum` command line escapes text (factum::printable): a control
// character (ESC, BEL, a newline, ...) or a byte that is not UTF-8, from an argument echoed in
// the message, is written as \xNN, so an error can neither drive the terminal nor take two
// lines.
//
// Thread-safety: plain functions.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

// Declared only: CLI11 (2.1) compiles its whole parser into every file that includes it; the
// programs' command-line files include <CLI/CLI.hpp> themselves.
namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace factum::samples {

inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// "<program>: <message>" (without a newline), escaped; factum's own "factum: " prefix is left
// out of the message.
std::string error_line(std::string_view program, std::string_view message);

// Prints error_line on `err` and returns kExitError.
int report_error(std::ostream& err, std::string_view program, std::string_view message);

// Reports a CLI11 parse error of `app`: --help prints the help on `out` (exit 0); any other one
// prints "<program>: <what CLI11 says> (see <program> --help)" on `err` (an unknown command is
// named as such) and returns kExitUsage.
int report_parse_error(CLI::App& app, const CLI::ParseError& error, std::ostream& out,
                       std::ostream& err);

}  // namespace factum::samples
