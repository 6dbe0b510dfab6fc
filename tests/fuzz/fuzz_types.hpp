// The payload types of the fuzz targets that tests/events/sample_events.hpp does not have.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "events/sample_events.hpp"

namespace factum::fuzz {

// The field kinds EverythingHappened does not have, all with well-defined conversions.
struct Kitchen {
  std::deque<std::int16_t> deque;
  std::list<std::string> list;
  std::unordered_map<std::string, std::uint64_t> unordered_map;
  std::unordered_set<std::int32_t> unordered_set;
  std::vector<bool> bools;
  float ratio = 0;
  char code[4] = {};
  std::optional<std::optional<std::uint8_t>> nested_optional;
  std::chrono::duration<std::int32_t, std::milli> short_timeout{};  // an int64 on the wire
  std::chrono::sys_seconds at{};
  std::vector<std::vector<test::Address>> groups;
  std::map<test::Currency, std::set<std::string>> by_currency;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& deque& list& unordered_map& unordered_set& bools& ratio& code& nested_optional&
        short_timeout& at& groups& by_currency;
  }
};

// An enumeration without a fixed underlying type: only 0..3 are values of it.
enum Priority : std::int32_t { kLow, kNormal, kHigh };

using OptionalIntLists = std::map<std::string, std::vector<std::optional<std::int64_t>>>;
using Priorities = std::vector<Priority>;
using FloatDurations = std::vector<std::chrono::duration<double>>;

}  // namespace factum::fuzz
