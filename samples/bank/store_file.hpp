// samples/bank/store_file.hpp — opening the bank's store for a command, and starting over
// (--fresh). A store that holds anything but the bank's accounts (another sample's store) is
// refused as it is opened, before anything is written to it (own_store.hpp). The store is a
// file, or a schema on a PostgreSQL server when `db` is a URI (store_location.hpp).
//
// Thread-safety: plain functions on the file system.
#pragma once

#include <factum/factum.hpp>

#include <filesystem>
#include <optional>

namespace bank {

// The --kek option of this process (key_file.hpp): the key file of the owners' names; nullopt
// for the default, "<db>.kek". Set once, by main, before any command runs.
void set_key_file(std::optional<std::filesystem::path> kek);

// Opens the store at `db`, with the KEK of its owners' names (key_file.hpp; the file is made
// when missing and `create`). Unless `create`, a missing file (a schema without a store) is an
// error (std::runtime_error saying how to create one) and is not created. Throws
// factum::StorageError for a file that is not a factum store, std::runtime_error for a store with
// events that are not the bank's.
factum::EventStore open_store(const std::filesystem::path& db, bool create,
                              factum::Durability durability = factum::Durability::full);

// How many events the bank's store at `db` holds; 0 when there is no file (no store in the
// schema). Throws as open_store does; writes nothing (and leaves no -wal or -shm file behind).
factum::Position events_in(const std::filesystem::path& db);

// Deletes the store at `db` with its -wal and -shm files. Refuses (as events_in) when `db` is
// not a factum store or not the bank's, so --fresh never deletes somebody else's file. On a
// server it deletes nothing and refuses (std::runtime_error saying how to start over): the
// bank never drops tables it may not have created.
void delete_store(const std::filesystem::path& db);

}  // namespace bank
