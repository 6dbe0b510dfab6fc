// The writer of a PostgreSQL store: appends and write_sql, one transaction per commit group.
//
// Ordering. Every append (and every write_sql) first locks the one row of factum_store
// (SELECT ... FOR UPDATE) and keeps the lock until its COMMIT: the writers of all processes and
// machines take turns, each reads the head the one before committed, and a reader can never see
// position N + 1 before N, because N + 1 is written only after N's transaction has ended. The
// cost is one writing transaction at a time per store; group commit (below) amortises it, since
// a process puts every append waiting for the lock into one transaction.
//
// Group commit. Inside a process, appends queue; the first caller leads: it commits the queued
// appends in one transaction, each under a savepoint when there are several (a failing append
// is rolled back alone), and wakes their callers.
//
// How a group commits: writer.cpp (the attempts, and what makes a second one), writer_decide.cpp
// (groups decided here from one look-up: one or two round trips), writer_steps.cpp (appends run
// statement by statement: retries, on_appending slots, a group isolated after a refusal).
//
// Internal. Thread-safety: write() and write_sql() may be called from any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "group_commit.hpp"
#include "hash_chain.hpp"
#include "postgres/pipeline.hpp"
#include "postgres/sql_handle.hpp"
#include "storage.hpp"
#include "tags_index.hpp"

namespace factum::detail::pg {

constexpr std::size_t kMaxGroup = 64;  // appends per group at most

// The columns of `e`'s row from event_id on (event_id, type, schema_version, payload, the
// metadata, recorded_at, hash), after its position, stream and version.
void add_columns(Params& p, const EventData& e, std::int64_t now, const Hash& hash);
// The same up to recorded_at (no hash).
void add_columns(Params& p, const EventData& e, std::int64_t now);
// A hash as a bytea parameter.
void add_hash(Params& p, const Hash& hash);

// The log's head as a group leaves it: the last position and its hash.
struct Tail {
  Position position = 0;
  Hash hash{};
};

// One caller's place in the queue: its appends (or its write_sql) and, once its group is
// done, its results or its error.
struct Pending : GroupCaller {
  std::span<const AppendView> appends;
  AppendSink* sink = nullptr;
  const AppendHook* hook = nullptr;
  // When not null, `hook` does only these: done in the group's own statements where the
  // append is decided here, by `hook` where it runs step by step.
  const AppendChecks* checks = nullptr;
  const std::function<void(Sql&)>* custom = nullptr;  // a write_sql
  std::vector<AppendResult> results;
  std::exception_ptr error;
  std::vector<std::function<void(AppendOutcome)>> notices;
};

class PgWriter {
 public:
  PgWriter(std::shared_ptr<const PgTarget> target, StoreOptions options, std::string channel)
      : target_(std::move(target)),
        options_(std::move(options)),
        channel_(std::move(channel)),
        group_commit_(std::min(options_.max_group_size, kMaxGroup)) {}

  std::vector<AppendResult> write(std::span<const AppendView> appends, AppendSink& sink,
                                  const AppendHook* hook, const AppendChecks* checks);

  void write_sql(const std::function<void(Sql&)>& fn);

 private:
  class HookTransaction;

  // Queues `self` for group commit (group_commit.hpp; a write_sql runs alone) and rethrows
  // its error.
  void enqueue(Pending& self);

  // The leader's connection, replaced when it is not alive (PgConn::alive).
  PgConn& conn();
  // Takes the ordering lock (the head row, FOR UPDATE); returns the head.
  Tail lock_head(PgConn& c);
  // A write_sql's transaction: the ordering lock, the caller's SQL, the head row moved (an
  // import writes events). Records its error in `p`.
  void run_custom(Pending& p) noexcept;
  // Tells p's on_appending slots the outcome of the attempt.
  static void notify(Pending& p, AppendOutcome outcome) noexcept;
  // Forgets what an attempt did to `p` (results, the sink's copies and positions).
  static void reset(Pending& p) noexcept;
  // Records `error` as p's, forgets its results and tells its slots it was rolled back.
  static void fail(Pending& p, std::exception_ptr error) noexcept;

