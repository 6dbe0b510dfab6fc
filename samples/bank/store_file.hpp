// samples/bank/store_file.hpp — opening the bank's store file for a command, and starting
// over (--fresh).
//
// Thread-safety: plain functions on the file system.
#pragma once

#include <factum/factum.hpp>

#include <filesystem>

namespace bank {

// Opens the store at `db`. Unless `create`, a missing file is an error (std::runtime_error
// saying how to create one) and is not created. Throws factum::StorageError for a file that
// is not a factum store.
factum::EventStore open_store(const std::filesystem::path& db, bool create,
                              factum::Durability durability = factum::Durability::full);

// How many events the store at `db` holds; 0 when there is no file. Opens it read-only.
factum::Position events_in(const std::filesystem::path& db);

// Deletes the store at `db` with its -wal and -shm files. Refuses (factum::StorageError) when
// `db` is not a factum store, so --fresh never deletes somebody else's file.
void delete_store(const std::filesystem::path& db);

}  // namespace bank
