// The store's side of tags (tags.hpp): the index table factum_event_tags and its check.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/sql.hpp"
#include "factum/eventstore/tags.hpp"

namespace factum::detail {

// Whether `e` carries the metadata value kTagsMetadataKey.
bool has_tags(const EventData& e) noexcept;
// Creates the table of tags when missing (inside the caller's write transaction).
void ensure_tag_table(Sql& sql);
// Inside an append's (or an import's) transaction: one row (tag, position) per tag of each of
// `events`. Throws InvalidArgument for a malformed tags value, StorageError.
void index_tags(Sql& sql, std::span<const RecordedEvent> events);

// An order-free digest of (tag, position) pairs: the sums, lane by lane, of their SHA-256.
struct TagDigest {
  std::array<std::uint64_t, 4> sum{};
  std::uint64_t count = 0;
  void add(std::string_view tag, Position position);
};

// After a verify found the chain intact up to `head`: whether the index holds exactly the tags
// of the log's events up to there (one walk of the log, one read of the index; what appends add
// meanwhile is not compared). Problem::tag_index_mismatch otherwise.
VerifyResult check_tag_index(const EventStore& store, Position head);

}  // namespace factum::detail
