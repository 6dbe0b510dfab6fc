// samples/feed/events.hpp — the facts of the feed: users join, post, like, follow and
// unfollow. Each event carries `at`, the moment it happened (its event time): the command
// sets it (now for the command line, simulated times for the demo), and the time windows of
// `feed stats` read it, not the time the store recorded the event.
//
// Streams: user-<name> holds UserJoined, Followed and Unfollowed (the follower's stream);
// post-<id> holds Posted and Liked.
//
// Thread-safety: plain value types; register_events once, before sharing the registry.
#pragma once

#include <factum/eventstore/event.hpp>
#include <factum/eventstore/event_registry.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace feed {

using PostId = std::int64_t;

struct UserJoined {
  static constexpr std::string_view event_type = "feed.UserJoined";
  std::string user;
  factum::Timestamp at{};
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& user& at;
  }
};

struct Posted {
  static constexpr std::string_view event_type = "feed.Posted";
  PostId post = 0;
  std::string author;
  std::string text;
  factum::Timestamp at{};
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& post& author& text& at;
  }
};

struct Liked {
  static constexpr std::string_view event_type = "feed.Liked";
  PostId post = 0;
  std::string by;
  factum::Timestamp at{};
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& post& by& at;
  }
};

struct Followed {
  static constexpr std::string_view event_type = "feed.Followed";
  std::string follower;
  std::string followee;
  factum::Timestamp at{};
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& follower& followee& at;
  }
};

struct Unfollowed {
  static constexpr std::string_view event_type = "feed.Unfollowed";
  std::string follower;
  std::string followee;
  factum::Timestamp at{};
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& follower& followee& at;
  }
};

using FeedEvent = std::variant<UserJoined, Posted, Liked, Followed, Unfollowed>;

// Registers the five event types with `registry`.
void register_events(factum::EventRegistry& registry);

// The event's time (its `at`) and the user who acted (joined, posted, liked, followed).
factum::Timestamp time_of(const FeedEvent& event);
const std::string& actor_of(const FeedEvent& event);

// Stream ids: "user-alice", "post-17".
std::string user_stream(std::string_view user);
std::string post_stream(PostId post);

}  // namespace feed
