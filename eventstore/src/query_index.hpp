// The store's side of queries (query.hpp): the check of an append's condition, inside its
// transaction.
#pragma once

#include "factum/eventstore/query.hpp"
#include "factum/eventstore/sql.hpp"

namespace factum::detail {

// Inside an append's transaction: throws AppendConditionFailed when an event stored at a
// position after condition.after and before `before` (the first position the append writes)
// matches the condition's query. The caller has made sure the tag table exists
// (ensure_tag_table) when an item of the query names a tag (needs_tag_table). Throws
// StorageError.
void check_condition(Sql& sql, const AppendCondition& condition, Position before);

// Whether an item of `query` names a tag (its check reads the tag table).
bool needs_tag_table(const Query& query);

}  // namespace factum::detail
