// Reads by query and the check of a conditional append (query.hpp), on both backends through
// the Sql handle: an item with tags is read through the tag index (factum_event_tags, its
// first tag's rows from the position asked for, the item's other tags and types checked in
// the same statement), an item without tags from the log by position.
#include <algorithm>
#include <cstring>

#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/tags.hpp"
#include "hash_chain.hpp"
#include "query_index.hpp"
#include "storage.hpp"

namespace factum {
namespace {

constexpr const char* kTagTable = "factum_event_tags";

// "?N, ?N+1, ..." for `count` parameters from `first`.
std::string placeholders(std::size_t first, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) out += ", ";
    out += "?" + std::to_string(first + i);
  }
  return out;
}

// The FROM ... WHERE of an item's events after ?1 (and, with `before`, before ?2), the
// parameters appended to `params`; the item's events are `e` (its first tag's rows `t`), their
// type `type_of` (the column, or a look-up where `e` is not joined).
std::string item_where(const QueryItem& item, bool before, std::vector<SqlValue>& params,
                       std::string_view columns_from, const char* type_of = "e.type") {
  std::string sql;
  const std::size_t base = params.size();
  const char* position = item.tags.empty() ? "e.position" : "t.position";
  if (item.tags.empty()) {
    sql = std::string(columns_from) + " WHERE e.position > ?" + std::to_string(base + 1);
  } else {
    sql = std::string(columns_from) + " WHERE t.tag = ?" + std::to_string(base + 1) +
          " AND t.position > ?" + std::to_string(base + 2);
  }
  if (!item.tags.empty()) params.emplace_back(item.tags.front());
  params.emplace_back(std::int64_t{0});  // `after`, set by the caller
  if (before) {
    params.emplace_back(std::int64_t{0});  // `before`, set by the caller
    sql += std::string(" AND ") + position + " < ?" + std::to_string(params.size());
  }
  if (!item.types.empty()) {
    sql += std::string(" AND ") + type_of + " IN (" +
           placeholders(params.size() + 1, item.types.size()) + ")";
    for (const std::string& type : item.types) params.emplace_back(type);
  }
  for (std::size_t i = 1; i < item.tags.size(); ++i) {
    params.emplace_back(item.tags[i]);
    sql += " AND EXISTS (SELECT 1 FROM factum_event_tags t2 WHERE t2.tag = ?" +
           std::to_string(params.size()) + " AND t2.position = t.position)";
  }
  sql += std::string(" ORDER BY ") + position + " LIMIT ";
  return sql;
}

// The index of the `after` parameter in item_where's parameters.
std::size_t after_index(const QueryItem& item) { return item.tags.empty() ? 0 : 1; }

std::int64_t as_int(Position p) { return static_cast<std::int64_t>(p); }

EventId id_of(const Bytes& b, Position at) {
  if (b.size() != 16) throw CorruptEventError(at, "its event id is not 16 bytes");
  EventId::Bytes raw{};
  std::memcpy(raw.data(), b.data(), raw.size());
  return EventId(raw);
}

std::optional<EventId> optional_id(const SqlRow& r, int column, Position at) {
  if (r.is_null(column)) return std::nullopt;
  return id_of(r.blob(column), at);
}

Hash hash_of(const Bytes& b, Position at) {
  if (b.size() != 32) throw CorruptEventError(at, "its hash is not 32 bytes");
  Hash h{};
  std::memcpy(h.data(), b.data(), h.size());
  return h;
}

// An event from a row of kColumns, its hash checked against its fields.
RecordedEvent event_of(const SqlRow& r) {
  RecordedEvent e;
  e.position = static_cast<Position>(r.integer(0));
  e.stream_id = r.text(1);
  e.stream_version = static_cast<StreamVersion>(r.integer(2));
  e.id = id_of(r.blob(3), e.position);
  e.type = r.text(4);
  e.schema_version = static_cast<std::uint32_t>(r.integer(5));
  if (!r.is_null(6)) e.payload = r.blob(6);
  e.metadata.correlation_id = optional_id(r, 7, e.position);
  e.metadata.causation_id = optional_id(r, 8, e.position);
  e.metadata.compensates = optional_id(r, 9, e.position);
  if (!r.is_null(10)) e.metadata.actor = r.text(10);
  if (!r.is_null(11) && !detail::decode_values(r.blob(11), e.metadata.values)) {
    throw CorruptEventError(e.position, "its metadata values are malformed");
  }
  e.recorded_at = Timestamp(std::chrono::microseconds(r.integer(12)));
  e.hash = hash_of(r.blob(13), e.position);
  if (!r.is_null(14)) e.previous_hash = hash_of(r.blob(14), e.position);
  if (!hash_matches(e)) {
    throw CorruptEventError(e.position,
                            "it does not match its hash (read by query; run factum verify)");
  }
  return e;
}

