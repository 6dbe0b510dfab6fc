// Walking the hash chain.
#pragma once

#include "factum/eventstore/event_store.hpp"
#include "reader.hpp"

namespace factum::detail {

// Recomputes every event's hash in position order; see EventStore::verify.
VerifyResult verify_chain(ReaderPool& pool, const Hash* expected_head);

}  // namespace factum::detail
