// The store's side of queries (query.hpp): the check of an append's condition, inside its
// transaction.
#pragma once

#include "factum/eventstore/query.hpp"
#include "factum/eventstore/sql.hpp"

namespace factum::detail {

// Inside an append's transaction: throws AppendConditionFailed when an event stored at a
// position after condition.after and before `before` (the first position the append writes)
// matches the condition's query. Throws StorageError.
void check_condition(Sql& sql, const AppendCondition& condition, Position before);

}  // namespace factum::detail
