// The SQLite backend's notifications: how a store learns that the log changed, whichever
// connection or process committed. SQLite cannot push (LogWatcher::push answers
// false): a watcher polls PRAGMA data_version on a read connection of its own.
#pragma once

#include <filesystem>
#include <memory>

#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/store_options.hpp"

namespace factum::detail {

// A watcher of the store file at `path` (Storage::watch), opened read-only (`immutable`: as a
// file nothing changes, see check_read_only in sqlite/storage.cpp). A file not made yet is watched
// from when it appears. Throws StorageError when the file is there but cannot be opened.
std::unique_ptr<LogWatcher> watch_data_version(std::filesystem::path path,
                                               const StoreOptions& options, bool immutable);

}  // namespace factum::detail
