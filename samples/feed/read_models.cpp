// samples/feed/read_models.cpp — the projections feeds, posts and follows (read_models.hpp).
#include "read_models.hpp"

#include <cstdint>
#include <string>
#include <string_view>

#include "events.hpp"

namespace feed {
namespace {

std::int64_t micros(factum::Timestamp t) { return t.time_since_epoch().count(); }

// Shared by the three: a name, version 1, and decoding through the registry.
class FeedProjection : public factum::Projection {
 public:
  explicit FeedProjection(const factum::EventRegistry& registry) : registry_(registry) {}
  std::uint32_t version() const override { return 1; }
  void apply(const factum::RecordedEvent& e, factum::ProjectionContext& ctx) override {
    std::visit(factum::overloaded{
                   [&](const UserJoined& event) { on_joined(event, ctx); },
                   [&](const Posted& event) { on_posted(event, ctx); },
                   [&](const Liked& event) { on_liked(event, ctx); },
                   [&](const Followed& event) { on_followed(event, ctx); },
                   [&](const Unfollowed& event) { on_unfollowed(event, ctx); },
               },
               registry_.decode_variant<FeedEvent>(e));
  }

 protected:
  virtual void on_joined(const UserJoined&, factum::ProjectionContext&) {}
  virtual void on_posted(const Posted&, factum::ProjectionContext&) {}
  virtual void on_liked(const Liked&, factum::ProjectionContext&) {}
  virtual void on_followed(const Followed&, factum::ProjectionContext&) {}
  virtual void on_unfollowed(const Unfollowed&, factum::ProjectionContext&) {}

 private:
  const factum::EventRegistry& registry_;
};

class Feeds : public FeedProjection {
 public:
  using FeedProjection::FeedProjection;
  std::string name() const override { return "feeds"; }
  std::vector<std::string> event_types() const override {
    return {"feed.Posted", "feed.Followed", "feed.Unfollowed"};
  }
  void reset(factum::ProjectionContext& ctx) override {
    // "user" quoted: a reserved word in PostgreSQL (SQLite takes either spelling).
    ctx.sql().execute(factum::table_ddl(
        ctx.sql(), "CREATE TABLE " + ctx.table("feeds") +
                       " (\"user\" TEXT NOT NULL, post INTEGER NOT NULL, author TEXT NOT NULL,"
                       " at INTEGER NOT NULL, PRIMARY KEY (\"user\", post))"));
    ctx.sql().execute(
        factum::table_ddl(ctx.sql(), "CREATE TABLE " + ctx.table("feed_audience") +
                                         " (followee TEXT NOT NULL, follower TEXT "
                                         "NOT NULL, PRIMARY KEY (followee, follower))"));
  }

 private:
  void on_posted(const Posted& e, factum::ProjectionContext& ctx) override {
    ctx.sql().execute("INSERT INTO " + ctx.table("feeds") + " (\"user\", post, author, at)" +
                          " SELECT follower, ?1, ?2, ?3 FROM " + ctx.table("feed_audience") +
                          " WHERE followee = ?2",
                      {e.post, e.author, micros(e.at)});
  }
  void on_followed(const Followed& e, factum::ProjectionContext& ctx) override {
    ctx.sql().execute(
        "INSERT INTO " + ctx.table("feed_audience") + " (followee, follower) VALUES (?1, ?2)",
        {e.followee, e.follower});
  }
  void on_unfollowed(const Unfollowed& e, factum::ProjectionContext& ctx) override {
    ctx.sql().execute(
        "DELETE FROM " + ctx.table("feed_audience") + " WHERE followee = ?1 AND follower = ?2",
        {e.followee, e.follower});
  }
};

class Posts : public FeedProjection {
 public:
  using FeedProjection::FeedProjection;
  std::string name() const override { return "posts"; }
  std::vector<std::string> event_types() const override { return {"feed.Posted", "feed.Liked"}; }
  void reset(factum::ProjectionContext& ctx) override {
    ctx.sql().execute(factum::table_ddl(
        ctx.sql(), "CREATE TABLE " + ctx.table("posts") +
                       " (post INTEGER PRIMARY KEY, author TEXT NOT NULL, text TEXT NOT NULL,"
                       " at INTEGER NOT NULL, likes INTEGER NOT NULL)"));
  }

