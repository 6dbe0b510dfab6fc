// Turning a selected row (kEventColumns) into a RecordedEvent, checking every column.
#pragma once

#include <string>

#include "factum/eventstore/event.hpp"
#include "sqlite.hpp"

namespace factum::detail {

// Fills `out` from the current row of `s`. Returns "" when the row is well formed, else what
// is wrong with it (nothing is thrown, so verify can report it).
std::string decode_row(const Statement& s, RecordedEvent& out);

// As decode_row, but throws CorruptEventError naming the position when the row is malformed.
void read_row(const Statement& s, RecordedEvent& out);

// The stored bytes of an optional event id column (NULL or 16 bytes).
bool read_optional_id(const Statement& s, int col, std::optional<EventId>& out);

}  // namespace factum::detail
