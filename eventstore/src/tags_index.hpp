// The store's side of tags (tags.hpp): the index table factum_event_tags and its check.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/event_view.hpp"
#include "factum/eventstore/sql.hpp"
#include "factum/eventstore/tags.hpp"

namespace factum::detail {

// Creates the table of tags when missing (inside the caller's write transaction).
void ensure_tag_table(Sql& sql);
// The statement ensure_tag_table runs, in the words of `dialect`.
std::string tag_table_ddl(SqlDialect dialect);
// Inside an append's (or an import's) transaction, after ensure_tag_table in it: one row
// (tag, position) per tag of each of `events`, in multi-row inserts. Throws InvalidArgument for
// a malformed tags value, StorageError.
void index_tags(Sql& sql, std::span<const RecordedEvent> events);
// The INSERT of `rows` rows (tag, position) into the tag table, in Sql's "?N" form.
std::string insert_tags_sql(std::size_t rows);

// An order-free digest of (tag, position) pairs: the sums, lane by lane, of their SHA-256.
struct TagDigest {
  std::array<std::uint64_t, 4> sum{};
  std::uint64_t count = 0;
  Position first = 0;  // the first event with tags (or a malformed tags value) added
  void add(std::string_view tag, Position position);
  // Adds the tags of `event` (a checked view of the chain walk, ChainWalk); a malformed tags
  // value counts as a difference from any index.
  void add(const EventView& event);
  bool malformed = false;
};

// After a verify walked the intact chain up to position `walked`, digesting the events' tags
// into `log`: whether the index holds exactly those tags up to there (one read of the index;
// rows of appends committed meanwhile are past `walked`). Problem::tag_index_mismatch
// otherwise, at the first position where they differ.
VerifyResult check_tag_index(const EventStore& store, const TagDigest& log, Position walked);

}  // namespace factum::detail
