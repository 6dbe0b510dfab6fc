// tools/options.hpp — the command-line options and validators the commands share: the store
// file argument, --json, and the range checks of numeric, duration, event-id and hash options
// (docs/cli.md). A value a validator refuses is a usage error (exit 2), reported by CLI11.
//
// Thread-safety: the command line is built and parsed on one thread.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>

namespace factum::cli {

// The store (positional DB, required: a file or a PostgreSQL URI) and --json, as every command
// spells them.
CLI::Option* add_db_argument(CLI::App& command, std::string& path);
CLI::Option* add_json_flag(CLI::App& command, bool& json);

// The largest position, stream version or count an option takes: SQLite's largest integer.
inline constexpr std::uint64_t kMaxNumber = std::numeric_limits<std::int64_t>::max();

// A CLI11 transform for a whole-number option: decimal digits only, from `min` to `max`, else a
// usage error (exit 2) such as "--limit: '-1' is not a whole number from 1 to ...". So a
// negative value never wraps round and a huge one never clamps. It rewrites the value in its
// plain decimal form ("010" becomes "10"), because CLI11 reads a number as C's strtoull does
// (base 0: "010" is 8 and "0x10" is 16): add it with Option::transform, never Option::check
// (which hands the validator a copy, so CLI11 would still read "010" as octal).
CLI::Validator whole_number(std::uint64_t min, std::uint64_t max = kMaxNumber);
// A CLI11 validator for a duration in seconds: a decimal number in fixed notation ("30",
// "2.5") from 0 to `max` (written `max_text` in the message); an exponent ("1e3"), hexadecimal,
// a sign, NaN, infinities and values past `max` are usage errors.
CLI::Validator seconds(double max, const std::string& max_text);

// CLI11 validators for an event id (UUID) and a SHA-256 hash in hexadecimal.
const CLI::Validator& event_id_validator();
const CLI::Validator& hash_validator();

}  // namespace factum::cli
