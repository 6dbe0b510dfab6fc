// samples/common/store_location.hpp — a sample's --db: the path of a store file, or a
// PostgreSQL connection URI (postgresql://... or postgres://..., docs/postgres.md) whose
// search_path schema holds the store. What only a file has (existence, deletion) goes through
// these helpers, so each program treats a server sensibly; which of the two `db` is, and how a
// message shows it, come from the library (factum/eventstore/location.hpp):
//
//   if (!factum::samples::store_exists(db)) throw ...;      // a file, or a store in the schema
//   if (factum::is_server_location(db.string())) ...;        // a URI, not a file
//   std::cout << factum::shown_location(db.string());       // a URI's password masked
//
// Thread-safety: plain functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace factum::samples {

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
