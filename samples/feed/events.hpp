// samples/feed/events.hpp — the facts of the feed: users join, post, like, follow and
// unfollow. Each event carries `at`, the moment it happened (its event time): the command
// sets it (now for the command line, simulated times for the demo), and the time windows of
// `feed stats` read it, not the time the store recorded the event.
//
// Streams: user-<name> holds UserJoined, Followed and Unfollowed (the follower's stream);
// post-<id> holds Posted and Liked. Tags: see handle_tag, post_tag and like_tag.
//
// Personal data (docs/erasure.md): a user's display name and the texts of their posts
// are factum::Personal values of the user's subject, "user:<name>" (subject_of), encrypted
// under that subject's key, so `factum-feed forget USER` erases them for good while the log
// still verifies. User names (handles) are ids: they are in stream ids and metadata, which no
// forget erases. Events written before this (schema 1: UserJoined without a display name,
// Posted with a plain text) are read through upcasters; their texts stay plain (UserText).
//
// Thread-safety: plain value types; register_events once, before sharing the registry.
#pragma once

#include <factum/eventstore/event.hpp>
#include <factum/eventstore/event_registry.hpp>

#include <factum/eventstore/personal.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace feed {

using PostId = std::int64_t;

// The subject of a user's personal data: "user:<name>" (a user name is a valid subject id).
std::string subject_of(std::string_view user);
// The user of a subject "user:<name>"; nullopt for any other subject.
std::optional<std::string> user_of_subject(std::string_view subject);

// A text a user wrote about themself or posted: personal data of the user's subject in the
// events written now; plain text in events of schema 1 (written before the feed kept personal
// data), which are upcast to this form and can never be erased. Empty (neither) for a user who
// joined without a display name.
struct UserText {
  std::optional<factum::Personal<std::string>> personal;
  std::string plain;  // schema 1 only

  static UserText of(std::string subject, std::string text) {
    return UserText{factum::Personal<std::string>(std::move(subject), std::move(text)), {}};
  }
  static UserText legacy(std::string text) { return UserText{std::nullopt, std::move(text)}; }

  // Its subject was forgotten (or it was decoded without the store's keyring): the text is gone.
  bool erased() const noexcept { return personal && !personal->has_value(); }
  // The text; "" when there is none or it is erased.
  std::string text() const {
    if (!personal) return plain;
    return personal->has_value() ? personal->value() : std::string();
  }

  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& personal& plain;
  }
  friend bool operator==(const UserText&, const UserText&) = default;
};

// Schema 2: the display name (optional: UserText{} when none was given).
struct UserJoined {
  static constexpr std::string_view event_type = "feed.UserJoined";
  static constexpr std::uint32_t schema_version = 2;
  std::string user;
  UserText name;
  factum::Timestamp at{};
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& user& name& at;
  }
};

// Schema 2: the text is personal data of the author.
struct Posted {
  static constexpr std::string_view event_type = "feed.Posted";
  static constexpr std::uint32_t schema_version = 2;
  PostId post = 0;
  std::string author;
  UserText text;
  factum::Timestamp at{};
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& post& author& text& at;
  }
};

// The layouts of schema 1, read by upcasters (register_events).
struct UserJoinedV1 {
  static constexpr std::string_view event_type = "feed.UserJoined";
  static constexpr std::uint32_t schema_version = 1;
  std::string user;
  factum::Timestamp at{};
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& user& at;
  }
};

struct PostedV1 {
  static constexpr std::string_view event_type = "feed.Posted";
  static constexpr std::uint32_t schema_version = 1;
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

// Registers the five event types (and the upcasters from schema 1) with `registry`.
void register_events(factum::EventRegistry& registry);

// The event's time (its `at`) and the user who acted (joined, posted, liked, followed).
factum::Timestamp time_of(const FeedEvent& event);
const std::string& actor_of(const FeedEvent& event);

// Stream ids: "user-alice", "post-17".
std::string user_stream(std::string_view user);
std::string post_stream(PostId post);

// Tags (factum/eventstore/tags.hpp) of the rules that span streams, checked by query
// (docs/dcb.md): UserJoined carries "handle:alice" (a handle is taken once), Posted
// "post:17", Liked "like:bob:17" (a user likes a post once). Handles and post ids are ids,
// not personal data: tags, like stream ids, are never erased.
std::string handle_tag(std::string_view user);
std::string post_tag(PostId post);
std::string like_tag(std::string_view user, PostId post);

}  // namespace feed
