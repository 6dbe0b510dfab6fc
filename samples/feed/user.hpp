// samples/feed/user.hpp — the User aggregate (stream user-<name>): whom the user follows.
// Its rules: a user cannot follow themself, follow someone twice, or unfollow someone they do
// not follow. Whether the other user exists is the caller's check (FeedService), since it is
// another aggregate; so is "a handle is taken once", checked by query over the tag handle:<name>
// (FeedService::join, docs/dcb.md), not by this aggregate.
//
// Thread-safety: a plain value used by one thread at a time.
#pragma once

#include <factum/aggregates/aggregate.hpp>

#include <set>
#include <string>
#include <string_view>

#include "events.hpp"
#include "rules.hpp"

namespace feed {

class User : public factum::Aggregate<User, UserJoined, Followed, Unfollowed> {
 public:
  static constexpr std::string_view category = "user";

  bool joined() const noexcept { return joined_; }
  bool follows(const std::string& other) const { return following_.contains(other); }
  const std::set<std::string>& following() const noexcept { return following_; }

  // Throws FeedError for an unknown user, oneself, or someone followed already.
  void follow(const std::string& other, factum::Timestamp at) {
    require_joined();
    if (other == id()) throw FeedError("a user cannot follow themself ('" + id() + "')");
    if (follows(other)) throw FeedError("'" + id() + "' already follows '" + other + "'");
    raise(Followed{id(), other, at});
  }

  // Throws FeedError for an unknown user or someone not followed.
  void unfollow(const std::string& other, factum::Timestamp at) {
    require_joined();
    if (!follows(other)) throw FeedError("'" + id() + "' does not follow '" + other + "'");
    raise(Unfollowed{id(), other, at});
  }

  void apply(const UserJoined&) { joined_ = true; }
  void apply(const Followed& e) { following_.insert(e.followee); }
  void apply(const Unfollowed& e) { following_.erase(e.followee); }

 private:
  void require_joined() const {
    if (!joined_) throw FeedError("unknown user '" + id() + "'");
  }

  bool joined_ = false;
  std::set<std::string> following_;
};

}  // namespace feed
