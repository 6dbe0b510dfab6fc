// tools/store_access.hpp — opening a store file for a command: read-only for every command but
// import and checkpoint reset, never creating a file, with one-line errors for a missing path,
// a directory, or a file that is not a factum store. Also small read-only SQL helpers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "factum/eventstore/event_store.hpp"

namespace factum::cli {

// Every command takes a store file's path or a PostgreSQL URI (docs/postgres.md): the two are
// told apart by factum::is_server_location, and messages and reports show either through
// factum::shown_location (a URI's passwords masked, so a secret passed on the command line
// never reaches a log).

// Opens an existing store read-only (never created, never written), with no limit on the length
// of a stream id to read (a store may hold ids written under a raised limit). Throws CliError
// for a missing path or a directory, StorageError (not_a_store, newer_format, ...) otherwise.
EventStore open_read_only(const std::string& path);
// Opens an existing store for writing (checkpoint reset). Never creates a file.
EventStore open_writable(const std::string& path);

// Throws CliError (exit 3, kDamaged) naming the position unless `event`'s stored hash matches its
// fields and the previous event's hash (factum::hash_matches): every command that shows events
// checks each one, so an altered event is never printed as if it were intact.
void require_intact(const RecordedEvent& event);
void require_intact(const EventView& event);

// One integer from a read-only query (the first column of the first row), if any.
std::optional<std::int64_t> query_int(const EventStore& store, const std::string& sql);

// The highest position in the events table (0 when empty), read without checking any row: the
// total of a progress bar.
std::uint64_t max_position(const EventStore& store);

// The schema a PostgreSQL store lives in (the first of its search_path).
std::string store_schema(const EventStore& store);
// The bytes the tables of that schema take on the server, with their indexes and TOAST data.
std::uint64_t schema_size(const EventStore& store);

// The size of a file in bytes, 0 when it does not exist.
std::uint64_t file_size_or_zero(const std::string& path);

}  // namespace factum::cli
