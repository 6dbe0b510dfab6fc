// tools/options.cpp — the shared options and validators of the commands (see options.hpp).
#include "options.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_id.hpp"
#include "factum/eventstore/text.hpp"

namespace factum::cli {
namespace {

// `text` for an error message: at most `max` bytes (cut before a UTF-8 sequence, never inside
// one), so a 400-digit argument stays short, and escaped (printable), so an argument cannot
// drive the terminal.
std::string shown_argument(const std::string& text, std::size_t max = 24) {
  if (text.size() <= max) return "'" + printable(text) + "'";
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return "'" + printable(text.substr(0, cut)) + "...'";
}

}  // namespace

CLI::Option* add_db_argument(CLI::App& command, std::string& path) {
  return command.add_option("DB", path, "The store file or PostgreSQL URI")->required();
}

CLI::Option* add_json_flag(CLI::App& command, bool& json) {
  return command.add_flag("--json", json, "Print JSON instead of a table (see docs/cli.md)");
}

CLI::Validator whole_number(std::uint64_t min, std::uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
          return shown_argument(text) + " is not a whole number from " + std::to_string(min) +
                 " to " + std::to_string(max);
        }
        text = std::to_string(value);  // "010" is ten: CLI11 alone would read it as octal
        return {};
      },
      "");
}

CLI::Validator seconds(double max, const std::string& max_text) {
  return CLI::Validator(
      [max, max_text](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        // Fixed notation only: digits with one optional point ("2.5"), no exponent ("1e3"), no
        // hexadecimal ("0x1p3"), no sign.
        const auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::fixed);
        if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value) || value < 0 ||
            value > max) {
          return shown_argument(text) + " is not a number of seconds from 0 to " + max_text;
        }
        return {};
      },
      "");
}

const CLI::Validator& event_id_validator() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        try {
          EventId::parse(text);
          return {};
        } catch (const Error&) {
          return shown_argument(text, 64) + " is not an event id (a UUID such as " +
                 "0190f5a2-7c3e-7a11-8b22-3c4d5e6f7081)";
        }
      },
      "UUID");
  return v;
}

const CLI::Validator& hash_validator() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        try {
          hash_from_hex(text);
          return {};
        } catch (const Error&) {
          return shown_argument(text, 80) + " is not a SHA-256 hash (64 hexadecimal digits)";
        }
      },
      "HASH");
  return v;
}

}  // namespace factum::cli
