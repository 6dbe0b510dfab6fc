// Turning a selected row (kEventColumns) into a RecordedEvent, checking every column.
#pragma once

#include <span>
#include <string>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/event_view.hpp"
#include "sqlite/connection.hpp"

namespace factum::detail {

// Fills `out` from the current row of `s`. Returns "" when the row is well formed, else what
// is wrong with it (nothing is thrown, so verify can report it).
std::string decode_row(const Statement& s, RecordedEvent& out);

// As decode_row, but throws CorruptEventError naming the position when the row is malformed.
void read_row(const Statement& s, RecordedEvent& out);

// Points `out` at the current row of `s` (no copies: valid until `s` steps or resets) after
// checking every column as decode_row does. Returns nullptr when the row is well formed, else
// what is wrong with it.
const char* decode_view(const Statement& s, EventView& out);
// As decode_view, but throws CorruptEventError naming the position when the row is malformed.
void read_view(const Statement& s, EventView& out);
// Copies a view into `out`, reusing its strings' and vectors' capacity. Throws
// CorruptEventError when its metadata key/values are malformed (never for a checked view).
void assign(RecordedEvent& out, const EventView& v);
// Throws the CorruptEventError for the malformed current row of `s`.
[[noreturn]] void throw_corrupt(const Statement& s, const char* problem);

// The newest event's position and hash: the one query every connection uses for it.
inline constexpr const char* kHeadSql =
    "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1";

// The head from a row of kHeadSql (a {0, zeros} head for an empty log): the one place that
// checks a head hash. Throws CorruptEventError naming the position when the hash is not 32
// bytes.
Head head_of(Position position, std::span<const std::byte> hash);
// Runs kHeadSql on `s` (prepared from it) and returns head_of its row. Throws StorageError,
// CorruptEventError.
Head read_head(Statement& s);

}  // namespace factum::detail