  // A stored stream as the writer knows it: its last version, and its key (0: not known, as for
  // a stream made by a group whose inserts were flushed before a step-by-step append).
  struct StreamState {
    StreamVersion version = 0;
    std::int64_t key = 0;
  };
  using StreamMap = std::map<std::string, StreamState, std::less<>>;

  // What the group's first round trip learns of the log before any of its appends: the store's
  // identity (factum_store's OID), the stored streams it names (their versions and keys) and
  // which of its ids (and compensated ids) are stored where.
  struct Known {
    struct Stored {
      std::string stream;
    };
    std::int64_t store = 0;
    StreamMap streams;
    std::map<EventId, Stored> ids;
    // The positions matching the condition of each of the group's appends that has one
    // checked here, among the stored events.
    std::map<const Pending*, std::vector<Position>> conflicts;
    // The events of the group's appends decided so far, at their positions: a later append's
    // condition is checked against them too.
    struct Decided {
      Position position;
      const EventData* event;
    };
    std::vector<Decided> decided;
    // Whether each subject of the group's personal values has a key (true), was forgotten
    // (false), or is unknown (absent), when `keys_checked`.
    std::map<std::string, bool, std::less<>> keys;
    bool keys_checked = false;  // and the key table made when missing
    bool tag_table = false;     // the tag table made when missing
  };

  // The inserts of decided appends, sent together: the new streams' rows first, then the
  // events of every append in multi-row INSERTs of at most kRowsPerInsert rows. A row of a
  // stream whose key the writer knows gives the key; a new stream's rows name it and the INSERT
  // looks its key up (pg::insert_events_sql): rows of each kind go in INSERTs of their own, in
  // order.
  class Batch {
   public:
    // `previous`: the store's rows keep their previous hash (PgConn::stored_previous), one more
    // parameter a row.
    explicit Batch(bool previous) : previous_(previous) {}
    bool previous() const noexcept { return previous_; }
    // A new stream's row (send tells where its key comes back).
    void add_stream(std::string_view stream) {
      NewStream& s = streams_.emplace_back();
      s.id = stream;
      s.params.text(stream).text(category_of(stream));
    }
    // The parameters of one more event row of `stream`, whose key is `key` (0: a new stream),
    // holding its first value (the key, or for a new stream the stream's id), to be filled
    // with the others (pg::insert_events_sql's).
    Params& add_row(std::int64_t key, std::string_view stream) {
      const bool keyed = key > 0;
      if (rows_.empty() || rows_.back().count == kRowsPerInsert || rows_.back().keyed != keyed) {
        rows_.emplace_back().keyed = keyed;
      }
      ++rows_.back().count;
      Params& row = rows_.back().params;
      return keyed ? row.i64(key) : row.text(stream);
    }
    // One more row of the tag index.
    void add_tag(const std::string& tag, Position position) {
      if (tags_.empty() || tags_.back().count == kTagsPerInsert) tags_.emplace_back();
      ++tags_.back().count;
      tags_.back().params.own(tag).i64(static_cast<std::int64_t>(position));
    }
    // New streams, each with the index of its insert among the results of the pipeline's run
    // (which answer the stream's key).
    using MadeStreams = std::vector<std::pair<std::string_view, std::size_t>>;

    // Sends the statements to `q` and empties the batch; adds the new streams to `made` when
    // not null.
    void send(Pipeline& q, MadeStreams* made = nullptr) {
      for (const NewStream& s : streams_) {
        if (made != nullptr) made->emplace_back(s.id, q.statements());
        q.send("INSERT INTO streams (stream_id, category) VALUES ($1, $2) RETURNING stream_key",
               s.params);
      }
      for (const Rows& rows : rows_) {
        q.send(pg::insert_events_sql(rows.count, rows.keyed, previous_), rows.params);
      }
      for (const Rows& rows : tags_) {
        q.send(pg::dollar_sql(detail::insert_tags_sql(rows.count)), rows.params);
      }
      streams_.clear();
      rows_.clear();
      tags_.clear();
    }

