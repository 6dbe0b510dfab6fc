// The SQLite backend's part of verify: walking its rows, a page at a time, through the shared
// checks of chain_walk.hpp.
#pragma once

#include <functional>

#include "factum/eventstore/event_store.hpp"
#include "hash_chain.hpp"
#include "sqlite/reader.hpp"
#include "tags_index.hpp"

namespace factum::detail {

// Recomputes every event's hash in position order; see EventStore::verify. Calls
// `on_progress` (when set) with the events checked so far after each page.
VerifyResult verify_chain(ReaderPool& pool, const VerifyOptions& options, TagDigest& tags);

}  // namespace factum::detail
