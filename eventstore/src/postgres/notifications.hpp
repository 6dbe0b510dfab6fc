// Noticing the commits of other processes (docs/postgres.md, "Noticing commits of other
// processes"): EventStore::watch()'s LogWatcher, which reads factum_store.commits and LISTENs
// on the store's channel.
//
// Internal. Thread-safety: as LogWatcher's (storage.hpp).
#pragma once

#include <memory>
#include <string>

#include "factum/eventstore/store_options.hpp"
#include "postgres_target.hpp"
#include "storage.hpp"

namespace factum::detail::pg {

// A watcher of the store whose commits are announced on `channel`, with a connection of its own.
// Throws StorageError when it cannot connect.
std::unique_ptr<LogWatcher> watch_commits(std::shared_ptr<const PgTarget> target,
                                          const StoreOptions& options, const std::string& channel);

}  // namespace factum::detail::pg
