// What every backend's decoding of an event row shares (src/sqlite/rows.hpp and PostgreSQL's
// rows): copying a checked view into a RecordedEvent, and the head of the log from its stored
// position and hash.
#pragma once

#include <span>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/event_view.hpp"

namespace factum::detail {

// The columns of an event row in the order both backends select them (sqlite/schema.hpp's
// kEventColumns, the event queries of postgres/statements.cpp), then the previous event's hash
// where a query joins it.
enum EventColumn {
  kPosition,
  kStreamId,
  kStreamVersion,
  kEventId,
  kType,
  kSchemaVersion,
  kPayload,
  kCorrelation,
  kCausation,
  kCompensates,
  kActor,
  kExtra,
  kRecordedAt,
  kHash,
  kPreviousHash
};

// Copies a view into `out`, reusing its strings' and vectors' capacity. Throws
// CorruptEventError when its metadata key/values are malformed (never for a checked view).
void assign(RecordedEvent& out, const EventView& v);

// 1 when the events table of the connection's schema has the column previous_hash (PostgreSQL
// stores made since 2026-12-07: docs/postgres.md, "Schema"), else 0. The catalog itself, not
// to_regclass: a session caches a name it looked up and did not find.
inline constexpr const char* kKeepsPreviousHashSql =
    "SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN "
    "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND "
    "c.relname = 'events' AND a.attname = 'previous_hash' AND NOT a.attisdropped";

// The newest event's position and hash: the one query every connection uses for it.
inline constexpr const char* kHeadSql =
    "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1";

// The head from a row of kHeadSql (a {0, zeros} head for an empty log): the one place that
// checks a head hash. Throws CorruptEventError naming the position when the hash is not 32
// bytes.
Head head_of(Position position, std::span<const std::byte> hash);

}  // namespace factum::detail
