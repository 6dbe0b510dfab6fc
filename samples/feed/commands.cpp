// samples/feed/commands.cpp — the subcommands of factum-feed.
#include "commands.hpp"

#include <own_store.hpp>
#include <progress.hpp>
#include <store_location.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <ostream>

#include <key_file.hpp>
#include "metrics.hpp"
#include "report.hpp"
#include "rules.hpp"
#include "time_text.hpp"

namespace feed {
namespace {

// What a feed store holds: users and posts, and the facts of forgotten users
// (factum.SubjectForgotten in the stream factum-subjects).
const factum::samples::StoreOwner& feed_owner() {
  static const factum::samples::StoreOwner kFeed = [] {
    factum::samples::StoreOwner owner{
        "factum-feed",
        {std::string(User::category), std::string(Post::category), "factum"},
        factum::samples::event_types_of<FeedEvent>()};
    owner.types.emplace_back(factum::kSubjectForgottenType);
    return owner;
  }();
  return kFeed;
}

// Opens the store at `db` (creating it only with `options.create_if_missing`). Refuses a store
// that holds anything but users and posts (another sample's, say) before anything is written
// to it.
factum::EventStore open_feed_store(const std::filesystem::path& db,
                                   const factum::StoreOptions& options) {
  auto store = factum::EventStore::open(db, options);
  factum::samples::require_own_store(store, feed_owner());
  return store;
}

// Opens the store of ctx.db with the KEK of ctx (made when missing and `create_kek`, for the
// commands that write personal data).
factum::EventStore open_feed_store(const CommandContext& ctx, factum::StoreOptions options,
                                   bool create_kek) {
  factum::samples::use_key_file(options, ctx.db,
                                factum::samples::key_file_for(ctx.db, ctx.kek, "factum-feed"),
                                create_kek, "users");
  return open_feed_store(ctx.db, options);
}

// Opens the store of a command that needs one already (all but join and demo).
factum::EventStore open_existing(const CommandContext& ctx, bool create_kek = false) {
  // A PostgreSQL URI without --kek: said before connecting.
  factum::samples::key_file_for(ctx.db, ctx.kek, "factum-feed");
  if (!factum::samples::store_exists(ctx.db)) {
    throw FeedError("no feed store at '" + factum::shown_location(ctx.db.string()) +
                    "' (start one with `factum-feed demo` or `factum-feed join USER`)");
  }
  factum::StoreOptions options;
  options.create_if_missing = false;
  return open_feed_store(ctx, options, create_kek);
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
    const auto store = open_feed_store(db, {});  // throws when it is not a feed store
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

// The rules that span streams, decided by query over tags (docs/dcb.md): a handle taken
// again and a post liked again by the same user are refused, and nothing is written.
void show_refused(const CommandContext& ctx, FeedService& feed, const DemoSummary& s) {
  const factum::Position head = feed.store().head_position();
  *ctx.out << "Rules across streams, decided by query over tags (docs/dcb.md):\n";
  auto attempt = [&](const std::string& command, const std::function<void()>& run) {
    try {
      run();
      *ctx.out << "  factum-feed " << command << ": accepted (unexpected)\n";
    } catch (const FeedError& e) {
      *ctx.out << "  factum-feed " << command << ": refused: " << e.what() << "\n";
    }
  };
  attempt("join alice", [&] { feed.join("alice", event_time(ctx)); });
  if (!s.last_liker.empty()) {
    attempt("like " + s.last_liker + " " + std::to_string(s.last_liked),
            [&] { feed.like(s.last_liker, s.last_liked, event_time(ctx)); });
  }
  const factum::Position after = feed.store().head_position();
  *ctx.out << "  (tags handle:<user> and like:<user>:<post>; "
           << (after == head ? "nothing written: the log still ends at position "
                             : "written meanwhile: the log now ends at position ")
           << after << ")\n\n";
}

// The demo's last part: `user` (the author of the newest post in alice's feed) asks to be
// forgotten; alice's feed before and after, and the hash chain still intact.
void show_forget(const CommandContext& ctx, FeedService& feed, const std::string& user) {
  const Forgotten f = feed.forget(user);
  const FeedPage after = feed.feed_page("alice", 8);
  const factum::VerifyResult verified = feed.store().verify();
  *ctx.out << "Right to be forgotten: factum-feed forget " << user << "\n"
           << "  deleted the key of subject " << f.subject << " (fact at position " << f.position
           << "): " << (f.had_name ? "the display name and " : "") << "the texts of " << f.posts
           << (f.posts == 1 ? " post" : " posts")
           << " are erased from the log and the read models; likes and follows remain.\n\n"
           << render_feed("alice", after.items, after.total) << "\n"
           << "Hash chain after the forget: "
           << (verified.ok() ? "intact, " + std::to_string(verified.events_checked) + " events"
                             : "BROKEN at position " + std::to_string(verified.position))
           << " (the log holds only ciphertext of what was forgotten, never changed)\n\n";
}

}  // namespace

void run_join(const CommandContext& ctx, const std::string& user,
              const std::optional<std::string>& display_name) {
  check_user_name(user);  // before the file is created
  if (display_name) check_display_name(*display_name);
  auto store = open_feed_store(ctx, {}, display_name.has_value());
  FeedService feed(store);
  feed.join(user, event_time(ctx), display_name);
  *ctx.out << user_label(user, display_name.value_or("")) << " joined\n";
}

void run_post(const CommandContext& ctx, const std::string& user, const std::string& text) {
  auto store = open_existing(ctx, true);
  FeedService feed(store);
  const PostId id = feed.post(user, text, event_time(ctx));
  const std::int64_t followers = feed.delivered(id);
  *ctx.out << "#" << id << " posted by " << user << ", delivered to the feeds of " << followers
           << (followers == 1 ? " follower\n" : " followers\n");
}

void run_like(const CommandContext& ctx, const std::string& user, const std::string& post) {
  const PostId id = parse_post_id(post);
  auto store = open_existing(ctx);
  FeedService feed(store);
  const std::size_t likes = feed.like(user, id, event_time(ctx));
  *ctx.out << user << " likes #" << id << " (" << likes << (likes == 1 ? " like" : " likes")
           << ")\n";
}

void run_follow(const CommandContext& ctx, const std::string& user, const std::string& other) {
  auto store = open_existing(ctx);
  FeedService feed(store);
  feed.follow(user, other, event_time(ctx));
  *ctx.out << user << " now follows " << other << " (their new posts will reach " << user
           << "'s feed)\n";
}

void run_unfollow(const CommandContext& ctx, const std::string& user, const std::string& other) {
  auto store = open_existing(ctx);
  FeedService feed(store);
  feed.unfollow(user, other, event_time(ctx));
  *ctx.out << user << " no longer follows " << other << "\n";
}

void run_feed(const CommandContext& ctx, const std::string& user, std::size_t limit) {
  auto store = open_existing(ctx);
  FeedService feed(store);
  const FeedPage page = feed.feed_page(user, limit);  // the posts and their count agree
  *ctx.out << render_feed(user, page.items, page.total);
}

void run_stats(const CommandContext& ctx) {
  auto store = open_existing(ctx);
  const FeedService feed(store);  // its registry decodes with the store's keyring
  *ctx.out << render_stats(compute_stats(store, feed.registry()));
}

void run_forget(const CommandContext& ctx, const std::string& user) {
  check_user_name(user);
  auto store = open_existing(ctx);
  FeedService feed(store);
  const Forgotten f = feed.forget(user);
  *ctx.out << "forgot " << user << " (subject " << f.subject << ", fact at position " << f.position
           << "): " << (f.had_name ? "their display name and " : "") << "the texts of their "
           << f.posts << (f.posts == 1 ? " post" : " posts")
           << " are erased; likes and follows remain, and the log still verifies\n";
}

void run_demo(const CommandContext& ctx, DemoOptions options, bool fresh) {
  options.end = event_time(ctx);
  const std::vector<Action> plan = plan_demo(options);  // checks the options first
  prepare_demo_file(ctx.db, fresh);
  const auto started = std::chrono::steady_clock::now();
  factum::StoreOptions store_options;
  store_options.durability = factum::Durability::normal;  // a demo: speed over power cuts
  auto store = open_feed_store(ctx, store_options, true);
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
           << render_stats(compute_stats(store, feed.registry())) << "\n";
  show_refused(ctx, feed, runner.summary());
  if (!alice.items.empty()) show_forget(ctx, feed, alice.items.front().author);
  *ctx.out << "Try: factum-feed feed alice · factum-feed post alice \"hello\" · "
              "factum-feed like bob 1 · factum-feed stats · factum-feed forget USER\n";
}

}  // namespace feed
