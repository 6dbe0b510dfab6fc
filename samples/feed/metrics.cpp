// samples/feed/metrics.cpp — one pass over the log feeding three WindowedAggregations
// (tumbling, hopping, session), then the Stats they add up to.
#include "metrics.hpp"

#include <factum/projections/windows.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace feed {
namespace {

using factum::RecordedEvent;
using factum::Timestamp;
using Count = std::int64_t;

// The last multiple of `step` since the epoch at or before t (the windows' alignment).
Timestamp floor_to(Timestamp t, std::chrono::microseconds step) {
  const auto ticks = t.time_since_epoch().count();
  auto quotient = ticks / step.count();
  if (ticks % step.count() != 0 && ticks < 0) --quotient;
  return Timestamp{std::chrono::microseconds{quotient * step.count()}};
}

class Scan {
 public:
  Scan(const factum::EventRegistry& registry, const MetricsOptions& options)
      : registry_(registry),
        options_(options),
        likes_(tumbling_options()),
        trending_(hopping_options()),
        sessions_(session_options()) {}
  Scan(const Scan&) = delete;
  Scan& operator=(const Scan&) = delete;

  void add(const RecordedEvent& envelope, const FeedEvent& event) {
    current_ = {envelope.position, event};
    ++stats_.activities;
    if (const auto* posted = std::get_if<Posted>(&event)) posts_[posted->post] = *posted;
    if (const auto* joined = std::get_if<UserJoined>(&event)) names_[joined->user] = joined->name;
    if (std::holds_alternative<Liked>(event)) add_like(envelope);
    sessions_.add(envelope);
  }

  Stats finish() {
    likes_.flush();
    trending_.flush();
    sessions_.flush();
    stats_.late = {likes_.late_count(), trending_.late_count(), sessions_.late_count()};
    pick_trending();
    pick_peaks();
    rank_users();
    return std::move(stats_);
  }

 private:
  // The decoded event of `e`: the one being added (decoded once), else decoded now.
  const FeedEvent& event_of(const RecordedEvent& e) {
    if (!current_ || current_->first != e.position) {
      current_ = {e.position, registry_.decode_variant<FeedEvent>(e)};
    }
    return current_->second;
  }
  Timestamp time_of(const RecordedEvent& e) { return feed::time_of(event_of(e)); }
  PostId liked_post(const RecordedEvent& e) { return std::get<Liked>(event_of(e)).post; }

  void add_like(const RecordedEvent& e) {
    ++stats_.likes;
    const Timestamp t = time_of(e);
    if (!newest_like_ || t > *newest_like_) newest_like_ = t;
    likes_.add(e);
    trending_.add(e);
  }

  factum::WindowOptions<int, Count> tumbling_options() {
    return {.spec = factum::WindowSpec::tumbling(options_.like_window),
            .key = [](const RecordedEvent&) { return 0; },
            .fold = [](Count& n, const RecordedEvent&) { ++n; },
            .on_close =
                [this](const factum::WindowResult<int, Count>& w) {
                  stats_.like_windows.push_back({w.start, w.value});
                },
            .event_time = [this](const RecordedEvent& e) { return time_of(e); },
            .allowed_lateness = options_.allowed_lateness};
  }

  factum::WindowOptions<PostId, Count> hopping_options() {
    return {.spec = factum::WindowSpec::hopping(options_.trending_window, options_.trending_hop),
            .key = [this](const RecordedEvent& e) { return liked_post(e); },
            .fold = [](Count& n, const RecordedEvent&) { ++n; },
            .on_close =
                [this](const factum::WindowResult<PostId, Count>& w) {
                  hours_.push_back({w.key, {}, {}, w.start, w.end, w.value, {}});
                },
            .event_time = [this](const RecordedEvent& e) { return time_of(e); },
            .allowed_lateness = options_.allowed_lateness};
  }

