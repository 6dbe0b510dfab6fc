// The store's schema: creating it in a new file, and checking an existing file is a factum
// store of a format this code reads. See docs/storage-format.md.
#pragma once

#include <cstdint>
#include <string>

#include "factum/eventstore/store_options.hpp"
#include "sqlite.hpp"

namespace factum::detail {

// PRAGMA application_id of a factum store: "FCTM".
inline constexpr std::int32_t kApplicationId = 0x4643544d;
// PRAGMA user_version: the storage format version this code writes and reads. Format 2 is
// format 1 plus the triggers that guard inserts; a writable open upgrades a format-1 file.
inline constexpr std::int32_t kFormatVersion = 2;

// Makes `db` ready: creates the schema in a new, empty file (unless read-only), or checks an
// existing one. Throws StorageError (not_a_store, newer_format) and changes nothing then.
void prepare_schema(Database& db, const StoreOptions& options);

// Per-connection settings: busy timeout, synchronous, size limit, query_only for readers.
void configure_connection(Database& db, const StoreOptions& options, bool reader);

// The column list every event read selects, in the order decode_row expects.
inline constexpr const char* kEventColumns =
    "e.position, s.stream_id, e.stream_version, e.event_id, e.type, e.schema_version, "
    "e.payload, e.correlation_id, e.causation_id, e.compensates, e.actor, e.extra, "
    "e.recorded_at, e.hash, p.hash";
// Joined by every event read: the previous event, for its hash.
inline constexpr const char* kPreviousJoin = " LEFT JOIN events p ON p.position = e.position - 1 ";

// SELECT kEventColumns <tail>, with the previous event joined in before the WHERE clause.
std::string select_events(const char* tail);

}  // namespace factum::detail
