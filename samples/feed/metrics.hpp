// samples/feed/metrics.hpp — the windowed metrics of `feed stats`, computed with
// factum::WindowedAggregation by reading the whole log from position 1, in event time (the
// events' `at`):
//
//   likes per 5 minutes     tumbling 5-minute windows over Liked events (one key)
//   trending posts          1-hour windows hopping by 5 minutes, likes per post: the posts of
//                           the hour up to the newest like, and each post's best hour
//   sessions                per user, a 30-minute gap (or more) without any activity of theirs
//                           (join, post, like, follow, unfollow) ends a session
//
// Late events: the watermark trails the largest event time seen by allowed_lateness
// (default 10 minutes). A like that reaches the log later than that behind the newest
// activity (a phone that synced late) is late: it is counted in Stats::late and folded
// nowhere (LatePolicy::drop), so every reported window is exactly the accepted events in it.
//
// Deterministic: the same log gives equal Stats, call after call (the windows close in a
// fixed order and nothing depends on the clock) — replaying history reproduces the numbers.
//
// Thread-safety: compute_stats reads the store through its own ranges; call it from any
// thread.
#pragma once

#include <factum/eventstore/event_registry.hpp>
#include <factum/eventstore/event_store.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "events.hpp"

namespace feed {

struct MetricsOptions {
  std::chrono::microseconds like_window = std::chrono::minutes(5);        // default 5 min
  std::chrono::microseconds trending_window = std::chrono::hours(1);      // default 1 h
  std::chrono::microseconds trending_hop = std::chrono::minutes(5);       // default 5 min
  std::chrono::microseconds session_gap = std::chrono::minutes(30);       // default 30 min
  std::chrono::microseconds allowed_lateness = std::chrono::minutes(10);  // default 10 min
  std::size_t top = 5;  // trending posts and peaks kept; default 5
};

// Likes in one tumbling window [start, start + like_window).
struct LikeWindow {
  factum::Timestamp start{};
  std::int64_t likes = 0;
  friend bool operator==(const LikeWindow&, const LikeWindow&) = default;
};

// Likes of one post in one hopping window [start, end).
struct PostWindow {
  PostId post = 0;
  std::string author;
  std::string text;  // "" when erased (the author was forgotten)
  factum::Timestamp start{};
  factum::Timestamp end{};
  std::int64_t likes = 0;
  std::string author_name;  // the author's display name: "" when none, or erased
  friend bool operator==(const PostWindow&, const PostWindow&) = default;
};

// One user's sessions.
struct UserSessions {
  std::string user;
  std::int64_t sessions = 0;
  std::int64_t events = 0;              // activities in them
  std::chrono::microseconds length{0};  // their lengths added (first to last activity)
  friend bool operator==(const UserSessions&, const UserSessions&) = default;
};

// Late events (not folded) per aggregation.
struct LateCounts {
  std::size_t likes = 0;     // of the tumbling windows
  std::size_t trending = 0;  // of the hopping windows
  std::size_t sessions = 0;  // of the session windows
  friend bool operator==(const LateCounts&, const LateCounts&) = default;
};

struct Stats {
  std::vector<LikeWindow> like_windows;  // every window that holds likes, oldest first
  factum::Timestamp trending_start{};    // the hour of `trending`: [start, end)
  factum::Timestamp trending_end{};
  std::vector<PostWindow> trending;  // its most liked posts (at most top), most likes first
  std::vector<PostWindow> peaks;     // each post's best hour: the top posts by it
  std::vector<UserSessions> users;   // per user: most sessions first, then most events, name
  LateCounts late;
  std::int64_t activities = 0;  // feed events read
  std::int64_t likes = 0;       // Liked events read (late ones included)
  friend bool operator==(const Stats&, const Stats&) = default;
};

// Reads the log of `store` from position 1 and computes the metrics. Events of other types
// are skipped. Throws what reading and decoding throw (factum::Error).
Stats compute_stats(const factum::EventStore& store, const factum::EventRegistry& registry,
                    const MetricsOptions& options = {});

}  // namespace feed
