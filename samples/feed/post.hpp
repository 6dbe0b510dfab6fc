// samples/feed/post.hpp — the Post aggregate (stream post-<id>): a post. Its rule: a post id
// is written once. Likes are appended to the post's stream too, but "a user likes a post at
// most once" is checked by query over the tag like:<user>:<post> (FeedService::like,
// docs/dcb.md), so a like neither loads every like of the post nor conflicts with other users'
// likes of it. Whether the author exists is the caller's check (FeedService), as is the text
// (rules.hpp).
//
// Thread-safety: a plain value used by one thread at a time.
#pragma once

#include <factum/aggregates/aggregate.hpp>

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

  // Throws FeedError when the id is taken. The text is personal data of the author's subject.
  void create(PostId post, const std::string& author, const std::string& text,
              factum::Timestamp at) {
    if (exists_) throw FeedError("post #" + id() + " exists already");
    raise(Posted{post, author, UserText::of(subject_of(author), text), at});
  }

  void apply(const Posted& e) {
    exists_ = true;
    author_ = e.author;
  }
  void apply(const Liked&) {}  // likes are FeedService::like's, by query

 private:
  bool exists_ = false;
  std::string author_;
};

}  // namespace feed
