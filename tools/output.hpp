// tools/output.hpp — how the commands print: aligned tables for people, JSON for scripts, and
// the text helpers both use (times, sizes, terminal-safe strings, payload previews).
//
// Everything these print passes through factum::printable at the sink: table cells, field
// labels and values, and (as JSON escapes) hidden code points in JSON; so text from the store or
// the command line can never drive the terminal, whatever the caller forgot to escape.
//
// Tables stream: rows are buffered until the first flush (kBufferedRows rows or an explicit
// flush()), which fixes the column widths from the header and the rows seen so far; later rows
// keep those widths (a longer cell just pushes its line wider). So a listing of ten million
// events prints in constant memory and still lines up.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/text.hpp"

namespace factum {
struct AcceptedRollback;  // factum/eventstore/anchor.hpp
}  // namespace factum

namespace factum::cli {

using Json = nlohmann::ordered_json;

// An accepted rollback (factum anchor --accept-rollback, verify --anchors): {"position",
// "anchor_position", "anchor", "log_position", "reason"}.
Json accepted_rollback_json(const AcceptedRollback& rollback);

enum class Align { left, right };

struct Column {
  std::string title;
  Align align = Align::left;
  std::size_t min_width = 0;  // width before any row is seen (for --follow)
};

class Table {
 public:
  static constexpr std::size_t kBufferedRows = 1000;

  explicit Table(std::vector<Column> columns, std::FILE* out = stdout);
  ~Table();  // flushes
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // Adds a row (one cell per column; each cell is printed through printable()).
  void add(std::vector<std::string> cells);
  // Prints the buffered rows (and the header, the first time) and flushes the stream.
  void flush();
  // Rows added so far.
  std::uint64_t rows() const noexcept { return rows_; }

 private:
  void print(const std::vector<std::string>& cells);
  std::vector<Column> columns_;
  std::FILE* out_;
  std::vector<std::size_t> widths_;
  std::vector<std::vector<std::string>> pending_;
  bool header_done_ = false;
  std::uint64_t rows_ = 0;
};

// Flushes `out` (and std::cout, for stdout) and throws CliError naming the reason ("cannot write
// to stdout: no space left on device") when anything written to it since the start was lost:
// a full disk, /dev/full, a closed pipe. Tables and printers call it at each flush; main() calls
// it once more before exiting, so an output error never ends with exit 0.
void flush_output(std::FILE* out = stdout);

// Label/value lines ("head position   1000"), labels padded to the longest; labels and values
// printed through printable().
void print_fields(const std::vector<std::pair<std::string, std::string>>& fields,
                  const std::string& indent = "");

// JSON: one document, indented (reports), or one line (listings: JSON Lines); both through
// json_dump.
void print_json(const Json& value);
void print_json_line(const Json& value);
// `value` as JSON text (`indent` as Json::dump: -1 for one line), with each hidden code point
// that JSON would leave raw (DEL, the C1 controls, bidirectional controls, invisible format
// characters: factum::is_hidden_code_point) written as a \uXXXX escape (a surrogate pair past
// U+FFFF). The same JSON value, but safe on a terminal.
std::string json_dump(const Json& value, int indent = -1);
// `json` (JSON text in valid UTF-8) with its hidden code points written as \uXXXX escapes.
std::string escape_hidden_in_json(std::string json);

// "2026-12-02T12:29:19.620741Z" (UTC, microseconds), right for every 64-bit microsecond count:
// a year outside 0000-9999 is written in ISO 8601's expanded form, a sign and six or more
// digits ("-290308-12-21T19:59:05.224192Z", "+294247-01-10T04:00:54.775807Z").
std::string format_time(Timestamp t);
// "2026-12-02" for a day number (days since 1970-01-01), years as format_time writes them; a
// day no 64-bit microsecond count reaches is "day N (out of range)".
std::string format_day(std::int64_t days_since_epoch);
// "1.2 MiB" (binary units); "512 B" below a KiB.
std::string human_bytes(std::uint64_t bytes);

// True when `text` is valid UTF-8; `text` safe for a terminal, with control characters and
// bytes that are not UTF-8 as \xNN and hidden code points as \uXXXX. One definition for the
// library, this tool and the samples (factum/eventstore/text.hpp).
using factum::is_utf8;
using factum::printable;
// `text` on one line, safe for a terminal: line breaks as spaces, then printable(). Every
// message the tool prints (errors, notes, summaries) goes through it.
std::string one_line(std::string text);
// A short view of a payload for tables: its text when it is printable UTF-8 (cut at `max`
// characters), else "(N bytes)"; "(empty)" for no bytes.
std::string preview(std::span<const std::byte> payload, std::size_t max = 40);
// `text` as a JSON value: a string when it is valid UTF-8, else {"base64": "..."} (stream ids,
// types, actors and metadata may hold any bytes; docs/storage-format.md).
Json json_text(const std::string& text);
// Display width of a UTF-8 string in terminal columns (code points; no wide characters).
std::size_t display_width(std::string_view text);

}  // namespace factum::cli