  factum::WindowOptions<std::string, Count> session_options() {
    return {.spec = factum::WindowSpec::session(options_.session_gap),
            .key = [this](const RecordedEvent& e) { return actor_of(event_of(e)); },
            .fold = [](Count& n, const RecordedEvent&) { ++n; },
            .on_close =
                [this](const factum::WindowResult<std::string, Count>& w) {
                  UserSessions& u = by_user_[w.key];
                  ++u.sessions;
                  u.events += w.value;
                  u.length += (w.end - options_.session_gap) - w.start;  // first to last
                },
            .event_time = [this](const RecordedEvent& e) { return time_of(e); },
            .allowed_lateness = options_.allowed_lateness};
  }

  // Fills in a post's author, their display name and the text.
  PostWindow described(PostWindow w) const {
    if (auto it = posts_.find(w.post); it != posts_.end()) {
      w.author = it->second.author;
      w.text = it->second.text.text();  // "" once erased
      if (auto name = names_.find(w.author); name != names_.end()) {
        w.author_name = name->second.text();
      }
    }
    return w;
  }

  static bool more_likes(const PostWindow& a, const PostWindow& b) {
    return a.likes != b.likes ? a.likes > b.likes : a.post < b.post;
  }

  std::vector<PostWindow> top(std::vector<PostWindow> windows) const {
    std::sort(windows.begin(), windows.end(), more_likes);
    if (windows.size() > options_.top) windows.resize(options_.top);
    for (PostWindow& w : windows) w = described(std::move(w));
    return windows;
  }

  // The hour up to the newest like: the window that ends at the first hop after it.
  void pick_trending() {
    if (!newest_like_) return;
    stats_.trending_end = floor_to(*newest_like_, options_.trending_hop) + options_.trending_hop;
    stats_.trending_start = stats_.trending_end - options_.trending_window;
    std::vector<PostWindow> latest;
    for (const PostWindow& w : hours_) {
      if (w.end == stats_.trending_end) latest.push_back(w);
    }
    stats_.trending = top(std::move(latest));
  }

  // Each post's best hour (the earliest, among equals), then the best posts.
  void pick_peaks() {
    std::map<PostId, PostWindow> best;
    for (const PostWindow& w : hours_) {
      auto [it, fresh] = best.try_emplace(w.post, w);
      if (!fresh && w.likes > it->second.likes) it->second = w;
    }
    std::vector<PostWindow> peaks;
    for (auto& [post, w] : best) peaks.push_back(std::move(w));
    stats_.peaks = top(std::move(peaks));
  }

  void rank_users() {
    for (auto& [user, sessions] : by_user_) {
      sessions.user = user;
      stats_.users.push_back(std::move(sessions));
    }
    std::sort(stats_.users.begin(), stats_.users.end(), [](const auto& a, const auto& b) {
      return std::tie(b.sessions, b.events, a.user) < std::tie(a.sessions, a.events, b.user);
    });
  }

  const factum::EventRegistry& registry_;
  MetricsOptions options_;
  Stats stats_;
  std::optional<std::pair<factum::Position, FeedEvent>> current_;
  std::optional<Timestamp> newest_like_;
  std::map<PostId, Posted> posts_;
  std::map<std::string, UserText> names_;  // display names by user
  std::vector<PostWindow> hours_;          // every closed hopping window, in closing order
  std::map<std::string, UserSessions> by_user_;
  factum::WindowedAggregation<int, Count> likes_;
  factum::WindowedAggregation<PostId, Count> trending_;
  factum::WindowedAggregation<std::string, Count> sessions_;
};

}  // namespace

Stats compute_stats(const factum::EventStore& store, const factum::EventRegistry& registry,
                    const MetricsOptions& options) {
  Scan scan(registry, options);
  for (const auto& d : registry.typed<FeedEvent>(store.read_all(1), factum::UnknownEvents::skip)) {
    scan.add(d.envelope, d.event);
  }
  return scan.finish();
}

}  // namespace feed
