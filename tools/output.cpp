// tools/output.cpp — tables, JSON printing and text helpers (see output.hpp).
#include "output.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <limits>

#include "base64.hpp"
#include "cli.hpp"

namespace factum::cli {
namespace {

constexpr std::int64_t kMicrosPerDay = 86'400'000'000;
// The most days from 1970-01-01 a 64-bit count of microseconds reaches, either way (+1).
constexpr std::int64_t kMaxDay = std::numeric_limits<std::int64_t>::max() / kMicrosPerDay + 1;

// The errno of the first failed write or flush (glibc drops the buffer after a failed flush, so
// a later flush succeeds and only ferror() still tells; the reason must be kept from the first).
int g_output_errno = 0;

void note_write_failure() {
  if (g_output_errno == 0) g_output_errno = errno;
}

std::string reason(int error) {
  if (error == 0) return "an output error occurred";
  std::string text = std::strerror(error);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

// The code point of the UTF-8 sequence at text[i] (valid UTF-8, as JSON text is) and its length;
// a byte that does not start a sequence counts as one byte of its own value.
std::size_t utf8_sequence(const std::string& text, std::size_t i, char32_t& cp) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  const std::size_t n = b0 < 0xc0 ? 1 : b0 < 0xe0 ? 2 : b0 < 0xf0 ? 3 : 4;
  if (n == 1 || i + n > text.size()) {
    cp = b0;
    return 1;
  }
  cp = b0 & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) {
    cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3f);
  }
  return n;
}

// `cp` as a JSON escape: \uXXXX, or a surrogate pair past U+FFFF.
void append_json_escape(std::string& out, char32_t cp) {
  char buf[16];
  if (cp <= 0xffff) {
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
  } else {
    const char32_t v = cp - 0x10000;
    std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xd800 + (v >> 10)),
                  static_cast<unsigned>(0xdc00 + (v & 0x3ff)));
  }
  out += buf;
}

// Floor division and its remainder (0 <= remainder < divisor), also for the most negative
// numbers: no intermediate product that could overflow.
std::int64_t floor_div(std::int64_t value, std::int64_t divisor, std::int64_t& remainder) {
  remainder = value % divisor;
  std::int64_t quotient = value / divisor;
  if (remainder < 0) {
    remainder += divisor;
    --quotient;
  }
  return quotient;
}

struct CivilDate {
  std::int64_t year;
  unsigned month;
  unsigned day;
};

// The proleptic Gregorian date of a day number (days since 1970-01-01), for any day a 64-bit
// microsecond count reaches (H. Hinnant's civil_from_days, in 64-bit arithmetic).
CivilDate civil_from_days(std::int64_t days) {
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const auto day = static_cast<unsigned>(doy - (153 * mp + 2) / 5 + 1);
  const auto month = static_cast<unsigned>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

// "2026-12-02"; a year outside 0000-9999 in ISO 8601's expanded form, with a sign and at least
// six digits ("+294247-01-10", "-290308-12-21"), as JavaScript's toISOString writes it.
std::string date_text(std::int64_t days) {
  const CivilDate d = civil_from_days(days);
  char buf[48];
  if (d.year >= 0 && d.year <= 9999) {
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u", static_cast<long long>(d.year), d.month,
                  d.day);
  } else {
    std::snprintf(buf, sizeof buf, "%c%06lld-%02u-%02u", d.year < 0 ? '-' : '+',
                  static_cast<long long>(d.year < 0 ? -d.year : d.year), d.month, d.day);
  }
  return buf;
}

}  // namespace

Table::Table(std::vector<Column> columns, std::FILE* out)
    : columns_(std::move(columns)), out_(out) {
  for (const Column& c : columns_) widths_.push_back(std::max(c.title.size(), c.min_width));
}

Table::~Table() {
  try {
    flush();
  } catch (...) {
    // Nothing sensible to do in a destructor: the output is gone.
  }
}

void Table::add(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  for (std::string& cell : cells) cell = printable(cell);
  ++rows_;
  if (header_done_) {
    print(cells);
    return;
  }
  for (std::size_t i = 0; i < cells.size(); ++i) {
    widths_[i] = std::max(widths_[i], display_width(cells[i]));
  }
  pending_.push_back(std::move(cells));
  if (pending_.size() >= kBufferedRows) flush();
}

void Table::flush() {
  if (!header_done_) {
    std::vector<std::string> titles;
    for (const Column& c : columns_) titles.push_back(c.title);
    header_done_ = true;
    print(titles);
  }
  for (const auto& row : pending_) print(row);
  pending_.clear();
  flush_output(out_);
}

