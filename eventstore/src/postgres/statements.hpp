// The PostgreSQL backend's statements that run per append or per page, and the planner settings
// they run under, so that each has one plan: index scans bounded by a key or a LIMIT, the same
// on an empty log and on a large one, whatever statistics the server holds and whenever the
// statement was prepared (docs/postgres.md, "Plans"). A cost per append or per page that grew
// with the log would be a defect; tests/postgres/plans_test.cpp checks every plan with EXPLAIN.
//
// How. Each (sub)query reads one table through an equality or a range on an indexed column;
// joins are scalar subqueries (a row's stream id is looked up by its key), never left to the
// planner's choice of join method. The session settings below take sequential and bitmap scans
// (which read a table, or a range, whole) out of the planner's choices, so the index scan is
// the only plan left; before, a statement prepared while the store was empty kept a sequential
// scan, and a page read sorted everything after its start once statistics were taken mid-load.
//
// Internal. Thread-safety: constants, and functions of their arguments only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace factum::detail::pg {

// Run by every connection factum opens, before its first statement. A prepared statement is
// planned once (its generic plan): its one plan does not depend on its parameters, and planning
// a 100-row INSERT anew for each batch (as the server does for a statement's first five runs,
// and for good while its custom plans look cheaper) costs a quarter of the batch. No JIT: a
// generic plan's cost is estimated without its LIMIT's value, which on a large log passes
// jit_above_cost, and compiling it took 100 ms of each 1 ms page.
inline constexpr const char* kPlannerSettings =
    "SET enable_seqscan = off; SET enable_bitmapscan = off; "
    "SET plan_cache_mode = force_generic_plan; SET jit = off";
// The rest of a transaction that runs the caller's SQL (read_sql, write_sql, on_appending
// slots) plans it as the server would by default; and factum's settings again, after a slot.
inline constexpr const char* kCallerPlanner =
    "SET LOCAL enable_seqscan TO DEFAULT; SET LOCAL enable_bitmapscan TO DEFAULT; "
    "SET LOCAL plan_cache_mode TO DEFAULT; SET LOCAL jit TO DEFAULT";
inline constexpr const char* kFactumPlanner =
    "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; "
    "SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL jit = off";

// A select-list column of the statement that moves the log's head, evaluated once the head
// row is locked (the log's ordering lock, held until commit): from there on the transaction
// waits for a lock up to factum.commit_lock_timeout (set by each connection: the larger of
// busy_timeout and 60 s), not for busy_timeout (the session's lock_timeout, which bounds the
// wait for the ordering lock). Its commit takes PostgreSQL's server-wide lock that orders
// notifying commits (pg_notify), held by each notifying commit on the server (any store's, any
// database's) until its flush is done: with busy_timeout 0 (lock_timeout 1 ms) an append whose
// ordering lock was free failed as busy whenever another store committed at the same moment.
// An append that holds the log finishes its commit rather than fail: the others wait for it
// either way. Local to the transaction (set_config's third argument): the session's
// lock_timeout is back after the commit.
inline constexpr const char* kCommitLockWait =
    "set_config('lock_timeout', current_setting('factum.commit_lock_timeout'), true)";
// The least of kCommitLockWait's bounds, in milliseconds (PgConn::configure).
inline constexpr long long kMinCommitLockWaitMs = 60000;

// The event columns every read selects, in the order of rows.hpp's EventView (position, stream
// id, version, id, type, schema version, payload, correlation, causation, compensates, actor,
// extra, recorded_at, hash), then the previous event's hash (NULL when not read).

