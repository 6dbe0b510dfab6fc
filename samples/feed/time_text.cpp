// samples/feed/time_text.cpp — parsing and formatting of UTC times and durations.
#include "time_text.hpp"

#include <cstdio>
#include <ctime>
#include <optional>

#include "rules.hpp"

namespace feed {
namespace {

std::tm to_tm(factum::Timestamp t) {
  const auto seconds = std::chrono::floor<std::chrono::seconds>(t).time_since_epoch().count();
  const auto time = static_cast<std::time_t>(seconds);
  std::tm out{};
  gmtime_r(&time, &out);
  return out;
}

std::string format(factum::Timestamp t, const char* pattern) {
  const std::tm tm = to_tm(t);
  char buffer[64];
  const std::size_t n = std::strftime(buffer, sizeof buffer, pattern, &tm);
  return std::string(buffer, n);
}

// Reads exactly `digits` decimal digits at text[at...] into `out`; advances `at`.
bool read_number(std::string_view text, std::size_t& at, std::size_t digits, int& out) {
  if (text.size() - at < digits) return false;
  out = 0;
  for (std::size_t end = at + digits; at < end; ++at) {
    if (text[at] < '0' || text[at] > '9') return false;
    out = out * 10 + (text[at] - '0');
  }
  return true;
}

// Reads `c` at text[at]; advances `at`.
bool read_char(std::string_view text, std::size_t& at, char c) {
  if (at >= text.size() || text[at] != c) return false;
  ++at;
  return true;
}

// The fields of "YYYY-MM-DDTHH:MM[:SS][Z]" (T or a space), when `text` is exactly that.
struct TimeFields {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
};
std::optional<TimeFields> read_fields(std::string_view text) {
  TimeFields f;
  std::size_t at = 0;
  const bool date = read_number(text, at, 4, f.year) && read_char(text, at, '-') &&
                    read_number(text, at, 2, f.month) && read_char(text, at, '-') &&
                    read_number(text, at, 2, f.day);
  const bool clock = date && (read_char(text, at, 'T') || read_char(text, at, ' ')) &&
                     read_number(text, at, 2, f.hour) && read_char(text, at, ':') &&
                     read_number(text, at, 2, f.minute);
  if (!clock) return std::nullopt;
  if (read_char(text, at, ':') && !read_number(text, at, 2, f.second)) return std::nullopt;
  read_char(text, at, 'Z');
  if (at != text.size()) return std::nullopt;
  return f;
}

}  // namespace

factum::Timestamp parse_time(std::string_view text) {
  using namespace std::chrono;
  const std::optional<TimeFields> f = read_fields(text);
  const year_month_day date = f ? year{f->year} / f->month / f->day : year_month_day{};
  // ok() knows each month's length and the leap years: 2024-02-29 is a day, 2023-02-29 not.
  if (!f || !date.ok() || f->year < 1970 || f->hour > 23 || f->minute > 59 || f->second > 59) {
    throw FeedError("malformed time '" + std::string(text) +
                    "': use a real UTC time YYYY-MM-DDTHH:MM[:SS]Z");
  }
  return factum::Timestamp{sys_days{date} + hours{f->hour} + minutes{f->minute} +
                           seconds{f->second}};
}

std::string format_time(factum::Timestamp t) { return format(t, "%Y-%m-%d %H:%M:%S"); }

std::string format_day_minute(factum::Timestamp t) { return format(t, "%m-%d %H:%M"); }

std::string format_clock(factum::Timestamp t) { return format(t, "%H:%M"); }

std::string format_duration(std::chrono::microseconds d) {
  const auto minutes = std::chrono::round<std::chrono::minutes>(d).count();
  if (minutes < 60) return std::to_string(minutes) + " min";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%lld h %02lld min", static_cast<long long>(minutes / 60),
                static_cast<long long>(minutes % 60));
  return buffer;
}

std::string spell_duration(std::chrono::microseconds d) {
  const auto plural = [](std::int64_t n, const char* unit) {
    return std::to_string(n) + " " + unit + (n == 1 ? "" : "s");
  };
  if (d % std::chrono::hours(1) == d.zero()) return plural(d / std::chrono::hours(1), "hour");
  if (d % std::chrono::minutes(1) == d.zero()) return plural(d / std::chrono::minutes(1), "minute");
  return plural(std::chrono::round<std::chrono::seconds>(d).count(), "second");
}

factum::Timestamp now() {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

}  // namespace feed