   private:
    static constexpr std::size_t kRowsPerInsert = 1000;  // 15,000 of the 65,535 parameters
    static constexpr std::size_t kTagsPerInsert = 1000;
    struct Rows {
      Params params;
      std::size_t count = 0;
      bool keyed = false;  // rows_: each row gives its stream's key, not its id
    };
    struct NewStream {
      Params params;
      std::string_view id;  // the append's own string
    };
    std::deque<NewStream> streams_;  // deques: parameters point into themselves, nothing moves
    std::deque<Rows> rows_;
    std::deque<Rows> tags_;
    bool previous_;
  };

  // Whether p's append is decided here when it can be: it has no hook, or one that does only
  // its `checks`.
  static bool native(const Pending& p) { return p.hook == nullptr || p.checks != nullptr; }
  // The condition p's append is decided on here, if any.
  static const AppendCondition* condition_of(const Pending& p) {
    return p.checks != nullptr ? p.checks->condition : nullptr;
  }
  // Whether an append of `group` decided here reads or writes the tag table.
  static bool tag_table_needed(std::span<Pending* const> group);
  // The subjects of the personal values of the group's appends decided here ("\n"-separated,
  // each once; empty when none).
  static std::string subjects_needed(std::span<Pending* const> group);
  // Sends the statements that check `condition` against the events before `before` (each
  // answers the positions it found), or, as `guards`, that fail with SQLSTATE 22003 (a
  // numeric value out of range) when they find any. Returns how many statements it sent.
  static std::size_t send_condition(Pipeline& q, const AppendCondition& condition, Position before,
                                    bool guards);

  // What this writer knows of the log as its last commit (or look-up) left it: exact while
  // factum_store.commits still has the value read then, since every write of every process
  // moves that counter (under the head row's lock), and the table factum_store is still the
  // one read then (`store`, its OID): a store made again in its place (dropped, then imported)
  // may reach the same count with other stream keys, and a stale key would put an event into
  // another stream.
  struct Cache {
    bool valid = false;
    std::int64_t commits = 0;
    std::int64_t store = 0;
    Tail tail;
    StreamMap streams;  // stored streams: versions and keys
  };

  static constexpr std::size_t kMaxCachedStreams = 100000;

  // How one attempt at a group's transaction ended.
  enum class Attempt {
    done,       // each append has its result or its own error
    isolate,    // the server refused a statement of the group, on a sound connection: nothing
                // is committed; again, with each append under a savepoint of its own
    reconnect,  // the connection broke before COMMIT was sent: nothing is committed (the
                // server rolls back a transaction whose connection ends); again, on a new one
  };

  // The group's transaction (attempt). A failure that is not an append's own (a version
  // conflict, a duplicate: those fail their append alone) fails the group unless it is one of
  // two that a second attempt can undo for the others: a statement the server refused, which
  // may be one append's data (a constraint, an encoding the database cannot hold, an index
  // row too large): the group runs again with every append step by step under its own
  // savepoint, where that append fails alone (once: a second failure fails them all); and a
  // connection found broken before COMMIT was sent (a server restart, pg_terminate_backend):
  // the group runs again, once, on a new connection.
  void commit_group(std::span<Pending* const> group) noexcept;

  // One attempt at the group's transaction. First, when this writer's cache knows every stream
  // of the group and the group is not `isolated`, in one round trip (speculate); else, or when
  // that finds the cache stale, in two round trips when no append needs more: (1) BEGIN, the
  // ordering lock, and what the appends need to know (Known); then each append is decided here,
  // its inserts queued; (2) the inserts, the head's move and COMMIT. An append that needs the
  // log as earlier appends of the group left it (the same stream or ids), a retry (its first id
  // is stored), one with on_appending slots, and every append of an `isolated` group, runs step
  // by step instead (apply), under a savepoint when the group has several appends, after the
  // queued inserts are flushed.
  Attempt attempt(std::span<Pending* const> group, std::int64_t now, bool isolated,
                  bool reconnected) noexcept;

