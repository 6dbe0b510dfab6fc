#include "postgres/statements.hpp"

#include <algorithm>
#include <variant>

#include "event_rows.hpp"
#include "query_index.hpp"

namespace factum::detail::pg {
namespace {

// An event row's columns (see statements.hpp), with `stream` giving its stream id.
std::string columns(const char* stream) {
  return std::string("e.position, ") + stream +
         ", e.stream_version, e.event_id, e.type, e.schema_version, e.payload, e.correlation_id, "
         "e.causation_id, e.compensates, e.actor, e.extra, e.recorded_at, e.hash";
}

// A row's stream id and category, each looked up by key; its previous hash, by position.
constexpr const char* kStreamIdOfRow =
    "(SELECT s.stream_id FROM streams s WHERE s.stream_key = e.stream_key)";
constexpr const char* kCategoryOfRow =
    "(SELECT s.category FROM streams s WHERE s.stream_key = e.stream_key)";
constexpr const char* kLookedUpPrevious =
    "(SELECT p.hash FROM events p WHERE p.position = e.position - 1)";
// A row's previous hash: in a store whose rows keep it (`stored`), the row's own column, looked
// up only where it is NULL (rows an older factum wrote); else looked up.
std::string previous_hash(bool stored) {
  return stored ? std::string("coalesce(e.previous_hash, ") + kLookedUpPrevious + ")"
                : kLookedUpPrevious;
}
// The previous hash of a page's row. Looked up, it is NULL when the page's row before it (in
// the window's order) is the event before it in the log: the reader takes that row's hash
// (walk_page); events appended together sit side by side in a stream or category page. The
// look-up per row cost the server ~2 us per row, half a stream page's time (pgbench, warm):
// hence the column (docs/postgres.md, "Schema").
std::string previous_hash_in_page(const char* order, bool stored) {
  if (stored) return previous_hash(true);
  return std::string("CASE WHEN lag(e.position) OVER (ORDER BY ") + order +
         ") = e.position - 1 THEN NULL::bytea ELSE " + kLookedUpPrevious + " END";
}
// The key of the stream named $1 (NULL: none), computed once per statement.
constexpr const char* kKeyOfStream = "(SELECT s.stream_key FROM streams s WHERE s.stream_id = $1)";
// The last version of the stream of row `s`.
constexpr const char* kLastVersionOfStreamRow =
    "(SELECT e.stream_version FROM events e WHERE e.stream_key = s.stream_key ORDER BY "
    "e.stream_version DESC LIMIT 1)";

std::string select(const char* stream, const std::string& previous, const std::string& rest) {
  return "SELECT " + columns(stream) + ", " + previous + " FROM events e " + rest;
}

}  // namespace

// The stream's key, not its id: the scalar subquery per row that named the stream cost the
// server 1.6-2.3 us per row against 0.25 us for the row itself (5,120 rows, warm); the reader
// names the keys from its connection's cache (PgConn::stream_names).
const std::string kPageAll =
    select("e.stream_key", "NULL::bytea", "WHERE e.position >= $1 ORDER BY e.position LIMIT $2");
const std::string kPageAllRange =
    select("e.stream_key", "NULL::bytea",
           "WHERE e.position >= $1 AND e.position < $2 ORDER BY e.position LIMIT $3");
const std::string kStreamNames =
    "SELECT stream_key, stream_id FROM streams WHERE stream_key = ANY ($1::bigint[])";
RowReads::RowReads(bool stored)
    : page_stream_forward(
          select("$1::text", previous_hash_in_page("e.stream_version", stored),
                 std::string("WHERE e.stream_key = ") + kKeyOfStream +
                     " AND e.stream_version >= $2 ORDER BY e.stream_version LIMIT $3")),
      page_stream_forward_range(
          select("$1::text", previous_hash_in_page("e.stream_version", stored),
                 std::string("WHERE e.stream_key = ") + kKeyOfStream +
                     " AND e.stream_version >= $2 AND e.stream_version < $3 ORDER BY "
                     "e.stream_version LIMIT $4")),
      page_stream_backward(
          select("$1::text", previous_hash(stored),
                 std::string("WHERE e.stream_key = ") + kKeyOfStream +
                     " AND e.stream_version <= $2 ORDER BY e.stream_version DESC LIMIT $3")),
      page_category(select(kStreamIdOfRow, previous_hash_in_page("e.position", stored),
                           std::string("WHERE e.position >= $2 AND ") + kCategoryOfRow +
                               " = $1 ORDER BY e.position LIMIT $3")),
      log_range(select(kStreamIdOfRow, previous_hash(stored),
                       "WHERE e.position >= $1 AND e.position < $2 ORDER BY e.position LIMIT $3")),
      event_by_id(select(kStreamIdOfRow, previous_hash(stored), "WHERE e.event_id = $1")),
      // Ordered by an expression no index gives, so that the only plan is the compensates index
      // and a sort of its few rows (an ordered walk of the whole log would be the other).
      compensations_of(select(kStreamIdOfRow, previous_hash(stored),
                              "WHERE e.compensates = $1 ORDER BY e.position + 0")),
      page_verify("SELECT " + columns(kStreamIdOfRow) +
                  (stored ? ", e.previous_hash, " : ", NULL::bytea, ") + kCategoryOfRow +
                  " FROM events e WHERE e.position >= $1 ORDER BY e.position LIMIT $2") {}

const RowReads& row_reads(bool stored) {
  static const RowReads kStored(true);
  static const RowReads kLookedUp(false);
  return stored ? kStored : kLookedUp;
}

const std::string kHashAt = "SELECT hash FROM events WHERE position = $1";
const std::string kVersionOfStream = std::string("SELECT e.stream_version FROM events e WHERE ") +
                                     "e.stream_key = " + kKeyOfStream +
                                     " ORDER BY e.stream_version DESC LIMIT 1";
const std::string kHead = kHeadSql;
const std::string kLockHead =
    "SELECT position, hash, commits, tableoid::bigint FROM factum_store WHERE id = 1 FOR UPDATE";
const std::string kStreamsNamed = std::string("SELECT s.stream_id, ") + kLastVersionOfStreamRow +
                                  ", s.stream_key FROM streams s WHERE s.stream_id = ANY "
                                  "(string_to_array($1, E'\\n'))";
const std::string kIdsStored =
    std::string("SELECT x.id, (SELECT ") + kStreamIdOfRow +
    " FROM events e WHERE e.event_id = x.id) FROM (SELECT decode(h, 'hex') AS id FROM "
    "unnest(string_to_array($1, ',')) AS h) AS x";
// Rows counted; 22003 (a smallint out of range) when there is any: a guard that aborts the
// transaction of a pipeline.
constexpr const char* kFailIfAny = "SELECT (count(*) * 100000)::int2 FROM ";

const std::string kKeysOf =
    "SELECT k.subject, CASE WHEN k.wrapped IS NULL THEN 0 ELSE 1 END::bigint FROM "
    "factum_subject_keys k WHERE k.subject = ANY (string_to_array($1, E'\\n'))";
// Each subject's key looked up by a scalar subquery (an index probe), not a join.
const std::string kMissingKeysGuard =
    std::string(kFailIfAny) +
    "unnest(string_to_array($1, E'\\n')) AS s(subject) WHERE (SELECT k.wrapped IS NOT NULL FROM "
    "factum_subject_keys k WHERE k.subject = "
    "s.subject) IS NOT TRUE";

std::string dollar_sql(std::string_view sql) {
  std::string out(sql);
  std::replace(out.begin(), out.end(), '?', '$');
  return out;
}

std::string condition_sql(std::string_view sql, bool guard) {
  return guard ? kFailIfAny + ("(" + dollar_sql(sql) + ") found") : dollar_sql(sql);
}

const std::string kStreamKeyAndVersion = std::string("SELECT s.stream_key, ") +
                                         kLastVersionOfStreamRow +
                                         " FROM streams s WHERE s.stream_id = $1";
const std::string kEventOfId = std::string("SELECT e.position, e.stream_key, e.stream_version, ") +
                               kStreamIdOfRow + " FROM events e WHERE e.event_id = $1";
const std::string kStreamOfId =
    std::string("SELECT ") + kStreamIdOfRow + " FROM events e WHERE e.event_id = $1";

std::string insert_events_sql(std::size_t rows, bool keyed, bool previous) {
  const std::size_t per_row = previous ? 15 : 14;
  std::string sql =
      "INSERT INTO events (position, stream_key, stream_version, event_id, type, "
      "schema_version, payload, correlation_id, causation_id, compensates, actor, extra, "
      "recorded_at, hash";
  sql += previous ? ", previous_hash) " : ") ";
  sql += keyed ? "VALUES "
               : "SELECT v.p, (SELECT stream_key FROM streams WHERE stream_id = v.s), "
                 "v.sv, v.id, v.t, v.sch, v.pl, v.c1, v.c2, v.c3, v.a, v.x, v.r, v.h";
  if (!keyed) sql += previous ? ", v.ph FROM (VALUES " : " FROM (VALUES ";
  std::size_t n = 0;
  for (std::size_t row = 0; row < rows; ++row, n += per_row) {
    sql += row == 0 ? "(" : ", (";
    for (std::size_t k = 1; k <= per_row; ++k) {
      // A row's parameters: its stream (key or id), position, then the columns in order.
      const std::size_t param = keyed && k <= 2 ? 3 - k : k;
      sql += (k == 1 ? "$" : ", $") + std::to_string(n + param);
    }
    sql += ")";
  }
  if (keyed) return sql;
  return sql + (previous ? ") AS v(s, p, sv, id, t, sch, pl, c1, c2, c3, a, x, r, h, ph)"
                         : ") AS v(s, p, sv, id, t, sch, pl, c1, c2, c3, a, x, r, h)");
}

std::string chained_insert_sql(std::size_t rows, bool previous) {
  constexpr std::size_t kParams = 16;
  constexpr std::size_t kFirst = 3;  // $1 the store's OID, $2 the channel
  const std::string n = std::to_string(rows);
  // The rows, each with its stream's last stored version (the statement does not see its own
  // rows), looked up once.
  std::string sql =
      "WITH RECURSIVE h AS (SELECT f.position, f.hash FROM factum_store f WHERE f.id = 1 AND "
      "f.tableoid::bigint = $1 AND f.position >= 0 AND octet_length(f.hash) = 32), "
      "l AS MATERIALIZED (SELECT v.*, coalesce((SELECT e.stream_version FROM events e WHERE "
      "e.stream_key = v.k ORDER BY e.stream_version DESC LIMIT 1), 0) AS last FROM (VALUES ";
  for (std::size_t row = 0; row < rows; ++row) {
    sql += (row == 0 ? "(" : ", (") + std::to_string(row + 1);
    for (std::size_t k = 0; k < kParams; ++k) {
      sql += ", $" + std::to_string(kFirst + row * kParams + k);
    }
    sql += ")";
  }
  // Each row's version: the last plus its place in its append. The first row of each append
  // (sid not NULL) checks that its key names that stream and, with ev not NULL, that the
  // stream's last version is ev, or with ev -1 that it has one (ExpectedVersion::stream_exists):
  // 22003 otherwise, by the int2 cast of the ELSE branch, evaluated only when reached (l is
  // MATERIALIZED, so the planner never sees a row's values as constants and folds the cast at
  // plan time, which it would for a one-row group planned with its parameters).
  sql +=
      ") AS v(i, k, off, ev, sid, id, t, sch, pl, c1, c2, c3, a, x, r, pre, post)), "
      "s AS (SELECT l.*, CASE WHEN l.sid IS NULL OR ((SELECT x.stream_id FROM streams x WHERE "
      "x.stream_key = l.k) = l.sid AND (l.ev IS NULL OR CASE WHEN l.ev < 0 THEN l.last > 0 ELSE "
      "l.last = l.ev END)) THEN l.last + l.off ELSE (l.off + 100000)::int2 END AS sv FROM l), ";
  // The chain, row by row from the head (locked by the statement before; a head row that is not
  // sound leaves h empty: 22012 below); each row's input, and each row's place in the chain, by
  // a look-up in the other (no join: a group holds few rows).
  sql +=
      "c(i, p, h) AS (SELECT 0, h.position, h.hash FROM h UNION ALL SELECT c.i + 1, c.p + 1, "
      "sha256(c.h || int8send(c.p + 1) || (SELECT s.pre || int8send(s.sv) || s.post FROM s "
      "WHERE s.i = c.i + 1)) FROM c WHERE c.i < " +
      n +
      "), w AS (INSERT INTO events (position, stream_key, stream_version, event_id, type, "
      "schema_version, payload, correlation_id, causation_id, compensates, actor, extra, "
      "recorded_at, hash" +
      std::string(previous ? ", previous_hash" : "") +
      ") SELECT (SELECT c.p FROM c WHERE c.i = s.i), s.k, s.sv, s.id, s.t, s.sch, s.pl, s.c1, "
      "s.c2, s.c3, s.a, s.x, s.r, (SELECT c.h FROM c WHERE c.i = s.i)" +
      (previous ? ", (SELECT c.h FROM c WHERE c.i = s.i - 1)" : "") +
      " FROM s), u AS (UPDATE factum_store f SET position = h.position + " + n +
      ", hash = (SELECT c.h FROM c WHERE c.i = " + n +
      "), commits = f.commits + 1 FROM h WHERE f.id = 1 RETURNING f.position, f.hash, "
      "f.commits) SELECT 1 / count(*), max(u.position), (array_agg(u.hash))[1], "
      "max(u.commits), pg_notify($2, max(u.commits)::text), (SELECT string_agg((s.sv - "
      "s.off)::text, ',' ORDER BY s.i) FROM s WHERE s.sid IS NOT NULL), " +
      std::string(kCommitLockWait) + " FROM u";
  return sql;
}

std::vector<PlannedStatement> planned_statements() {
  const std::string id = "'\\x0190f5a27c3e7000800000000000002a'::bytea";
  const std::vector<std::string> row_types = {"text",   "bigint", "bigint", "bytea", "text",
                                              "bigint", "bytea",  "bytea",  "bytea", "bytea",
                                              "text",   "bytea",  "bigint", "bytea"};
  const std::vector<std::string> row_values = {
      "'account-7'", "500",  "3",    id,  "'bank.Deposited'", "1", "'\\x00'::bytea", "NULL", "NULL",
      "NULL",        "NULL", "NULL", "0", "'\\x00'::bytea"};
  std::vector<std::string> keyed_types = row_types;
  std::vector<std::string> keyed_values = row_values;
  keyed_types[0] = "bigint";
  keyed_values[0] = "7";
  std::vector<PlannedStatement> out = {
      {"page of the log", kPageAll, {"bigint", "bigint"}, {"500", "512"}},
      {"part of a page of the log",
       kPageAllRange,
       {"bigint", "bigint", "bigint"},
       {"500", "1524", "1024"}},
      {"names of streams", kStreamNames, {"text"}, {"'{7,8}'"}},
  };
  // Each read of previous hashes as a store that keeps them runs it, and as an older store does.
  for (const bool stored : {true, false}) {
    const RowReads& r = row_reads(stored);
    const std::string as = stored ? "" : ", older store";
    const std::vector<PlannedStatement> reads = {
        {"page of a stream" + as,
         r.page_stream_forward,
         {"text", "bigint", "bigint"},
         {"'account-7'", "1", "512"}},
        {"part of a page of a stream" + as,
         r.page_stream_forward_range,
         {"text", "bigint", "bigint", "bigint"},
         {"'account-7'", "4097", "5121", "1024"}},
        {"page of a stream, backward" + as,
         r.page_stream_backward,
         {"text", "bigint", "bigint"},
         {"'account-7'", "100", "512"}},
        {"page of a category" + as,
         r.page_category,
         {"text", "bigint", "bigint"},
         {"'account'", "500", "512"}},
        {"range of the log" + as,
         r.log_range,
         {"bigint", "bigint", "bigint"},
         {"400", "500", "100"}},
        {"event by id" + as, r.event_by_id, {"bytea"}, {id}},
        {"compensations of an event" + as, r.compensations_of, {"bytea"}, {id}, true},
        {"verify's page" + as, r.page_verify, {"bigint", "bigint"}, {"500", "4096"}},
    };
    out.insert(out.end(), reads.begin(), reads.end());
  }
  const std::vector<PlannedStatement> rest = {
      {"hash at a position", kHashAt, {"bigint"}, {"500"}},
      {"version of a stream", kVersionOfStream, {"text"}, {"'account-7'"}},
      {"head", kHead, {}, {}},
      {"head row, locked", kLockHead, {}, {}},
      {"streams of a group", kStreamsNamed, {"text"}, {"E'account-7\\naccount-8'"}},
      {"ids of a group",
       kIdsStored,
       {"text"},
       {"'0190f5a27c3e7000800000000000002a,0190f5a27c3e7000800000000000002b'"}},
      {"stream key and version", kStreamKeyAndVersion, {"text"}, {"'account-7'"}},
      {"event of an id", kEventOfId, {"bytea"}, {id}},
      {"stream of an id", kStreamOfId, {"bytea"}, {id}},
      {"insert of an event, older store", insert_events_sql(1, false, false), row_types,
       row_values},
      {"insert of an event, by its stream's key, older store", insert_events_sql(1, true, false),
       keyed_types, keyed_values},
      {"keys of subjects", kKeysOf, {"text"}, {"E'user:1\\nuser:2'"}},
      {"subjects without a key", kMissingKeysGuard, {"text"}, {"E'user:1\\nuser:2'"}},
  };
  out.insert(out.end(), rest.begin(), rest.end());
  {
    // A store whose rows keep their previous hash: one more parameter a row.
    std::vector<std::string> types = row_types;
    std::vector<std::string> values = row_values;
    types.emplace_back("bytea");
    values.emplace_back("'\\x00'::bytea");
    out.push_back({"insert of an event", insert_events_sql(1, false, true), types, values});
    types[0] = "bigint";
    values[0] = "7";
    out.push_back({"insert of an event, by its stream's key", insert_events_sql(1, true, true),
                   types, values});
  }
  for (const bool previous : {true, false}) {
    const std::string as = previous ? "" : ", older store";
    // Two rows of a group chained on the server: the first checks its stream, the second not.
    std::vector<std::string> types(keyed_types.begin(), keyed_types.end() - 1);
    std::vector<std::string> values(keyed_values.begin(), keyed_values.end() - 1);
    // key, off, ev, sid, the columns from event_id to recorded_at, pre, post
    types.erase(types.begin() + 1, types.begin() + 3);  // no position, no version
    values.erase(values.begin() + 1, values.begin() + 3);
    types.insert(types.begin() + 1, {"bigint", "bigint", "text"});
    values.insert(values.begin() + 1, {"1", "3", "'account-7'"});
    types.insert(types.end(), {"bytea", "bytea"});
    values.insert(values.end(), {"'\\x00'::bytea", "'\\x00'::bytea"});
    PlannedStatement chained{"insert of events chained on the server" + as,
                             chained_insert_sql(2, previous),
                             {"bigint", "text"},
                             {"16384", "'factum'"}};
    for (int row = 0; row < 2; ++row) {
      chained.types.insert(chained.types.end(), types.begin(), types.end());
      chained.values.insert(chained.values.end(), values.begin(), values.end());
      values[1] = "2";  // the second row of the same append: no checks
      values[2] = values[3] = "NULL";
    }
    out.push_back(std::move(chained));
    // One row, its parameters known to the planner (a custom plan): nothing is folded.
    PlannedStatement one{"insert of an event chained on the server" + as,
                         chained_insert_sql(1, previous),
                         {"bigint", "text"},
                         {"16384", "'factum'"}};
    one.types.insert(one.types.end(), types.begin(), types.end());
    values[1] = "1";
    values[2] = "3";
    values[3] = "'account-7'";
    one.values.insert(one.values.end(), values.begin(), values.end());
    out.push_back(std::move(one));
  }
  // A condition's statements (and their guards): an item of a tag, of a tag and a type, of a
  // type, each from its position to the log's head.
  const Query query{{QueryItem{{}, {"user:alice"}}, QueryItem{{"user.Renamed"}, {"user:alice"}},
                     QueryItem{{"user.Renamed"}, {}}}};
  // The parameters' types and literals of a statement.
  const auto with_params = [](const std::vector<SqlValue>& params) {
    PlannedStatement s;
    for (const SqlValue& v : params) {
      const bool number = std::holds_alternative<std::int64_t>(v);
      s.types.emplace_back(number ? "bigint" : "text");
      s.values.push_back(number ? std::to_string(std::get<std::int64_t>(v))
                                : "'" + std::get<std::string>(v) + "'");
    }
    return s;
  };
  const std::vector<ConditionStatement> checks = condition_statements({query, 400}, 500);
  for (std::size_t i = 0; i < checks.size(); ++i) {
    PlannedStatement s = with_params(checks[i].params);
    for (const bool guard : {false, true}) {
      s.name = "condition item " + std::to_string(i + 1) + (guard ? ", as a guard" : "");
      s.sql = condition_sql(checks[i].sql, guard);
      out.push_back(s);
    }
  }
  // A read by the same query's page, from position 400.
  const std::vector<QueryReadStatement> reads =
      query_read_statements(query, 400, SqlDialect::postgres);
  for (std::size_t i = 0; i < reads.size(); ++i) {
    PlannedStatement s = with_params(reads[i].params);
    s.name = "read by query, item " + std::to_string(i + 1);
    s.sql = dollar_sql(reads[i].sql);
    out.push_back(s);
  }
  return out;
}

}  // namespace factum::detail::pg
