// The store's schema: creating it in a new file, and checking an existing file is a factum
// store of a format this code reads. See docs/storage-format.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "factum/eventstore/store_options.hpp"
#include "sqlite/connection.hpp"

namespace factum::detail {

// PRAGMA application_id of a factum store: "FCTM".
inline constexpr std::int32_t kApplicationId = 0x4643544d;
// PRAGMA user_version: the storage format version this code writes and reads. Format 2 is
// format 1 plus the triggers that guard inserts; a writable open upgrades a format-1 file.
inline constexpr std::int32_t kFormatVersion = 2;

// What check_schema found in a file.
enum class SchemaState {
  absent,   // an empty file (or none yet): a new store, made by its first successful write
  older,    // a store of an older format: upgraded by its first successful write
  current,  // a store of this format
};

// Checks what the file holds, writing nothing: a store this code reads, or an empty file (not
// for a read-only store, which must exist). Throws StorageError: not_a_store, newer_format,
// corrupt (a damaged file, or a table of the log missing).
SchemaState check_schema(Database& db, const StoreOptions& options);

// Inside a write transaction on `db`: creates the schema in an empty file, or upgrades an older
// format, so that the transaction's writes find it. Rolled back with the transaction: a schema
// is made or upgraded only by a write that commits. Returns true when it changed the schema.
// Throws StorageError as check_schema does.
bool complete_schema(Database& db);

// Switches the file to WAL mode (persistent), retrying while another connection holds it, up to
// `timeout`. Outside any transaction. Throws StorageError (busy, io).
void ensure_wal(Database& db, std::chrono::milliseconds timeout);
// True when the file is in WAL mode.
bool in_wal_mode(Database& db);

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
