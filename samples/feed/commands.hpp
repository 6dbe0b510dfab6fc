// samples/feed/commands.hpp — what each `factum-feed` subcommand does, given its parsed
// arguments: open the store, run the command through FeedService, print the result.
// main.cpp parses the command line and calls these; errors propagate as exceptions
// (FeedError for refusals, factum::Error for storage problems) and main prints them as one
// line.
//
// Thread-safety: each command is run by one thread.
#pragma once

#include <factum/eventstore/event.hpp>

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include "demo.hpp"

namespace feed {

struct CommandContext {
  std::filesystem::path db = "feed.db";  // the store file
  std::optional<factum::Timestamp> at;   // the event time of a command (default: now)
  std::ostream* out = nullptr;           // where results go (stdout)
  // The KEK file of the personal data (key_file.hpp); default: "<db>.kek".
  std::optional<std::filesystem::path> kek = std::nullopt;
};

// `display_name`: personal data of the user, erased by run_forget.
void run_join(const CommandContext& ctx, const std::string& user,
              const std::optional<std::string>& display_name = std::nullopt);
void run_post(const CommandContext& ctx, const std::string& user, const std::string& text);
void run_like(const CommandContext& ctx, const std::string& user, const std::string& post);
void run_follow(const CommandContext& ctx, const std::string& user, const std::string& other);
void run_unfollow(const CommandContext& ctx, const std::string& user, const std::string& other);
void run_feed(const CommandContext& ctx, const std::string& user, std::size_t limit);
void run_stats(const CommandContext& ctx);
// Forgets the user: their display name and post texts are erased (FeedService::forget).
void run_forget(const CommandContext& ctx, const std::string& user);
// Refuses a store that holds events unless `fresh` (then it is replaced).
void run_demo(const CommandContext& ctx, DemoOptions options, bool fresh);

}  // namespace feed
