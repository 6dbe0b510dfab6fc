// The event rows of a result (postgres/statements.hpp's columns) as EventViews and
// RecordedEvents: every value checked, a damaged row reported as CorruptEventError.
//
// Internal. Thread-safety: functions of their arguments.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "event_rows.hpp"
#include "factum/eventstore/event_view.hpp"
#include "postgres/connection.hpp"

namespace factum::detail::pg {

// Reads column `col` of `row` as an optional event id (NULL: none); false when it is not 16 bytes.
bool read_id(const PgResult& r, int row, int col, std::optional<EventId>& out);

// Points `out` at row `row` of `r`: nullptr when the row is well formed, else what is wrong
// with it.
const char* decode(const PgResult& r, int row, EventView& out);

// decode(), throwing CorruptEventError naming the row's position when it is damaged.
void read_view(const PgResult& r, int row, EventView& out);

// A stored hash; CorruptEventError (at `position`) when it is not 32 bytes.
Hash hash_of(std::span<const std::byte> bytes, Position position);

// Every row of `r` as a RecordedEvent, added to `out` / returned.
void read_events(const PgResult& r, std::vector<RecordedEvent>& out);
std::vector<RecordedEvent> read_events(const PgResult& r);

}  // namespace factum::detail::pg
