// samples/feed/main.cpp — factum-feed: the command line of the feed sample. Parses the
// arguments (CLI11) and runs one subcommand (commands.hpp). Any error is one line on stderr,
// "factum-feed: <message>", escaped, with exit status 1 (output that did not reach stdout too:
// checked_stdout.hpp), or 2 for a usage error (an unknown command or option, a missing
// argument, an option value out of range, a malformed --at); the store is unchanged then
// (cli_errors.hpp).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "checked_stdout.hpp"
#include "cli_errors.hpp"
#include "commands.hpp"
#include "rules.hpp"
#include "time_text.hpp"

namespace {

constexpr const char* kDescription =
    "factum-feed: a social feed on the factum event store. Users join, post, like and follow;\n"
    "each post is fanned out to its author's followers' feeds; `stats` shows windowed\n"
    "metrics over event time (likes per 5 minutes, trending posts, sessions).";

struct Args {
  std::string db = "feed.db";
  std::string kek;
  std::string at;
  std::string name;
  std::string user, other, text, post;
  std::size_t limit = 20;
  feed::DemoOptions demo;
  bool fresh = false;
};

// Registers the subcommands; the chosen one's callback sets `run`.
void add_commands(CLI::App& app, Args& a, std::function<void(const feed::CommandContext&)>& run) {
  auto* demo = app.add_subcommand("demo", "create a realistic history, then show a feed and stats");
  demo->add_flag("--fresh", a.fresh,
                 "replace the events of an existing store file (files only: on a PostgreSQL URI "
                 "the demo wants a schema without events)");
  demo->add_option("--seed", a.demo.seed, "seed of the simulation")->capture_default_str();
  demo->add_option("--users", a.demo.users, "how many users")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{2}, std::size_t{1000}));
  demo->add_option("--days", a.demo.days, "how many days of history")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{30}));
  demo->callback([&] { run = [&](const auto& c) { feed::run_demo(c, a.demo, a.fresh); }; });

  auto* join = app.add_subcommand("join", "a new user joins");
  join->add_option("USER", a.user, "user name")->required();
  CLI::Option* name = join->add_option(
      "--name", a.name, "display name, e.g. \"Alice Liddell\" (personal data: `forget` erases it)");
  join->callback([&a, &run, name] {
    const std::optional<std::string> display =
        name->count() > 0 ? std::optional<std::string>(a.name) : std::nullopt;
    run = [&a, display](const auto& c) { feed::run_join(c, a.user, display); };
  });

  auto* post = app.add_subcommand("post", "USER posts TEXT (fanned out to their followers)");
  post->add_option("USER", a.user, "author")->required();
  post->add_option("TEXT", a.text, "the post, one line")->required();
  post->callback([&] { run = [&](const auto& c) { feed::run_post(c, a.user, a.text); }; });

  auto* like = app.add_subcommand("like", "USER likes post POST");
  like->add_option("USER", a.user, "who likes")->required();
  like->add_option("POST", a.post, "post id, e.g. 17")->required();
  like->callback([&] { run = [&](const auto& c) { feed::run_like(c, a.user, a.post); }; });

  auto* follow = app.add_subcommand("follow", "USER follows OTHER");
  follow->add_option("USER", a.user, "follower")->required();
  follow->add_option("OTHER", a.other, "whom to follow")->required();
  follow->callback([&] { run = [&](const auto& c) { feed::run_follow(c, a.user, a.other); }; });

  auto* unfollow = app.add_subcommand("unfollow", "USER stops following OTHER");
  unfollow->add_option("USER", a.user, "follower")->required();
  unfollow->add_option("OTHER", a.other, "whom to stop following")->required();
  unfollow->callback([&] { run = [&](const auto& c) { feed::run_unfollow(c, a.user, a.other); }; });

  auto* feed = app.add_subcommand("feed", "show USER's feed, newest first");
  feed->add_option("USER", a.user, "whose feed")->required();
  feed->add_option("--limit", a.limit, "most posts shown")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
  feed->callback([&] { run = [&](const auto& c) { feed::run_feed(c, a.user, a.limit); }; });

  auto* stats = app.add_subcommand("stats", "likes per 5 minutes, trending posts, sessions");
  stats->callback([&] { run = [&](const auto& c) { feed::run_stats(c); }; });

  auto* forget = app.add_subcommand(
      "forget", "forget USER: erase their display name and post texts (likes and the proof stay)");
  forget->add_option("USER", a.user, "whom to forget")->required();
  forget->callback([&] { run = [&](const auto& c) { feed::run_forget(c, a.user); }; });
}

// A CLI11 check of --at: a real UTC time (feed::parse_time), else a usage error.
CLI::Validator utc_time() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        try {
          feed::parse_time(text);
          return {};
        } catch (const feed::FeedError& e) {
          return e.what();
        }
      },
      "TIME");
}

}  // namespace

int main(int argc, char** argv) {
  factum::samples::CheckedStdout out;  // what is printed must reach stdout, or exit 1
  CLI::App app(kDescription, "factum-feed");
  Args args;
  std::function<void(const feed::CommandContext&)> run;
  app.add_option("--db", args.db,
                 "the store file, or a PostgreSQL URI (postgresql://...; the store lives in its "
                 "search_path's schema)")
      ->capture_default_str();
  CLI::Option* kek =
      app.add_option("--kek", args.kek,
                     "the key file (32 random bytes) that wraps the keys of personal data "
                     "(default: the store file's path + \".kek\", created when needed; a "
                     "PostgreSQL URI needs one)");
  CLI::Option* at = app.add_option("--at", args.at,
                                   "event time of the command, UTC: YYYY-MM-DDTHH:MM[:SS]Z "
                                   "(default: now; for demo, the end of the history)")
                        ->check(utc_time());
  app.require_subcommand(1);
  app.fallthrough();
  add_commands(app, args, run);
  try {
    app.parse(argc, argv);
    feed::CommandContext context{args.db, std::nullopt, &std::cout};
    if (kek->count() > 0) context.kek = std::filesystem::path(args.kek);
    if (at->count() > 0) context.at = feed::parse_time(args.at);  // checked by utc_time()
    run(context);
  } catch (const CLI::ParseError& e) {
    const int code = factum::samples::report_parse_error(app, e, std::cout, std::cerr);
    if (code != 0) return code;  // its one line is said
  } catch (const std::exception& e) {
    std::cout.flush();
    return factum::samples::report_error(std::cerr, "factum-feed", e.what());
  }
  return out.finish("factum-feed", 0, std::cerr);
}
