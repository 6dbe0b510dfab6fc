// The SQLite backend's rows: turning a selected row (kEventColumns) into a RecordedEvent,
// checking every column.
#pragma once

#include <string>

#include "event_rows.hpp"
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
// Throws the CorruptEventError for the malformed current row of `s`.
[[noreturn]] void throw_corrupt(const Statement& s, const char* problem);

// Runs kHeadSql on `s` (prepared from it) and returns head_of its row. Throws StorageError,
// CorruptEventError.
Head read_head(Statement& s);

}  // namespace factum::detail