// The columns event_of reads, of the events `e`. On SQLite the stream and the previous event
// are joined (its planner drives the join from the tag index or the log's key: ~5% faster
// than the look-ups below, bench/factum_bench --case query_read). On PostgreSQL each is looked
// up by key per row, an index probe whatever the statistics say: a join was planned on an
// empty store as a walk of the whole log per row (tests/postgres/plans_test.cpp).
constexpr const char* kJoinedColumns =
    "SELECT e.position, s.stream_id, e.stream_version, e.event_id, e.type, e.schema_version, "
    "e.payload, e.correlation_id, e.causation_id, e.compensates, e.actor, e.extra, "
    "e.recorded_at, e.hash, p.hash ";
constexpr const char* kJoins =
    " JOIN streams s ON s.stream_key = e.stream_key "
    "LEFT JOIN events p ON p.position = e.position - 1";
constexpr const char* kLookedUpColumns =
    "SELECT e.position, (SELECT s.stream_id FROM streams s WHERE s.stream_key = e.stream_key), "
    "e.stream_version, e.event_id, e.type, e.schema_version, e.payload, e.correlation_id, "
    "e.causation_id, e.compensates, e.actor, e.extra, e.recorded_at, e.hash, "
    "(SELECT p.hash FROM events p WHERE p.position = e.position - 1) ";
// The type of the event of a tag row `t`, looked up by position (as above).
constexpr const char* kTypeOfTagRow = "(SELECT x.type FROM events x WHERE x.position = t.position)";

}  // namespace

AppendConditionFailed::AppendConditionFailed(Position after, std::vector<Position> positions)
    : Error([&] {
        std::string list;
        for (Position p : positions) list += (list.empty() ? "" : ", ") + std::to_string(p);
        return "factum: the append's condition failed: events matching its query were appended "
               "after position " +
               std::to_string(after) + " (at " + list + "); nothing was written";
      }()),
      after_(after),
      positions_(std::move(positions)) {}

void validate_query(const Query& query) {
  for (const QueryItem& item : query.items) {
    for (const std::string& tag : item.tags) validate_tag(tag);
    for (const std::string& type : item.types) {
      if (type.empty()) throw InvalidArgument("factum: a query names an empty event type");
    }
  }
}

bool matches(const Query& query, const RecordedEvent& event) {
  return detail::matches(query, event.type, event.metadata);
}

namespace detail {

bool matches(const Query& query, std::string_view type, const Metadata& metadata) {
  std::vector<std::string> tags;
  bool tags_read = false;
  for (const QueryItem& item : query.items) {
    if (!item.types.empty() &&
        std::find(item.types.begin(), item.types.end(), type) == item.types.end()) {
      continue;
    }
    if (!item.tags.empty() && !tags_read) {
      tags = tags_of(metadata);
      tags_read = true;
    }
    const bool all = std::all_of(item.tags.begin(), item.tags.end(), [&](const std::string& t) {
      return std::binary_search(tags.begin(), tags.end(), t);
    });
    if (all) return true;
  }
  return false;
}

}  // namespace detail

namespace {

// visit_query, handing each event to `fn` as a mutable reference (read_query moves it).
template <class F>
Position visit_events(const EventStore& store, const Query& query, Position after, F&& fn) {
  validate_query(query);
  Position cursor = after;
  // Whether the log and the tag table exist, looked up until found (a table once made stays:
  // a dropped one is an error of the reads and of verify's).
  bool log = false;
  bool table = false;
  for (;;) {
    std::vector<RecordedEvent> page;
    Position bound = 0;  // events up to here are complete (0: every item reached the end)
    Position head = 0;
    detail::StoreAccess::read_own_sql(store, [&](Sql& sql) {
      if (!log && sql.object_type("events") != "table") return;  // nothing written yet
      log = true;
      head = static_cast<Position>(
          sql.query_integer("SELECT coalesce(max(position), 0) FROM events").value_or(0));
      if (!table) table = sql.object_type(kTagTable) == "table";
      const std::vector<detail::QueryReadStatement> statements =
          detail::query_read_statements(query, cursor, sql.dialect());
      for (std::size_t i = 0; i < statements.size(); ++i) {
        if (!query.items[i].tags.empty() && !table) continue;  // nothing was ever tagged
        std::size_t rows = 0;
        Position last = 0;
        sql.query(statements[i].sql, statements[i].params, [&](const SqlRow& r) {
          page.push_back(event_of(r));
          last = page.back().position;
          ++rows;
        });
        if (rows == detail::kQueryPage && (bound == 0 || last < bound)) bound = last;
      }
    });
    if (query.items.size() > 1) {  // one item's page is in order already
      std::sort(page.begin(), page.end(), [](const RecordedEvent& a, const RecordedEvent& b) {
        return a.position < b.position;
      });
    }
    Position previous = 0;
    for (RecordedEvent& e : page) {
      if (bound != 0 && e.position > bound) break;
      if (e.position == previous) continue;  // matched by two items
      previous = e.position;
      if (!fn(e)) return e.position;
    }
    if (bound == 0) return std::max(head, cursor);
    cursor = bound;
  }
}

}  // namespace

