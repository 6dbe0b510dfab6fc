// samples/feed/demo.hpp — a realistic history for `factum-feed demo`: users who join, follow
// the popular ones (and a few unfollow), post through the day, and like in bursts right
// after a post (a few posts go viral), over simulated days with a day/night rhythm. A few
// likes reach the log late, as from phones that synced after a while, so that the time
// windows of `feed stats` have late events to show.
//
// plan_demo makes the plan (deterministic for a seed: all times are relative to
// DemoOptions::end); DemoRunner carries it out through FeedService, one command per action,
// in the order the actions reach the log.
//
// Thread-safety: plain functions and a runner used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "feed_service.hpp"

namespace feed {

struct DemoOptions {
  std::uint64_t seed = 7;   // default 7
  int users = 80;           // default 80 (2 to 1000)
  int days = 3;             // default 3 (1 to 30)
  factum::Timestamp end{};  // the last moment of the history (the command line: now)
};

struct Action {
  enum class Kind { join, follow, unfollow, post, like };
  Kind kind = Kind::join;
  factum::Timestamp at{};       // the event time written into the event
  factum::Timestamp arrival{};  // when it reaches the log (after `at` for late likes)
  std::string user;
  std::string other;     // follow, unfollow: whom
  std::string text;      // post: the text; join: the display name
  std::size_t post = 0;  // like: the liked post, as an index into the plan's posts
};

// The actions of a history, in arrival order. Throws FeedError for options out of range.
std::vector<Action> plan_demo(const DemoOptions& options);

// What a run did.
struct DemoSummary {
  std::size_t users = 0, follows = 0, unfollows = 0, posts = 0, likes = 0;
  std::size_t delayed = 0;  // likes logged later than they happened
  std::string last_liker;   // the last like run: who liked which post
  PostId last_liked = 0;
};

class DemoRunner {
 public:
  explicit DemoRunner(FeedService& feed) : feed_(feed) {}
  // Carries out one action (in plan order). Throws what the command throws.
  void run(const Action& action);
  const DemoSummary& summary() const noexcept { return summary_; }

 private:
  FeedService& feed_;
  std::vector<PostId> posts_;  // the ids the plan's posts got, in plan order
  DemoSummary summary_;
};

}  // namespace feed
