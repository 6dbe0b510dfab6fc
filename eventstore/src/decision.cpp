// The decision helper (decision.hpp): read by query, decide, append on the condition, retry.
#include "factum/eventstore/decision.hpp"

namespace factum {

std::vector<AppendResult> decide(
    EventStore& store, const Query& query,
    const std::function<std::vector<StreamAppend>(const QueryResult& seen)>& decide_fn,
    const DecideOptions& options) {
  if (options.attempts < 1) {
    throw InvalidArgument("factum: decide needs at least one attempt, not " +
                          std::to_string(options.attempts));
  }
  validate_query(query);
  for (int attempt = 1;; ++attempt) {
    const QueryResult seen = read_query(store, query);
    const std::vector<StreamAppend> appends = decide_fn(seen);
    if (appends.empty()) return {};
    try {
      return store.append_multi(appends, AppendCondition{query, seen.position});
    } catch (const AppendConditionFailed&) {
      if (attempt >= options.attempts) throw;
    }
  }
}

}  // namespace factum
