// samples/feed/feed_service.cpp — the feed's commands (rules, then one append) and queries
// (SQL on the read models).
#include "feed_service.hpp"

#include <factum/eventstore/decision.hpp>
#include <factum/eventstore/query.hpp>
#include <factum/eventstore/tags.hpp>

#include <algorithm>
#include <chrono>
#include <thread>

#include "read_models.hpp"
#include "rules.hpp"

namespace feed {
namespace {

using namespace std::chrono_literals;

constexpr const char* kFeedLength = "SELECT count(*) FROM feeds WHERE \"user\" = ?1";

// Metadata of a command: who did it.
factum::Metadata acting(const std::string& user) {
  factum::Metadata m;
  m.actor = user;
  return m;
}

factum::Timestamp timestamp(std::int64_t micros) {
  return factum::Timestamp{std::chrono::microseconds{micros}};
}

// From the columns post, author, text, at, likes, name.
PostView post_view(const factum::SqlRow& row) {
  return PostView{row.integer(0), row.text(1), row.text(2), timestamp(row.integer(3)),
                  row.integer(4), row.text(5)};
}

// Throws when a projection failed.
void require_no_failure(const factum::ProjectionEngine& engine) {
  for (const factum::ProjectionStatus& s : engine.status()) {
    if (s.error) {
      throw FeedError("read model '" + s.name + "' failed at position " +
                      std::to_string(s.error->position) + ": " + s.error->message);
    }
  }
}

// Waits until every projection has caught up AND applies appends inline. wait_idle alone is
// not enough: it answers as soon as the checkpoints reach the head (at once for a new or
// current store), while an inline projection only starts applying appends inside their
// transactions once its own thread has seen the head and reports `running`; an append made
// before that is applied later by that thread, so a query right after it would miss it.
void require_current(const factum::ProjectionEngine& engine) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  const bool idle = engine.wait_idle(60s);
  require_no_failure(engine);
  while (idle && std::chrono::steady_clock::now() < deadline) {
    const auto all = engine.status();
    if (std::all_of(all.begin(), all.end(), [](const factum::ProjectionStatus& s) {
          return s.state == factum::ProjectionState::running;
        })) {
      return;
    }
    require_no_failure(engine);
    std::this_thread::sleep_for(1ms);
  }
  throw FeedError("the read models did not catch up with the log within a minute");
}

}  // namespace

FeedService::FeedService(factum::EventStore& store)
    : store_(store), users_(store, registry_), posts_(store, registry_) {
  if (auto keyring = store.keyring()) registry_.use_keyring(std::move(keyring));
  register_events(registry_);
  projections_ = make_projections(registry_);
}

FeedService::~FeedService() = default;

void FeedService::join(const std::string& user, factum::Timestamp at,
                       const std::optional<std::string>& display_name) {
  check_user_name(user);
  if (display_name) check_display_name(*display_name);
  const std::string taken = "user '" + user + "' exists already";
  // A handle is taken once: decide over the events tagged handle:<user>, append on the
  // condition that none came meanwhile (docs/dcb.md). user_exists covers a handle taken before
  // the feed tagged its events (no tag to find), and the expected version no_stream a join of
  // such an older program racing this one.
  try {
    factum::decide(store_, factum::Query::tagged({handle_tag(user)}),
                   [&](const factum::QueryResult& seen) {
                     if (!seen.events.empty() || user_exists(user)) throw FeedError(taken);
                     start_projections();  // about to write: the read models must see it
                     factum::Metadata metadata = acting(user);
                     factum::set_tags(metadata, {handle_tag(user)});
                     const UserText name =
                         display_name ? UserText::of(subject_of(user), *display_name) : UserText{};
                     return std::vector<factum::StreamAppend>{
                         {user_stream(user),
                          factum::ExpectedVersion::no_stream(),
                          {registry_.encode(UserJoined{user, name, at}, std::move(metadata))}}};
                   });
  } catch (const factum::ConcurrencyError&) {
    throw FeedError(taken);
  }
}

PostId FeedService::post(const std::string& author, const std::string& text, factum::Timestamp at) {
  require_user(author);
  check_post_text(text);
  if (forgotten(author)) {
    throw FeedError("'" + author + "' was forgotten: nothing personal of theirs is written again");
  }
  start_projections();  // every check passed: the append follows
  // The next id after the newest post; another writer may take it first: then try the next.
  PostId id = next_post_id();
  for (int attempt = 0; attempt < 100; ++attempt, ++id) {
    Post p = posts_.load(std::to_string(id));
    if (p.exists()) continue;
    p.create(id, author, text, at);
    factum::Metadata metadata = acting(author);
    factum::set_tags(metadata, {post_tag(id)});  // its likes are checked by query (like)
    try {
      posts_.save(p, metadata);
      return id;
    } catch (const factum::ConcurrencyError&) {
    }
  }
  throw FeedError("no free post id after #" + std::to_string(id));
}