 private:
  void on_posted(const Posted& e, factum::ProjectionContext& ctx) override {
    ctx.sql().execute("INSERT INTO " + ctx.table("posts") +
                          " (post, author, text, at, likes) VALUES (?1, ?2, ?3, ?4, 0)",
                      {e.post, e.author, e.text.text(), micros(e.at)});  // "": erased
  }
  // The author was forgotten: their texts go ("" shows as erased); the likes stay.
  void forget(std::string_view subject, factum::ProjectionContext& ctx) override {
    if (const auto user = user_of_subject(subject)) {
      ctx.sql().execute("UPDATE " + ctx.table("posts") + " SET text = '' WHERE author = ?1",
                        {*user});
    }
  }
  void on_liked(const Liked& e, factum::ProjectionContext& ctx) override {
    ctx.sql().execute("UPDATE " + ctx.table("posts") + " SET likes = likes + 1 WHERE post = ?1",
                      {e.post});
  }
};

class Follows : public FeedProjection {
 public:
  using FeedProjection::FeedProjection;
  std::string name() const override { return "follows"; }
  std::vector<std::string> event_types() const override {
    return {"feed.UserJoined", "feed.Followed", "feed.Unfollowed"};
  }
  void reset(factum::ProjectionContext& ctx) override {
    ctx.sql().execute(factum::table_ddl(ctx.sql(), "CREATE TABLE " + ctx.table("users") +
                                                       " (\"user\" TEXT PRIMARY KEY, joined "
                                                       "INTEGER NOT NULL)"));
    ctx.sql().execute(factum::table_ddl(
        ctx.sql(), "CREATE TABLE " + ctx.table("follows") +
                       " (follower TEXT NOT NULL, followee TEXT NOT NULL, since INTEGER NOT NULL,"
                       " PRIMARY KEY (follower, followee))"));
  }

 private:
  void on_joined(const UserJoined& e, factum::ProjectionContext& ctx) override {
    ctx.sql().execute("INSERT INTO " + ctx.table("users") + " (\"user\", joined) VALUES (?1, ?2)",
                      {e.user, micros(e.at)});
  }
  void on_followed(const Followed& e, factum::ProjectionContext& ctx) override {
    ctx.sql().execute(
        "INSERT INTO " + ctx.table("follows") + " (follower, followee, since) VALUES (?1, ?2, ?3)",
        {e.follower, e.followee, micros(e.at)});
  }
  void on_unfollowed(const Unfollowed& e, factum::ProjectionContext& ctx) override {
    ctx.sql().execute(
        "DELETE FROM " + ctx.table("follows") + " WHERE follower = ?1 AND followee = ?2",
        {e.follower, e.followee});
  }
};

class Profiles : public FeedProjection {
 public:
  using FeedProjection::FeedProjection;
  std::string name() const override { return "profiles"; }
  std::vector<std::string> event_types() const override { return {"feed.UserJoined"}; }
  void reset(factum::ProjectionContext& ctx) override {
    ctx.sql().execute(factum::table_ddl(ctx.sql(), "CREATE TABLE " + ctx.table("profiles") +
                                                       " (handle TEXT PRIMARY KEY, name TEXT "
                                                       "NOT NULL)"));
  }
  // The user was forgotten: their display name goes.
  void forget(std::string_view subject, factum::ProjectionContext& ctx) override {
    if (const auto user = user_of_subject(subject)) {
      ctx.sql().execute("DELETE FROM " + ctx.table("profiles") + " WHERE handle = ?1", {*user});
    }
  }

 private:
  void on_joined(const UserJoined& e, factum::ProjectionContext& ctx) override {
    const std::string name = e.name.text();  // "" when none was given, or it is erased
    if (name.empty()) return;
    ctx.sql().execute("INSERT INTO " + ctx.table("profiles") + " (handle, name) VALUES (?1, ?2)",
                      {e.user, name});
  }
};

}  // namespace

std::vector<std::shared_ptr<factum::Projection>> make_projections(
    const factum::EventRegistry& registry) {
  return {std::make_shared<Feeds>(registry), std::make_shared<Posts>(registry),
          std::make_shared<Follows>(registry), std::make_shared<Profiles>(registry)};
}

}  // namespace feed
