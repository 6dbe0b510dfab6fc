// samples/feed/feed_service.hpp — the feed's API: commands that check the rules and append
// events, and queries on the read models. The command line and the demo go through it; so
// do the tests.
//
//   factum::StoreOptions options;                           // personal data needs a KEK
//   options.personal_data.key_provider = std::make_shared<factum::FileKeyProvider>(kek);
//   auto store = factum::EventStore::open("feed.db", options);
//   feed::FeedService feed(store);
//   feed.join("alice", now);  feed.join("bob", now);
//   feed.follow("bob", "alice", now);
//   const feed::PostId id = feed.post("alice", "hello", now);   // fanned out to bob
//   feed.like("bob", id, now);
//   for (const feed::FeedItem& item : feed.feed("bob", 10)) ...
//
// Each command checks everything first, then appends exactly one event; when it refuses
// (FeedError: unknown user or post, a broken rule, malformed input) nothing is written, not
// even the projections' state: the projections (read_models.hpp), which record their state in
// the file when they start, are started only once a command has passed its checks, just before
// its append, or by a query whose read models are behind the log. They run inline, so a query
// sees a command's effect as soon as the command returns. Concurrent writers (threads, processes)
// are safe: follows and posts carry the aggregate's expected version and conflicting commands
// are retried; the two rules that span streams — a handle is taken once, a user likes a post
// once — are decided by query over tags (handle_tag, like_tag in events.hpp) and appended on
// the condition that no matching event came meanwhile (factum::decide, docs/dcb.md): of racing
// joins of one handle, or likes of one post by one user, exactly one lands.
//
// Thread-safety: a FeedService may be shared between threads. The store must outlive it.
#pragma once

#include <factum/aggregates/repository.hpp>
#include <factum/eventstore/event_registry.hpp>
#include <factum/eventstore/event_store.hpp>
#include <factum/projections/projection_engine.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events.hpp"
#include "post.hpp"
#include "user.hpp"

namespace feed {

// A post as seen in someone's feed or looked up by id.
struct PostView {
  PostId post = 0;
  std::string author;
  std::string text;  // "" once the author was forgotten (erased)
  factum::Timestamp at{};
  std::int64_t likes = 0;
  std::string author_name;  // the author's display name; "" when none (or forgotten)
  bool erased() const noexcept { return text.empty(); }
};

// What forgetting a user erased.
struct Forgotten {
  std::string subject;            // "user:<name>"
  bool had_name = false;          // a display name was erased
  std::int64_t posts = 0;         // the texts of this many posts were erased
  factum::Position position = 0;  // the factum.SubjectForgotten fact
};

// A page of someone's feed and how many posts the whole feed holds, as of one moment.
struct FeedPage {
  std::vector<PostView> items;
  std::int64_t total = 0;
};

// How much the read models hold, as of one moment.
struct Totals {
  std::int64_t users = 0;
  std::int64_t posts = 0;
  std::int64_t likes = 0;
  std::int64_t follows = 0;     // current follow relations
  std::int64_t feed_items = 0;  // rows of all feeds together
};

class FeedService {
 public:
  // Registers the events, with the store's keyring (display names and post texts are personal
  // data: a store opened without a key provider can read, but a post or a display name is then
  // refused by the library with factum::InvalidArgument). Writes nothing: the projections start
  // with the first command that passes its checks, or the first query whose read models are behind
  // the log.
  explicit FeedService(factum::EventStore& store);
  ~FeedService();
  FeedService(const FeedService&) = delete;
  FeedService& operator=(const FeedService&) = delete;

  // Commands. `at` is the event time stored in the event. All throw FeedError on refusal.
  // A new user: the name must be well-formed and free (no event tagged handle:<user>, and, for
  // stores older than the tags, no stream user-<user>); `display_name`, when given, is personal
  // data of the user (check_display_name). Refused: "user 'alice' exists already".
  void join(const std::string& user, factum::Timestamp at,
            const std::optional<std::string>& display_name = std::nullopt);
  // A new post by `author` with the next free id, fanned out to the author's followers.
  // Refused for a forgotten author.
  PostId post(const std::string& author, const std::string& text, factum::Timestamp at);
  // `user` likes `post` (once: no event tagged like:<user>:<post>; for a post written before
  // the tags, no untagged like of `user` in its stream). Refused: "'bob' already likes post #1".
  // Returns the post's number of likes afterwards (from the posts read model).
  std::size_t like(const std::string& user, PostId post, factum::Timestamp at);
  // `user` follows / stops following `other`.
  void follow(const std::string& user, const std::string& other, factum::Timestamp at);
  void unfollow(const std::string& user, const std::string& other, factum::Timestamp at);

  // Forgets `user` (EventStore::forget of subject_of(user)): their display name and the texts
  // of their posts are erased from the log (decoded as erased) and from the read models (in the
  // same transaction, through Projection::forget); likes, follows and the hash chain stay.
  // Refused (FeedError, nothing written) for an unknown user, a user forgotten already, and a
  // user who joined before the feed kept personal data (schema 1): their older posts are in the
  // log in plain text, which no forget can erase.
  Forgotten forget(const std::string& user);
  // True when `user` was forgotten.
  bool forgotten(const std::string& user) const;

  // Queries (read models, brought up to the head of the log first: see sync_read_models).
  // feed(), feed_length() and followers() throw FeedError for an unknown user, before that.
  bool user_exists(std::string_view user) const;
  // The newest `limit` posts of the user's feed, newest first (by event time, then id).
  std::vector<PostView> feed(const std::string& user, std::size_t limit) const;
  std::int64_t feed_length(const std::string& user) const;
  // Both, read in one read transaction, so that they agree beside writers.
  FeedPage feed_page(const std::string& user, std::size_t limit) const;
  std::optional<PostView> find_post(PostId post) const;
  // How many feeds `post` was delivered to.
  std::int64_t delivered(PostId post) const;
  std::vector<std::string> followers(const std::string& user) const;
  Totals totals() const;

  // Makes the read models reflect the whole log: returns at once when the file records every
  // projection at the head (writing nothing); otherwise starts the projections and waits for
  // them. Throws FeedError when a projection failed or did not catch up within a minute.
  void sync_read_models() const;

  const factum::EventRegistry& registry() const noexcept { return registry_; }
  factum::EventStore& store() const noexcept { return store_; }

 private:
  void require_user(const std::string& user) const;
  // The stream's first event (a post's Posted); nullopt for an unknown stream.
  std::optional<factum::RecordedEvent> first_event(const std::string& stream) const;
  // Whether the post stream holds a like by `user` (read the way the feed checked likes
  // before it tagged them: for posts of that time).
  bool liked_untagged(const std::string& stream, const std::string& user) const;
  PostId next_post_id() const;
  std::int64_t count(const std::string& sql, std::initializer_list<factum::SqlValue> params) const;
  static std::vector<PostView> feed_in(factum::Sql& sql, const std::string& user,
                                       std::size_t limit);
  // Starts the inline projections (once) and waits until they apply appends themselves.
  void start_projections() const;
  bool read_models_current() const;

  factum::EventStore& store_;
  factum::EventRegistry registry_;
  factum::Repository<User> users_;
  factum::Repository<Post> posts_;
  std::vector<std::shared_ptr<factum::Projection>> projections_;  // run by engine_
  mutable std::mutex engine_mu_;  // guards engine_: started once, by a writer or a reader
  mutable std::unique_ptr<factum::ProjectionEngine> engine_;
};

}  // namespace feed
