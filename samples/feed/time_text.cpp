// samples/feed/time_text.cpp — parsing and formatting of UTC times and durations.
#include "time_text.hpp"

#include <cstdio>
#include <ctime>

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

bool in_range(int v, int lo, int hi) { return v >= lo && v <= hi; }

}  // namespace

factum::Timestamp parse_time(std::string_view text) {
  const std::string s(text);
  std::tm tm{};
  int second = 0;
  char sep = 0;
  int consumed = 0;
  const int fields = std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
                                 &tm.tm_mday, &sep, &tm.tm_hour, &tm.tm_min, &consumed);
  std::string_view rest = fields == 6 ? text.substr(static_cast<std::size_t>(consumed)) : "";
  int extra = 0;
  if (fields == 6 && rest.size() >= 3 && rest[0] == ':' &&
      std::sscanf(s.c_str() + consumed, ":%2d%n", &second, &extra) == 1) {
    rest.remove_prefix(static_cast<std::size_t>(extra));
  }
  if (rest == "Z") rest = "";
  const bool ok = fields == 6 && (sep == 'T' || sep == ' ') && rest.empty() &&
                  in_range(tm.tm_mon, 1, 12) && in_range(tm.tm_mday, 1, 31) &&
                  in_range(tm.tm_hour, 0, 23) && in_range(tm.tm_min, 0, 59) &&
                  in_range(second, 0, 59) && in_range(tm.tm_year, 1970, 9999);
  if (!ok) {
    throw FeedError("malformed time '" + s + "': use YYYY-MM-DDTHH:MM[:SS]Z (UTC)");
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_sec = second;
  return factum::Timestamp{std::chrono::seconds{timegm(&tm)}};
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
