// The store's side of queries (query.hpp): the check of an append's condition, inside its
// transaction.
#pragma once

#include "factum/eventstore/query.hpp"
#include "factum/eventstore/sql.hpp"

#include <string>
#include <vector>

namespace factum::detail {

// Inside an append's transaction: throws AppendConditionFailed when an event stored at a
// position after condition.after and before `before` (the first position the append writes)
// matches the condition's query. The caller has made sure the tag table exists
// (ensure_tag_table) when an item of the query names a tag (needs_tag_table). Throws
// StorageError.
void check_condition(Sql& sql, const AppendCondition& condition, Position before);

// check_condition's statements (Sql's "?N" form), one per item of the condition's query, each
// selecting the positions (at most kConditionPositions, in order) of its item's events after
// condition.after and before `before`: for a backend that sends them with its own statements.
struct ConditionStatement {
  std::string sql;
  std::vector<SqlValue> params;
};
constexpr std::size_t kConditionPositions = 8;
std::vector<ConditionStatement> condition_statements(const AppendCondition& condition,
                                                     Position before);

// The statements of a page of read_query/visit_query (Sql's "?N" form), one per item of
// `query`, each selecting the columns of the item's events after `after`, at most kQueryPage,
// in order of position, in `dialect`.
struct QueryReadStatement {
  std::string sql;
  std::vector<SqlValue> params;
};
constexpr std::size_t kQueryPage = 256;
std::vector<QueryReadStatement> query_read_statements(const Query& query, Position after,
                                                      SqlDialect dialect);

// AppendConditionFailed naming the first kConditionPositions of `found` (any order, repeats
// allowed), or nothing when `found` is empty.
void fail_condition(const AppendCondition& condition, std::vector<Position> found);

// matches(query, event) for an event not yet recorded: its type and metadata.
bool matches(const Query& query, std::string_view type, const Metadata& metadata);

// Whether an item of `query` names a tag (its check reads the tag table).
bool needs_tag_table(const Query& query);

}  // namespace factum::detail
