// samples/feed/post.hpp — the Post aggregate (stream post-<id>): a post and who liked it.
// Its rules: a post id is written once; only an existing post can be liked, and a user likes
// a post at most once. Whether the author or liker exists is the caller's check
// (FeedService), as is the text (rules.hpp).
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

class Post : public factum::Aggregate<Post, Posted, Liked> {
 public:
  static constexpr std::string_view category = "post";

  bool exists() const noexcept { return exists_; }
  const std::string& author() const noexcept { return author_; }
  std::size_t likes() const noexcept { return likers_.size(); }
  bool liked_by(const std::string& user) const { return likers_.contains(user); }

  // Throws FeedError when the id is taken. The text is personal data of the author's subject.
  void create(PostId post, const std::string& author, const std::string& text,
              factum::Timestamp at) {
    if (exists_) throw FeedError("post #" + id() + " exists already");
    raise(Posted{post, author, UserText::of(subject_of(author), text), at});
  }

  // Throws FeedError for an unknown post or a second like by the same user.
  void like(const std::string& by, factum::Timestamp at) {
    if (!exists_) throw FeedError("unknown post #" + id());
    if (liked_by(by)) throw FeedError("'" + by + "' already likes post #" + id());
    raise(Liked{post_, by, at});
  }

  void apply(const Posted& e) {
    exists_ = true;
    post_ = e.post;
    author_ = e.author;
  }
  void apply(const Liked& e) { likers_.insert(e.by); }

 private:
  bool exists_ = false;
  PostId post_ = 0;
  std::string author_;
  std::set<std::string> likers_;
};

}  // namespace feed
