// Walking the hash chain: the checks verify makes of each row, in position order, on both
// backends (src/sqlite/verify.cpp walks SQLite's rows through it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/event_view.hpp"
#include "hash_chain.hpp"
#include "tags_index.hpp"

namespace factum::detail {

// The checks of a chain walk, shared by the backends: each feeds it the log's rows in position
// order, then the totals. Not thread-safe.
class ChainWalk {
 public:
  // For a walk that checks what `options` ask (its expected and anchored heads), from position 1.
  // The tags of each event found intact go into `tags`, when given (tags_index.hpp).
  explicit ChainWalk(const VerifyOptions& options, TagDigest* tags = nullptr);

  // Checks one row: `problem` is what decoding it found wrong (nullptr: `event` is well formed),
  // `at` its stored position, `category` its stream's recorded category, `stored_previous` the
  // previous hash the row keeps (PostgreSQL; none: the row keeps none), which must be the hash
  // of the event before it. Returns false (with result() filled) at the first break.
  bool check(const char* problem, const EventView& event, Position at, std::string_view category,
             std::optional<std::span<const std::byte>> stored_previous = std::nullopt);
  // Reports an event row below position 1 (`lowest`), which no walk from 1 reaches.
  VerifyResult unchained(std::int64_t lowest) const;
  // After the last row. `sequence`: the highest position the store has handed out;
  // `rows`: how many rows the events table holds.
  VerifyResult finish(Position sequence, std::int64_t rows);
  // Reports a stream row (`stream`) that no event refers to.
  VerifyResult empty_stream(std::string_view stream) const;

  Position next() const noexcept { return next_; }
  const VerifyResult& result() const noexcept { return result_; }

 private:
  bool anchored(const EventView& event, Position at);

  std::optional<Hash> expected_;
  bool seen_head_;
  std::vector<Head> anchors_;  // sorted by position
  std::size_t next_anchor_ = 0;
  Hash previous_{};
  Position next_ = 1;
  VerifyResult result_;
  ChainHasher hasher_;
  TagDigest* tags_;
};
}  // namespace factum::detail
