// samples/feed/report.hpp — the program's text output: a feed as a table, and the stats as
// small tables with text bar charts ("12:05  ████████▍  17"). Everything users wrote (names,
// texts) is printed escaped (factum::printable), and a forgotten user's texts as "<erased>".
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feed_service.hpp"
#include "metrics.hpp"

namespace feed {

struct ReportOptions {
  std::size_t windows = 12;    // 5-minute windows shown (the last hour); default 12
  std::size_t users = 5;       // users shown in the sessions table; default 5
  std::size_t bar_width = 24;  // columns of the longest bar; default 24
};

// A bar of `width` columns for value/max, drawn with eighth blocks; any value above 0 shows
// at least a sliver. Padded with spaces to `width` columns.
std::string bar(double value, double max, std::size_t width);

// `text` cut to `columns` characters (with "…" when cut).
std::string shorten(std::string_view text, std::size_t columns);

// What an erased personal value (a forgotten user's post text) shows as.
inline constexpr std::string_view kErased = "<erased>";

// How a user is shown: "alice", or "alice (Alice Liddell)" with a display name (cut to 24
// characters), escaped (factum::printable).
std::string user_label(std::string_view user, std::string_view display_name);

// A post's text cut to `columns` characters and escaped; kErased when it is erased ("").
std::string post_text(std::string_view text, std::size_t columns);

// The feed of `user`: `items` newest first, out of `total`.
std::string render_feed(const std::string& user, const std::vector<PostView>& items,
                        std::int64_t total);

// The four sections of `feed stats`: likes per 5 minutes, trending posts, sessions, late events.
std::string render_stats(const Stats& stats, const MetricsOptions& metrics = {},
                         const ReportOptions& options = {});

}  // namespace feed