std::size_t FeedService::like(const std::string& user, PostId post, factum::Timestamp at) {
  require_user(user);
  const std::string stream = post_stream(post);
  const std::optional<factum::RecordedEvent> posted = first_event(stream);
  if (!posted) throw FeedError("unknown post #" + std::to_string(post));
  // A post written before the feed tagged its events may have likes without the like tag:
  // those are looked for in its stream (the only ones: the post of a newer feed has a tag).
  const bool untagged = factum::tags_of(posted->metadata).empty();
  const std::string tag = like_tag(user, post);
  factum::decide(store_, factum::Query::tagged({tag}), [&](const factum::QueryResult& seen) {
    if (!seen.events.empty() || (untagged && liked_untagged(stream, user))) {
      throw FeedError("'" + user + "' already likes post #" + std::to_string(post));
    }
    start_projections();
    factum::Metadata metadata = acting(user);
    factum::set_tags(metadata, {tag});
    return std::vector<factum::StreamAppend>{
        {stream,
         factum::ExpectedVersion::stream_exists(),
         {registry_.encode(Liked{post, user, at}, std::move(metadata))}}};
  });
  // The posts read model took the like in the append's transaction (inline projection).
  return static_cast<std::size_t>(count("SELECT likes FROM posts WHERE post = ?1", {post}));
}

std::optional<factum::RecordedEvent> FeedService::first_event(const std::string& stream) const {
  for (const factum::RecordedEvent& e : store_.read_stream(stream, 1)) return e;
  return std::nullopt;
}

bool FeedService::liked_untagged(const std::string& stream, const std::string& user) const {
  for (const factum::RecordedEvent& e : store_.read_stream(stream, 2)) {
    if (e.type == Liked::event_type && registry_.decode<Liked>(e).by == user) return true;
  }
  return false;
}

void FeedService::follow(const std::string& user, const std::string& other, factum::Timestamp at) {
  require_user(user);
  require_user(other);
  users_.execute(
      user,
      [&](User& u) {
        u.follow(other, at);
        start_projections();
      },
      {}, acting(user));
}

void FeedService::unfollow(const std::string& user, const std::string& other,
                           factum::Timestamp at) {
  require_user(user);
  require_user(other);
  users_.execute(
      user,
      [&](User& u) {
        u.unfollow(other, at);
        start_projections();
      },
      {}, acting(user));
}

bool FeedService::forgotten(const std::string& user) const {
  const std::string subject = subject_of(user);
  if (const auto keyring = store_.keyring()) {
    const auto info = keyring->subject(subject);
    return info && info->state == factum::SubjectInfo::State::forgotten;
  }
  const std::vector<factum::SubjectInfo> all = factum::list_subjects(store_);  // no KEK given
  return std::any_of(all.begin(), all.end(), [&](const factum::SubjectInfo& s) {
    return s.subject == subject && s.state == factum::SubjectInfo::State::forgotten;
  });
}

Forgotten FeedService::forget(const std::string& user) {
  require_user(user);
  if (forgotten(user)) throw FeedError("'" + user + "' was forgotten already");
  const factum::RecordedEvent joined = *store_.read_stream(user_stream(user), 1).begin();
  if (joined.schema_version < UserJoined::schema_version) {
    throw FeedError("'" + user +
                    "' joined before factum-feed kept names and posts as personal data: their "
                    "older posts are in the log in plain text, which no forget can erase");
  }
  start_projections();  // the read models purge the user in the forget's transaction
  Forgotten out;
  out.subject = subject_of(user);
  out.had_name = registry_.decode<UserJoined>(joined).name.personal.has_value();
  out.posts = count("SELECT count(*) FROM posts WHERE author = ?1", {user});
  out.position = store_.forget(out.subject).position;
  return out;
}

bool FeedService::user_exists(std::string_view user) const {
  return store_.stream_version(user_stream(user)) > 0;  // a user stream starts with UserJoined
}

void FeedService::require_user(const std::string& user) const {
  check_user_name(user);
  if (!user_exists(user)) throw FeedError("unknown user '" + user + "'");
}