  // Whether a failed attempt is tried again (see commit_group), and how.
  Attempt next_attempt(const std::exception_ptr& error, std::size_t members, bool committing,
                       bool isolated, bool reconnected) noexcept;

  // Before another attempt: what the last one did to `p` is undone (its slots hear so).
  static void restart(Pending& p) noexcept;

  // The error of a group whose connection broke after its COMMIT was sent.
  StorageError unknown_outcome() const;

  // Stream versions that decided appends leave (streams are the appends' own strings).
  using Versions = std::vector<std::pair<std::string_view, StreamVersion>>;

  // Adds to `out` the stream versions that p's appends (decided, not yet committed) leave.
  static void remember(const Pending& p, Versions& out);

  // The group in one round trip, when the cache knows each of its streams and each append could
  // be decided from it (no slots, no compensations, each stream once; each condition checked
  // by guards after the head's, and against the events of the group's appends before it), as
  // one implicit
  // transaction: a guard that moves the head only if factum_store.commits is still the cached
  // value and divides by zero otherwise (the UPDATE waits for the head row's lock, and re-reads
  // the row once it has it), then the inserts. A stale cache (another writer committed) or a stored
  // id (a retry, a duplicate: the unique indexes refuse it) aborts the transaction: then nothing of
  // the group is stored, the cache is dropped, and false sends the group the careful way. A broken
  // connection throws (the outcome is unknown only if it broke after the statements were sent).
  // `committing` is set once the pipeline's sync (its commit) is sent. Not tried while
  // `contended_`.
  bool speculate(PgConn& c, std::span<Pending* const> group, std::int64_t now, bool& committing);

  // The group in one round trip while `contended_` (other writers commit between this one's
  // groups), when each of its appends is plain (no slots, no checks, no compensation) and names
  // a stored stream whose key `seen_` knows, each once, expecting anything but no_stream, and
  // the group holds at most kMaxChainedRows events and kMaxChainedBytes of payloads: the server
  // assigns the positions and versions and chains the hashes under the head row's lock
  // (kLockHead, then chained_insert_sql), so the lock is held for the server's work and the
  // commit alone, never across a round trip to this process, and nothing this writer remembers
  // of the streams' versions is trusted. Under the lock, the statement checks each stream's key
  // (it names the stream) and expected version, and that factum_store is the table whose OID is
  // store_ with a sound head; a refusal (22003, 22012) or a stored id (23505) rolls the group
  // back and false sends it the careful way, which reports what happened. Then the writer
  // computes the same chain from the head and the versions the server answered (the results,
  // the committed events) and checks that it ends where the server's does. Clears `contended_`
  // when no other writer committed since this one's last group.
  bool chain_on_server(PgConn& c, std::span<Pending* const> group, std::int64_t now,
                       bool& committing);
  static constexpr std::size_t kMaxChainedRows = 16;
  static constexpr std::size_t kMaxChainedBytes = 1 << 20;  // of payloads

  // Sets what `seen_` knows of `stream` from the cache (exact as of the last commit), or forgets
  // the stream when the cache does not know it.
  void learn(std::string_view stream);

  // Runs the pipeline of a group in one round trip (its statements one implicit transaction,
  // committed at the sync; `committing` set) into `r`. When the server refused one of them, the
  // transaction is rolled back, the refusal kept in `failed` and its SQLSTATE returned; "" when
  // it committed. A broken connection throws (unknown_outcome: the sync was sent).
  std::string run_one_trip(PgConn& c, Pipeline& q, std::vector<PgResult>& r, PgResult& failed,
                           bool& committing);

  // Round trip 1: BEGIN, the lock, the streams and ids the group names. Returns the head, and
  // factum_store.commits in `commits`.
  Tail begin_group(PgConn& c, std::span<Pending* const> group, Known& known, std::int64_t& commits);