// One page of the whole log: $1 first position, $2 limit. Its stream column holds the stream's
// key (bigint), not its id: the reader names it (kStreamNames, PgConn::stream_names).
extern const std::string kPageAll;
// Part of a page of the whole log (ReadAhead, reader.hpp): $1 first position, $2 the position
// after the last, $3 limit.
extern const std::string kPageAllRange;
// The ids of the streams whose keys $1 lists ('{1,2,...}'): (stream_key, stream_id) rows.
extern const std::string kStreamNames;
// The statements that read events with their previous hash, for a store whose events keep it
// in their column previous_hash (`stored`: stores made since 2026-12-07; PgConn::
// stored_previous) or not (older stores: each row's is looked up by position).
struct RowReads {
  explicit RowReads(bool stored);
  // One page of a stream: $1 stream id, $2 first (last) version, $3 limit.
  std::string page_stream_forward;
  // Part of a page of a stream (ReadAhead, reader.hpp): $1 stream id, $2 first version, $3 the
  // version after the last, $4 limit.
  std::string page_stream_forward_range;
  std::string page_stream_backward;
  // One page of a category: $1 category, $2 first position, $3 limit. Walks the log by
  // position and keeps the events of the category: its cost per page is the page size over
  // the category's share of the events it passes, whatever the log's size.
  std::string page_category;
  // Positions $1 <= p < $2 of the log, at most $3 (an on_appending slot's read_log).
  std::string log_range;
  // The event with id $1; the events that compensate $1, in position order.
  std::string event_by_id;
  std::string compensations_of;
  // Verify's page: kPageAll's columns, the stored previous hash (NULL when none is stored: the
  // walk knows it), then the stream's category.
  std::string page_verify;
};
const RowReads& row_reads(bool stored);
// The hash of the event at position $1.
extern const std::string kHashAt;
// The last version of stream $1 (no row: no such stream); the log's last position and hash.
extern const std::string kVersionOfStream;
extern const std::string kHead;
// The writer's: the head row, locked (position, hash, commits, and the OID of the table
// factum_store: the store's identity, new when the store is made again); the stored streams of
// "\n"-separated stream ids $1 (id, last version, key); the stored ones of ","-separated hex event
// ids $1 (id, stream id; NULL when not stored); one stream's key and last version; an id's row
// (position, stream key, version, stream id); a stored id's stream.
extern const std::string kLockHead;
extern const std::string kStreamsNamed;
extern const std::string kIdsStored;
extern const std::string kStreamKeyAndVersion;
extern const std::string kEventOfId;
extern const std::string kStreamOfId;

// The keys of "\n"-separated subject ids $1: (subject, 1 when it has a key, 0 when it was
// forgotten) for each one in the key table. kMissingKeysGuard: fails with SQLSTATE 22003 (a
// numeric value out of range) when one of them has no key (a speculation's guard).
extern const std::string kKeysOf;
extern const std::string kMissingKeysGuard;
// A statement of factum's own in Sql's "?N" form (every parameter numbered, no literal holding
// "?") in PostgreSQL's words ("$N").
std::string dollar_sql(std::string_view sql);
// A condition's statement (query_index.hpp) in PostgreSQL's words; as a `guard`, failing with
// SQLSTATE 22003 when it finds an event instead of answering its position.
std::string condition_sql(std::string_view sql, bool guard);

// INSERT of `rows` events, 14 parameters per row (15 with `previous`): the stream's key when
// `keyed` (a bigint), else its id (text, the key looked up by a subquery per row: a stream made
// in the same transaction has no key known to the writer); then position, version, the columns
// from event_id to hash, and with `previous` (a store whose rows keep it) the previous hash. The
// plain VALUES form costs the server less: ~7 us per one-event append at ~28k appends/s
// (docs/postgres.md, "Ordering").
std::string insert_events_sql(std::size_t rows, bool keyed, bool previous);

// A group of `rows` events chained on the server (PgWriter::chain_on_server), after kLockHead in
// the same transaction: $1 the store's OID (factum_store's), $2 the channel, then 16 parameters
// a row: the stream's key, the row's place in its append (1, 2, ...), for an append's first row
// its expected last version (NULL: any; -1: one stored) and its stream id (NULL for the other
// rows), the columns from event_id to recorded_at, and ChainHasher::input_around_version's two
// parts. Inserts the rows at the positions after the head and the versions after their streams'
// last, each hash SHA-256(previous hash || position || before || version || after), moves the
// head row past them (commits + 1), and answers (1 / count), the head's position, its hash, the
// commit count, pg_notify($2), and each append's version before it (","-separated). Fails with
// 22012 when factum_store is another table than $1 or its head is not sound, with 22003 when a
// stream's key does not name that stream or its expected version is not met. With `previous`,
// each row keeps its previous hash in its column.
std::string chained_insert_sql(std::size_t rows, bool previous);

// A statement as the plan test runs it: its text, its parameters' types, and example values.
struct PlannedStatement {
  std::string name;
  std::string sql;
  std::vector<std::string> types;   // PostgreSQL type names, one per parameter
  std::vector<std::string> values;  // SQL literals, one per parameter
  bool may_sort = false;            // sorts a bounded set (the compensations of one event)
};

// Every statement above, with example values: what tests/postgres/plans_test.cpp explains.
std::vector<PlannedStatement> planned_statements();

}  // namespace factum::detail::pg
