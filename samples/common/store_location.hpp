// samples/common/store_location.hpp — a sample's --db: the path of a store file, or a
// PostgreSQL connection URI (postgresql://... or postgres://..., docs/postgres.md) whose
// search_path schema holds the store. What only a file has (existence, deletion) goes through
// these helpers, so each program treats a server sensibly:
//
//   if (!factum::samples::store_exists(db)) throw ...;      // a file, or a store in the schema
//   std::cout << factum::samples::shown_location(db);       // a URI's password masked
//
// Thread-safety: plain functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace factum::samples {

// True when `location` is a PostgreSQL URI rather than a file's path.
bool is_server_uri(std::string_view location);

// `location` for messages: a path unchanged, a URI without its password (user:***@host,
// password=***).
std::string shown_location(const std::filesystem::path& location);

// A store file: whether the file exists. A URI: whether its schema holds a factum store,
// found by opening it read-only (nothing is created or written); false too when the schema
// does not exist (opening the store for writing then says so). Throws StorageError when the
// server cannot be reached.
bool store_exists(const std::filesystem::path& location);

// What a program says when asked to delete a store (--fresh) on a server: the samples never
// drop tables on a server, so the message tells how to start over (another schema, or the
// schema emptied by its owner).
std::string no_delete_on_server(std::string_view program, const std::filesystem::path& location,
                                std::uint64_t events);

}  // namespace factum::samples
