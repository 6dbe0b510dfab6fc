// samples/feed/commands.cpp — the subcommands of factum-feed.
#include "commands.hpp"

#include <own_store.hpp>
#include <progress.hpp>
#include <store_location.hpp>

#include <chrono>
#include <cstdio>
#include <ostream>

#include "metrics.hpp"
#include "report.hpp"
#include "rules.hpp"
#include "time_text.hpp"

namespace feed {
namespace {

// Opens the store at `db` (creating it only with `options.create_if_missing`). Refuses a store
// that holds anything but users and posts (another sample's, say) before anything is written
// to it.
factum::EventStore open_feed_store(const std::filesystem::path& db,
                                   const factum::StoreOptions& options = {}) {
  auto store = factum::EventStore::open(db, options);
  static const factum::samples::StoreOwner kFeed{
      "factum-feed",
      {std::string(User::category), std::string(Post::category)},
      factum::samples::event_types_of<FeedEvent>()};
  factum::samples::require_own_store(store, kFeed);
  return store;
}

// Opens the store of a command that needs one already (all but join and demo).
factum::EventStore open_existing(const std::filesystem::path& db) {
  if (!factum::samples::store_exists(db)) {
    throw FeedError("no feed store at '" + factum::shown_location(db.string()) +
                    "' (start one with `factum-feed demo` or `factum-feed join USER`)");
  }
  factum::StoreOptions options;
  options.create_if_missing = false;
  return open_feed_store(db, options);
}

factum::Timestamp event_time(const CommandContext& ctx) { return ctx.at.value_or(now()); }

// Removes a store file with its WAL and shared-memory files.
void remove_store(const std::filesystem::path& db) {
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(db.string() + suffix);
  }
}

// Checks that `db` may receive a demo history: absent, empty, or `fresh` (then removed); never
// another program's store.
// On a server: a schema without events (the demo never drops tables there, --fresh or not).
void prepare_demo_file(const std::filesystem::path& db, bool fresh) {
  if (!factum::samples::store_exists(db)) return;
  std::uint64_t events = 0;
  {
    const auto store = open_feed_store(db);  // throws when it is not a feed store
    events = store.head_position();
  }
  if (events == 0) return;
  if (factum::is_server_location(db.string())) {
    throw FeedError(factum::samples::no_delete_on_server("factum-feed", db, events));
  }
  if (!fresh) {
    throw FeedError("'" + db.string() + "' already holds " + std::to_string(events) +
                    " events; `factum-feed demo --fresh` replaces them");
  }
  remove_store(db);
}

void print_demo_summary(std::ostream& out, const DemoSummary& s, const DemoOptions& o,
                        const factum::EventStore& store, double seconds) {
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.1f", seconds);
  out << "Created " << s.users << " users, " << s.follows << " follows (" << s.unfollows
      << " undone), " << s.posts << " posts and " << s.likes << " likes (" << s.delayed
      << " logged late) over " << o.days << " days up to " << format_time(o.end)
      << " UTC: " << store.head_position() << " events in "
      << factum::shown_location(store.path().string()) << ", in " << elapsed << " s.\n\n";
}

}  // namespace

void run_join(const CommandContext& ctx, const std::string& user) {
  check_user_name(user);  // before the file is created
  auto store = open_feed_store(ctx.db);
  FeedService feed(store);
  feed.join(user, event_time(ctx));
  *ctx.out << user << " joined\n";
}

void run_post(const CommandContext& ctx, const std::string& user, const std::string& text) {
  auto store = open_existing(ctx.db);
  FeedService feed(store);
  const PostId id = feed.post(user, text, event_time(ctx));
  const std::int64_t followers = feed.delivered(id);
  *ctx.out << "#" << id << " posted by " << user << ", delivered to the feeds of " << followers
           << (followers == 1 ? " follower\n" : " followers\n");
}

void run_like(const CommandContext& ctx, const std::string& user, const std::string& post) {
  const PostId id = parse_post_id(post);
  auto store = open_existing(ctx.db);
  FeedService feed(store);
  const std::size_t likes = feed.like(user, id, event_time(ctx));
  *ctx.out << user << " likes #" << id << " (" << likes << (likes == 1 ? " like" : " likes")
           << ")\n";
}

void run_follow(const CommandContext& ctx, const std::string& user, const std::string& other) {
  auto store = open_existing(ctx.db);
  FeedService feed(store);
  feed.follow(user, other, event_time(ctx));
  *ctx.out << user << " now follows " << other << " (their new posts will reach " << user
           << "'s feed)\n";
}

void run_unfollow(const CommandContext& ctx, const std::string& user, const std::string& other) {
  auto store = open_existing(ctx.db);
  FeedService feed(store);
  feed.unfollow(user, other, event_time(ctx));
  *ctx.out << user << " no longer follows " << other << "\n";
}

void run_feed(const CommandContext& ctx, const std::string& user, std::size_t limit) {
  auto store = open_existing(ctx.db);
  FeedService feed(store);
  const FeedPage page = feed.feed_page(user, limit);  // the posts and their count agree
  *ctx.out << render_feed(user, page.items, page.total);
}

void run_stats(const CommandContext& ctx) {
  const auto store = open_existing(ctx.db);
  factum::EventRegistry registry;
  register_events(registry);
  *ctx.out << render_stats(compute_stats(store, registry));
}

void run_demo(const CommandContext& ctx, DemoOptions options, bool fresh) {
  options.end = event_time(ctx);
  const std::vector<Action> plan = plan_demo(options);  // checks the options first
  prepare_demo_file(ctx.db, fresh);
  const auto started = std::chrono::steady_clock::now();
  factum::StoreOptions store_options;
  store_options.durability = factum::Durability::normal;  // a demo: speed over power cuts
  auto store = open_feed_store(ctx.db, store_options);
  FeedService feed(store);
  DemoRunner runner(feed);
  factum::samples::Progress progress("creating history", plan.size());
  for (const Action& action : plan) {
    runner.run(action);
    progress.advance();
  }
  progress.finish();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  print_demo_summary(*ctx.out, runner.summary(), options, store, took.count());
  const FeedPage alice = feed.feed_page("alice", 8);
  *ctx.out << render_feed("alice", alice.items, alice.total) << "\n"
           << render_stats(compute_stats(store, feed.registry())) << "\n"
           << "Try: factum-feed feed alice · factum-feed post alice \"hello\" · "
              "factum-feed like bob 1 · factum-feed stats\n";
}

}  // namespace feed
