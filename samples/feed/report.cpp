// samples/feed/report.cpp — tables and bar charts for `feed` and `feed stats`.
#include "report.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <factum/eventstore/text.hpp>

#include "rules.hpp"
#include "time_text.hpp"

namespace feed {
namespace {

// `text` padded with spaces to `columns` characters.
std::string pad(std::string text, std::size_t columns) {
  const std::size_t length = utf8_length(text);
  if (length < columns) text.append(columns - length, ' ');
  return text;
}

// `text` right-aligned in `columns` characters.
std::string right(const std::string& text, std::size_t columns) {
  const std::size_t length = utf8_length(text);
  return length < columns ? std::string(columns - length, ' ') + text : text;
}

std::string num(std::int64_t n) { return std::to_string(n); }

// "1 session", "3 sessions".
std::string count_of(std::int64_t n, const std::string& noun) {
  return num(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string decimal(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

std::size_t author_width(const std::vector<PostWindow>& windows) {
  std::size_t width = 6;
  for (const PostWindow& w : windows) {
    width = std::max(width, utf8_length(user_label(w.author, w.author_name)));
  }
  return width;
}

std::int64_t likes_at(const std::vector<LikeWindow>& windows, factum::Timestamp start) {
  auto it = std::lower_bound(windows.begin(), windows.end(), start,
                             [](const LikeWindow& w, factum::Timestamp t) { return w.start < t; });
  return it != windows.end() && it->start == start ? it->likes : 0;
}

void likes_section(std::ostream& out, const Stats& s, const MetricsOptions& m,
                   const ReportOptions& o) {
  out << "Likes per " << spell_duration(m.like_window)
      << " (tumbling windows, times UTC), up to the newest like:\n";
  if (s.like_windows.empty()) {
    out << "  no likes yet\n";
    return;
  }
  const auto last = s.like_windows.back().start;
  const auto span = static_cast<std::int64_t>(std::max<std::size_t>(o.windows, 1));
  std::vector<std::pair<factum::Timestamp, std::int64_t>> shown;
  for (std::int64_t i = span - 1; i >= 0; --i) {
    const factum::Timestamp start = last - i * m.like_window;
    shown.emplace_back(start, likes_at(s.like_windows, start));
  }
  std::int64_t max = 1;
  for (const auto& [start, likes] : shown) max = std::max(max, likes);
  for (const auto& [start, likes] : shown) {
    out << "  " << format_day_minute(start) << "  "
        << bar(static_cast<double>(likes), static_cast<double>(max), o.bar_width) << " "
        << right(num(likes), 4) << "\n";
  }
  const auto busiest =
      std::max_element(s.like_windows.begin(), s.like_windows.end(),
                       [](const LikeWindow& a, const LikeWindow& b) { return a.likes < b.likes; });
  out << "  busiest: " << format_day_minute(busiest->start) << " with " << busiest->likes
      << " likes; " << s.likes << " likes in all, in " << s.like_windows.size()
      << " windows that have any\n";
}

void post_rows(std::ostream& out, const std::vector<PostWindow>& rows, bool with_hour,
               const ReportOptions& o) {
  if (rows.empty()) return;
  const std::size_t width = author_width(rows);
  const double max = static_cast<double>(rows.front().likes);
  for (const PostWindow& w : rows) {
    out << "  " << pad("#" + num(w.post), 6) << pad(user_label(w.author, w.author_name), width)
        << "  ";
    if (with_hour) out << format_day_minute(w.start) << "–" << format_clock(w.end) << "  ";
    out << bar(static_cast<double>(w.likes), max, o.bar_width / 2) << " " << right(num(w.likes), 3)
        << "  " << post_text(w.text, 44) << "\n";
  }
}

void trending_section(std::ostream& out, const Stats& s, const MetricsOptions& m,
                      const ReportOptions& o) {
  const std::string windows = "windows of " + spell_duration(m.trending_window) + " hopping by " +
                              spell_duration(m.trending_hop);
  if (s.trending.empty()) {
    out << "Trending (" << windows << "): no likes yet\n";
    return;
  }
  out << "Trending: likes per post in " << format_day_minute(s.trending_start) << "–"
      << format_clock(s.trending_end) << " (" << windows << "):\n";
  post_rows(out, s.trending, false, o);
  out << "Best hours (each post's most liked window):\n";
  post_rows(out, s.peaks, true, o);
}

void sessions_section(std::ostream& out, const Stats& s, const MetricsOptions& m,
                      const ReportOptions& o) {
  std::int64_t sessions = 0, events = 0;
  std::chrono::microseconds length{0};
  for (const UserSessions& u : s.users) {
    sessions += u.sessions;
    events += u.events;
    length += u.length;
  }
  out << "Sessions (" << spell_duration(m.session_gap)
      << " without activity end one): " << count_of(sessions, "session") << " of "
      << count_of(static_cast<std::int64_t>(s.users.size()), "user");
  if (sessions > 0) {
    out << ", on average " << format_duration(length / sessions) << " and "
        << decimal(static_cast<double>(events) / static_cast<double>(sessions)) << " activities";
  }
  out << "\n";
  const std::size_t shown = std::min(o.users, s.users.size());
  if (shown == 0) return;
  std::size_t width = 4;
  for (std::size_t i = 0; i < shown; ++i) {
    width = std::max(width, utf8_length(factum::printable(s.users[i].user)));
  }
  out << "  " << pad("user", width) << "  " << pad("sessions", o.bar_width / 2 + 4) << "  "
      << right("avg length", 10) << "  " << right("activities", 10) << "\n";
  const double max = static_cast<double>(s.users.front().sessions);
  for (std::size_t i = 0; i < shown; ++i) {
    const UserSessions& u = s.users[i];
    out << "  " << pad(factum::printable(u.user), width) << "  "
        << bar(static_cast<double>(u.sessions), max, o.bar_width / 2) << right(num(u.sessions), 4)
        << "  " << right(format_duration(u.length / u.sessions), 10) << "  "
        << right(num(u.events), 10) << "\n";
  }
}

void late_section(std::ostream& out, const Stats& s, const MetricsOptions& m) {
  out << "Late events (logged more than " << spell_duration(m.allowed_lateness)
      << " behind the newest activity; counted, left out): " << s.late.likes
      << " likes of the tumbling windows, " << s.late.trending << " of the trending windows, "
      << s.late.sessions << " activities of the sessions\n";
}

}  // namespace

std::string bar(double value, double max, std::size_t width) {
  static const char* const kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  const double ratio = max > 0 ? std::clamp(value / max, 0.0, 1.0) : 0.0;
  auto eighths = static_cast<std::size_t>(ratio * static_cast<double>(width * 8) + 0.5);
  if (value > 0 && eighths == 0) eighths = 1;
  std::string out;
  for (std::size_t i = 0; i < eighths / 8; ++i) out += "█";
  out += kEighths[eighths % 8];
  return pad(std::move(out), width);
}

std::string shorten(std::string_view text, std::size_t columns) {
  if (utf8_length(text) <= columns) return std::string(text);
  if (columns == 0) return {};
  std::size_t kept = 0, at = 0;
  for (; at < text.size(); ++at) {
    if ((static_cast<unsigned char>(text[at]) & 0xc0) != 0x80 && kept++ == columns - 1) break;
  }
  return std::string(text.substr(0, at)) + "…";
}

std::string user_label(std::string_view user, std::string_view display_name) {
  std::string label(user);
  if (!display_name.empty()) label += " (" + shorten(display_name, 24) + ")";
  return factum::printable(label);
}

std::string post_text(std::string_view text, std::size_t columns) {
  return text.empty() ? std::string(kErased) : factum::printable(shorten(text, columns));
}

std::string render_feed(const std::string& user, const std::vector<PostView>& items,
                        std::int64_t total) {
  std::ostringstream out;
  out << "Feed of " << factum::printable(user) << ": " << items.size() << " of " << total
      << (total == 1 ? " post" : " posts") << ", newest first (times UTC)\n";
  std::size_t width = 6;
  for (const PostView& p : items) {
    width = std::max(width, utf8_length(user_label(p.author, p.author_name)));
  }
  for (const PostView& p : items) {
    out << "  " << pad("#" + num(p.post), 6) << format_day_minute(p.at) << "  "
        << pad(user_label(p.author, p.author_name), width) << "  " << right("♥ " + num(p.likes), 5)
        << "  " << post_text(p.text, 60) << "\n";
  }
  if (items.empty()) out << "  (empty: follow someone, then their new posts arrive here)\n";
  return out.str();
}

std::string render_stats(const Stats& stats, const MetricsOptions& metrics,
                         const ReportOptions& options) {
  std::ostringstream out;
  likes_section(out, stats, metrics, options);
  out << "\n";
  trending_section(out, stats, metrics, options);
  out << "\n";
  sessions_section(out, stats, metrics, options);
  out << "\n";
  late_section(out, stats, metrics);
  return out.str();
}

}  // namespace feed