void Table::print(const std::vector<std::string>& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const bool last = i + 1 == cells.size();
    const std::size_t width = display_width(cells[i]);
    const std::string pad(widths_[i] > width ? widths_[i] - width : 0, ' ');
    if (i > 0) line += "  ";
    if (columns_[i].align == Align::right) {
      line += pad + cells[i];
    } else {
      line += cells[i];
      if (!last) line += pad;
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  line += '\n';
  if (std::fwrite(line.data(), 1, line.size(), out_) != line.size()) note_write_failure();
}

void flush_output(std::FILE* out) {
  if (out == stdout) {
    std::cout.flush();
    if (std::cout.bad()) note_write_failure();
  }
  errno = 0;
  if (std::fflush(out) != 0) note_write_failure();
  if (std::ferror(out) || (out == stdout && std::cout.bad())) {
    throw CliError(std::string("cannot write to ") + (out == stdout ? "stdout" : "the output") +
                   ": " + reason(g_output_errno));
  }
}

void print_fields(const std::vector<std::pair<std::string, std::string>>& fields,
                  const std::string& indent) {
  std::size_t width = 0;
  for (const auto& [label, value] : fields) width = std::max(width, display_width(label));
  for (const auto& [label, value] : fields) {
    const std::string shown = printable(label);
    std::cout << indent << shown << std::string(width - display_width(shown) + 2, ' ')
              << printable(value) << '\n';
  }
  if (std::cout.bad()) note_write_failure();
}

void print_json(const Json& value) {
  std::cout << json_dump(value, 2) << '\n';
  if (std::cout.bad()) note_write_failure();
}

void print_json_line(const Json& value) {
  std::cout << json_dump(value) << '\n';
  if (std::cout.bad()) note_write_failure();
}

std::string json_dump(const Json& value, int indent) {
  return escape_hidden_in_json(value.dump(indent, ' ', false, Json::error_handler_t::replace));
}

std::string escape_hidden_in_json(std::string json) {
  std::size_t i = 0;
  while (i < json.size() && static_cast<unsigned char>(json[i]) < 0x7f) ++i;
  if (i == json.size()) return json;  // ASCII without DEL: nothing to escape
  std::string out = json.substr(0, i);
  while (i < json.size()) {
    char32_t cp = 0;
    const std::size_t n = utf8_sequence(json, i, cp);
    // Only past ASCII: the C0 controls never appear raw in JSON text but as the line breaks
    // and indentation of a pretty-printed document, which must stay as they are.
    if (cp >= 0x7f && is_hidden_code_point(cp)) {
      append_json_escape(out, cp);
    } else {
      out.append(json, i, n);
    }
    i += n;
  }
  return out;
}

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return printable(text);
}

std::string format_time(Timestamp t) {
  std::int64_t us = 0;
  const std::int64_t day = floor_div(t.time_since_epoch().count(), kMicrosPerDay, us);
  const auto h = us / 3'600'000'000;
  us %= 3'600'000'000;
  const auto m = us / 60'000'000;
  us %= 60'000'000;
  char buf[96];  // room for any long long in each field: GCC checks so at -O0
  std::snprintf(buf, sizeof buf, "T%02lld:%02lld:%02lld.%06lldZ", static_cast<long long>(h),
                static_cast<long long>(m), static_cast<long long>(us / 1'000'000),
                static_cast<long long>(us % 1'000'000));
  return date_text(day) + buf;
}

std::string format_day(std::int64_t days_since_epoch) {
  // Past the days a 64-bit microsecond count reaches (about 292,000 years each way), the day
  // number itself.
  if (days_since_epoch > kMaxDay || days_since_epoch < -kMaxDay) {
    return "day " + std::to_string(days_since_epoch) + " (out of range)";
  }
  return date_text(days_since_epoch);
}

std::string human_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (v >= 1024 && unit < 3) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string preview(std::span<const std::byte> payload, std::size_t max) {
  if (payload.empty()) return "(empty)";
  const std::string_view text(reinterpret_cast<const char*>(payload.data()), payload.size());
  const bool has_control = std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  if (has_control || !is_utf8(text)) return "(" + std::to_string(payload.size()) + " bytes)";
  // Cut after `max` characters. The text is valid UTF-8: a character is its lead byte and the
  // continuation bytes (10xxxxxx) that follow it.
  const auto continues = [&](std::size_t i) {
    return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xc0) == 0x80;
  };
  std::size_t end = 0;
  for (std::size_t chars = 0; end < text.size() && chars < max; ++chars) {
    ++end;
    while (continues(end)) ++end;
  }
  return std::string(text.substr(0, end)) + (end < text.size() ? "..." : "");
}

Json json_text(const std::string& text) {
  if (is_utf8(text)) return text;
  Json wrapped = Json::object();
  wrapped["base64"] = base64_encode(text.data(), text.size());
  return wrapped;
}

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) ++width;
  }
  return width;
}

}  // namespace factum::cli