std::vector<PostView> FeedService::feed_in(factum::Sql& sql, const std::string& user,
                                           std::size_t limit) {
  std::vector<PostView> out;
  sql.query(
      "SELECT f.post, f.author, p.text, f.at, p.likes, coalesce(n.name, '') FROM feeds f"
      " JOIN posts p ON p.post = f.post LEFT JOIN profiles n ON n.handle = f.author WHERE "
      "f.\"user\" = ?1 ORDER BY f.at DESC, f.post DESC LIMIT ?2",
      {user, static_cast<std::int64_t>(limit)},
      [&](const factum::SqlRow& row) { out.push_back(post_view(row)); });
  return out;
}

std::vector<PostView> FeedService::feed(const std::string& user, std::size_t limit) const {
  require_user(user);
  sync_read_models();
  std::vector<PostView> out;
  store_.read_sql([&](factum::Sql& sql) { out = feed_in(sql, user, limit); });
  return out;
}

std::int64_t FeedService::feed_length(const std::string& user) const {
  require_user(user);
  sync_read_models();
  return count(kFeedLength, {user});
}

FeedPage FeedService::feed_page(const std::string& user, std::size_t limit) const {
  require_user(user);
  sync_read_models();
  FeedPage page;
  store_.read_sql([&](factum::Sql& sql) {
    page.items = feed_in(sql, user, limit);
    page.total = sql.query_integer(kFeedLength, {user}).value_or(0);
  });
  return page;
}

std::optional<PostView> FeedService::find_post(PostId post) const {
  sync_read_models();
  std::optional<PostView> out;
  store_.read_sql([&](factum::Sql& sql) {
    sql.query(
        "SELECT p.post, p.author, p.text, p.at, p.likes, coalesce(n.name, '') FROM posts p"
        " LEFT JOIN profiles n ON n.handle = p.author WHERE p.post = ?1",
        {post}, [&](const factum::SqlRow& row) { out = post_view(row); });
  });
  return out;
}

std::int64_t FeedService::delivered(PostId post) const {
  sync_read_models();
  return count("SELECT count(*) FROM feeds WHERE post = ?1", {post});
}

std::vector<std::string> FeedService::followers(const std::string& user) const {
  require_user(user);
  sync_read_models();
  std::vector<std::string> out;
  store_.read_sql([&](factum::Sql& sql) {
    sql.query("SELECT follower FROM follows WHERE followee = ?1 ORDER BY follower", {user},
              [&](const factum::SqlRow& row) { out.push_back(row.text(0)); });
  });
  return out;
}

Totals FeedService::totals() const {
  sync_read_models();
  Totals out;
  store_.read_sql([&](factum::Sql& sql) {  // one moment: the numbers agree with each other
    auto count = [&](const char* text) { return sql.query_integer(text).value_or(0); };
    out = Totals{count("SELECT count(*) FROM users"), count("SELECT count(*) FROM posts"),
                 count("SELECT coalesce(sum(likes), 0) FROM posts"),
                 count("SELECT count(*) FROM follows"), count("SELECT count(*) FROM feeds")};
  });
  return out;
}

// Called with the projections started (post), so the posts read model is current.
PostId FeedService::next_post_id() const {
  return count("SELECT coalesce(max(post), 0) + 1 FROM posts", {});
}

void FeedService::sync_read_models() const {
  {
    std::lock_guard lock(engine_mu_);
    if (engine_) {
      require_current(*engine_);
      return;
    }
  }
  if (!read_models_current()) start_projections();
}

void FeedService::start_projections() const {
  std::lock_guard lock(engine_mu_);
  if (engine_) return;
  engine_ = std::make_unique<factum::ProjectionEngine>(store_);
  for (const auto& projection : projections_) {
    engine_->add(projection, {.mode = factum::ProjectionMode::inline_append});
  }
  require_current(*engine_);
}

// True when the file records every projection at its version, at the head and without an
// error (read without writing anything).
bool FeedService::read_models_current() const {
  try {
    const std::vector<factum::ProjectionStatus> recorded =
        factum::ProjectionEngine::recorded(store_);
    return std::all_of(projections_.begin(), projections_.end(), [&](const auto& p) {
      return std::any_of(recorded.begin(), recorded.end(), [&](const factum::ProjectionStatus& s) {
        return s.name == p->name() && s.version == p->version() && s.lag == 0 && !s.error;
      });
    });
  } catch (const factum::StorageError&) {
    return false;  // no projection tables yet
  }
}

std::int64_t FeedService::count(const std::string& sql_text,
                                std::initializer_list<factum::SqlValue> params) const {
  std::int64_t out = 0;
  store_.read_sql([&](factum::Sql& sql) { out = sql.query_integer(sql_text, params).value_or(0); });
  return out;
}

}  // namespace feed
