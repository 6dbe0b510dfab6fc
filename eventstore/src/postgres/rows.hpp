// The event rows of a result (postgres/statements.hpp's columns) as EventViews and
// RecordedEvents: every value checked, a damaged row reported as CorruptEventError.
//
// Internal. Thread-safety: functions of their arguments.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "event_rows.hpp"
#include "factum/eventstore/event_view.hpp"
#include "postgres/connection.hpp"

namespace factum::detail::pg {

// Reads column `col` of `row` as an optional event id (NULL: none); false when it is not 16 bytes.
bool read_id(const PgResult& r, int row, int col, std::optional<EventId>& out);

// Stream keys to stream ids (PgConn::stream_names), for rows whose stream column is the key.
using StreamNames = std::unordered_map<std::int64_t, std::string>;

// Points `out` at row `row` of `r`: nullptr when the row is well formed, else what is wrong
// with it. With `names`, the stream column holds the stream's key, named from `names` (which
// must outlive the view).
const char* decode(const PgResult& r, int row, EventView& out, const StreamNames* names = nullptr);

// decode(), throwing CorruptEventError naming the row's position when it is damaged.
void read_view(const PgResult& r, int row, EventView& out, const StreamNames* names = nullptr);

// A stored hash; CorruptEventError (at `position`) when it is not 32 bytes.
Hash hash_of(std::span<const std::byte> bytes, Position position);

// Every row of `r` as a RecordedEvent, added to `out` / returned.
void read_events(const PgResult& r, std::vector<RecordedEvent>& out);
std::vector<RecordedEvent> read_events(const PgResult& r);

}  // namespace factum::detail::pg