  // True when `p` can be decided from `known`: no slots, no stream or id appended earlier in the
  // group (or a stream twice in `p`), and its first ids are not stored (a retry, or a duplicate
  // to report as apply does). Its condition, if any, is decided from what `known` found in the
  // stored log and the events of the group's appends decided before it.
  static bool decidable(const Pending& p, const Known& known,
                        const std::set<std::string, std::less<>>& touched,
                        const std::set<EventId>& written);

  // Decides `p` as apply would, from `known`, and adds its inserts to `out`. Throws what apply
  // throws; then nothing of `p` is added.
  void decide(Pending& p, Known& known, Batch& out, Tail& tail, std::int64_t now);

  // DuplicateEventError for `id`, appended to `stream`, stored in stream `where`.
  [[noreturn]] static void duplicate(const EventId& id, std::string_view stream,
                                     const std::string& where);
  // StorageError (corrupt): the head row is missing or malformed.
  [[noreturn]] void bad_head() const;
  // The head in the first row of `r` (position, hash).
  Tail head_row(const PgResult& r) const;

  // Appends p's streams step by step from `tail` (moved past what it writes).
  void apply(PgConn& c, Pending& p, Tail& tail, std::int64_t now);
  // Runs p's on_appending slots on `events` (just written), under the server's default planner.
  void run_hook(PgConn& c, Pending& p, std::vector<RecordedEvent>& events);
  // One stream's append, statement by statement: its look-ups, a retry's check, its inserts.
  AppendResult apply_one(PgConn& c, const AppendView& a, Tail& tail, std::int64_t now,
                         std::vector<RecordedEvent>* committed);

  // A batch whose first id is stored already is either a retry (all ids stored contiguously,
  // in order, in this stream, with the same content: the first try's result) or a duplicate.
  std::optional<AppendResult> find_retry(PgConn& c, const AppendView& a,
                                         std::optional<std::int64_t> key);

  // The stream the event `id` is stored in, if it is.
  std::optional<std::string> stored_in(PgConn& c, const EventId& id);

  // DuplicateEventError for `id`, naming the stream it is stored in.
  [[noreturn]] void throw_duplicate(PgConn& c, const EventId& id, std::string_view stream);
  // InvalidArgument unless e's `compensates` names an event of the stream of key `key`.
  void check_compensates(PgConn& c, const EventData& e, std::int64_t key, std::string_view stream);

  std::shared_ptr<const PgTarget> target_;
  StoreOptions options_;
  std::string channel_;
  std::unique_ptr<PgConn> conn_;  // the leader's (one leader at a time)
  ChainHasher hasher_;            // the leader's
  Cache cache_;                   // the leader's
  // The leader's: another writer (another process, or another store on the same server)
  // committed since this one's last commit. A speculation then fails after waiting for the
  // other's commit, and the careful way runs anyway: 16 writers in 4 processes appended at 0.3x
  // the rate of one. Set when a speculation finds its cache stale; cleared when the careful
  // way's lock, or a group chained on the server, finds the head where this writer left it (it
  // is alone again). While set, groups are chained on the server where they can be.
  bool contended_ = false;
  // The leader's: the streams this writer appended to or looked up, with their keys and the
  // last versions it saw, exact or not (other writers may have appended since): only groups
  // chained on the server use it (its keys, checked by the server). And factum_store's OID as
  // the last careful group read it (0: not known).
  StreamMap seen_;
  std::int64_t store_ = 0;
  // The leader's: the tag table exists (a group that created it, or wrote to it, committed).
  // A speculation that needs the table sends its CREATE TABLE only while this is false; the
  // careful way always does.
  bool tag_table_ = false;
  // The leader's, likewise for the key table (factum_subject_keys): a speculation checks keys
  // only once it exists (a careful group makes it).
  bool key_table_ = false;
  GroupCommit<Pending> group_commit_;
};

}  // namespace factum::detail::pg
