// samples/feed/events.cpp — registration of the feed's events and small accessors.
#include "events.hpp"

namespace feed {

void register_events(factum::EventRegistry& registry) {
  registry.add<UserJoined>().add<Posted>().add<Liked>().add<Followed>().add<Unfollowed>();
  registry.upcast<UserJoinedV1, UserJoined>([](const UserJoinedV1& old) {
    return UserJoined{old.user, UserText{}, old.at};
  });
  registry.upcast<PostedV1, Posted>([](const PostedV1& old) {
    return Posted{old.post, old.author, UserText::legacy(old.text), old.at};
  });
  registry.validate();
}

factum::Timestamp time_of(const FeedEvent& event) {
  return std::visit([](const auto& e) { return e.at; }, event);
}

const std::string& actor_of(const FeedEvent& event) {
  return std::visit(factum::overloaded{
                        [](const UserJoined& e) -> const std::string& { return e.user; },
                        [](const Posted& e) -> const std::string& { return e.author; },
                        [](const Liked& e) -> const std::string& { return e.by; },
                        [](const Followed& e) -> const std::string& { return e.follower; },
                        [](const Unfollowed& e) -> const std::string& { return e.follower; },
                    },
                    event);
}

std::string subject_of(std::string_view user) { return "user:" + std::string(user); }

std::optional<std::string> user_of_subject(std::string_view subject) {
  constexpr std::string_view kPrefix = "user:";
  if (!subject.starts_with(kPrefix) || subject.size() == kPrefix.size()) return std::nullopt;
  return std::string(subject.substr(kPrefix.size()));
}

std::string user_stream(std::string_view user) { return "user-" + std::string(user); }

std::string post_stream(PostId post) { return "post-" + std::to_string(post); }

std::string handle_tag(std::string_view user) { return "handle:" + std::string(user); }

std::string post_tag(PostId post) { return "post:" + std::to_string(post); }

std::string like_tag(std::string_view user, PostId post) {
  return "like:" + std::string(user) + ":" + std::to_string(post);
}

}  // namespace feed
