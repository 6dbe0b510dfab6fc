// Walking the hash chain.
#pragma once

#include <functional>

#include "factum/eventstore/event_store.hpp"
#include "reader.hpp"

namespace factum::detail {

// Recomputes every event's hash in position order; see EventStore::verify. Calls
// `on_progress` (when set) with the events checked so far after each page.
VerifyResult verify_chain(ReaderPool& pool, const Hash* expected_head,
                          const std::function<void(Position)>& on_progress);

}  // namespace factum::detail
