// factum/eventstore/decision.hpp — the decision helper of consistency by query (docs/dcb.md):
// read the events a query matches, decide, and append on the condition that no matching event
// came after the read; when one did, read and decide again, a bounded number of times. The
// counterpart, for rules across streams, of the aggregate repository's retry on a version
// conflict.
//
//   // "a handle is taken once": the decision reads the handle's events and claims it or refuses.
//   factum::decide(store, factum::Query::tagged({"handle:" + handle}),
//                  [&](const factum::QueryResult& seen) {
//                    if (!seen.events.empty()) throw HandleTaken(handle);
//                    return std::vector<factum::StreamAppend>{
//                        {"user-" + id, factum::ExpectedVersion::no_stream(), {joined(handle)}}};
//                  });
//
// Thread-safety: as the store's appends; the decision runs on the calling thread.
#pragma once

#include <functional>
#include <vector>

#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/query.hpp"

namespace factum {

struct DecideOptions {
  // How many times the read and the decision are made before the last AppendConditionFailed
  // is thrown. Default: 5.
  int attempts = 5;
};

// Reads the events `query` matches (read_query), hands them to `decide`, and appends what it
// returns (append_multi) on the condition AppendCondition{query, the position read}. When that
// fails because a matching event came after the read, starts over with a new read, up to
// options.attempts times. `decision` is called once per attempt, with everything the query
// matches; it returns the appends to make (none: nothing is written, and the result is empty)
// or throws to refuse (what it throws propagates, nothing written). Returns the results of the
// appends. Throws AppendConditionFailed when every attempt lost a race, InvalidArgument for
// attempts < 1 or an invalid query, and what append_multi throws (ConcurrencyError for an
// expected version that does not match is not retried: the decision named it).
std::vector<AppendResult> decide(
    EventStore& store, const Query& query,
    const std::function<std::vector<StreamAppend>(const QueryResult& seen)>& decision,
    const DecideOptions& options = {});

}  // namespace factum
