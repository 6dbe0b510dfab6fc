// Lists of ids in one metadata value (factum.subjects, factum.tags): sorted, unique, separated
// by ',' (which no such id holds).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace factum::detail {

// Sorts `ids` and drops the repeated ones.
inline void sort_unique(std::vector<std::string>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

// `ids` separated by ','.
inline std::string join_ids(const std::vector<std::string>& ids) {
  std::string text;
  for (const std::string& id : ids) {
    if (!text.empty()) text.push_back(',');
    text += id;
  }
  return text;
}

// The ids of `list` (separated by ','), each passed to `validate` first (which throws).
template <class Validate>
std::vector<std::string> split_ids(std::string_view list, Validate&& validate) {
  std::vector<std::string> out;
  for (;;) {
    const std::size_t comma = list.find(',');
    const std::string_view id = list.substr(0, comma);
    validate(id);
    out.emplace_back(id);
    if (comma == std::string_view::npos) return out;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace factum::detail