Position visit_query(const EventStore& store, const Query& query, Position after,
                     const std::function<bool(const RecordedEvent&)>& fn) {
  return visit_events(store, query, after, [&](RecordedEvent& e) { return fn(e); });
}

QueryResult read_query(const EventStore& store, const Query& query, Position after) {
  QueryResult out;
  out.position = visit_events(store, query, after, [&](RecordedEvent& e) {
    out.events.push_back(std::move(e));
    return true;
  });
  return out;
}

namespace detail {

std::vector<QueryReadStatement> query_read_statements(const Query& query, Position after,
                                                      SqlDialect dialect) {
  std::vector<QueryReadStatement> out;
  for (const QueryItem& item : query.items) {
    QueryReadStatement& s = out.emplace_back();
    const std::string page = std::to_string(kQueryPage);
    if (dialect == SqlDialect::sqlite) {
      const std::string from =
          (item.tags.empty()
               ? "FROM events e"
               : "FROM factum_event_tags t JOIN events e ON e.position = t.position") +
          std::string(kJoins);
      s.sql = kJoinedColumns + item_where(item, false, s.params, from) + page;
    } else if (item.tags.empty()) {
      s.sql = kLookedUpColumns + item_where(item, false, s.params, "FROM events e") + page;
    } else {
      // The page's positions from the tag index, in an array computed once; their events read
      // by key, never joined.
      s.sql = kLookedUpColumns +
              ("FROM events e WHERE e.position = ANY (ARRAY(SELECT t.position " +
               item_where(item, false, s.params, "FROM factum_event_tags t", kTypeOfTagRow) + page +
               ")) ORDER BY e.position");
    }
    s.params[after_index(item)] = as_int(after);
  }
  return out;
}

std::vector<ConditionStatement> condition_statements(const AppendCondition& condition,
                                                     Position before) {
  const Query& query = condition.fail_if_events_match;
  std::vector<ConditionStatement> out;
  if (query.items.empty() || before <= condition.after + 1) return out;
  for (const QueryItem& item : query.items) {
    ConditionStatement& s = out.emplace_back();
    // A tagged item's type is looked up per tag row (an index probe): a join left to the
    // planner scanned the whole log per row on PostgreSQL (tests/postgres/plans_test.cpp).
    s.sql = item.tags.empty()
                ? "SELECT e.position " + item_where(item, true, s.params, "FROM events e")
                : "SELECT t.position " +
                      item_where(item, true, s.params, "FROM factum_event_tags t", kTypeOfTagRow);
    s.sql += std::to_string(kConditionPositions);
    s.params[after_index(item)] = as_int(condition.after);
    s.params[after_index(item) + 1] = as_int(before);
  }
  return out;
}

void fail_condition(const AppendCondition& condition, std::vector<Position> found) {
  if (found.empty()) return;
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  if (found.size() > kConditionPositions) found.resize(kConditionPositions);
  throw AppendConditionFailed(condition.after, std::move(found));
}

void check_condition(Sql& sql, const AppendCondition& condition, Position before) {
  std::vector<Position> found;
  for (const ConditionStatement& s : condition_statements(condition, before)) {
    sql.query(s.sql, s.params,
              [&](const SqlRow& r) { found.push_back(static_cast<Position>(r.integer(0))); });
  }
  fail_condition(condition, std::move(found));
}

bool needs_tag_table(const Query& query) {
  return std::any_of(query.items.begin(), query.items.end(),
                     [](const QueryItem& item) { return !item.tags.empty(); });
}

}  // namespace detail
}  // namespace factum
