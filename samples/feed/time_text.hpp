// samples/feed/time_text.hpp — event times as people read and write them (UTC):
// "2024-05-14T12:05:00Z" in, "05-14 12:05" out, durations as "14 min" or "2 h 05 min".
//
// Thread-safety: pure functions.
#pragma once

#include <factum/eventstore/event.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace feed {

// Parses "YYYY-MM-DDTHH:MM[:SS][Z]" (a space may replace the T), as UTC: exactly that many
// digits in each field, nothing before or after, a day that exists (2024-02-29 does, 2023-02-29
// and 2024-04-31 do not), hours 00-23, minutes and seconds 00-59, years from 1970. Throws
// FeedError otherwise.
factum::Timestamp parse_time(std::string_view text);

// "2024-05-14 12:05:07" (UTC).
std::string format_time(factum::Timestamp t);
// "05-14 12:05" (UTC): month, day, hours and minutes.
std::string format_day_minute(factum::Timestamp t);
// "12:05" (UTC).
std::string format_clock(factum::Timestamp t);
// "0 min", "14 min", "2 h 05 min" (rounded to the minute).
std::string format_duration(std::chrono::microseconds d);

// A window size in words: "5 minutes", "1 hour", "90 seconds".
std::string spell_duration(std::chrono::microseconds d);

// Now, to the microsecond.
factum::Timestamp now();

}  // namespace feed
