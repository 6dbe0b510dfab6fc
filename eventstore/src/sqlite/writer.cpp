#include "sqlite/writer.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <string>

#include "sqlite/rows.hpp"
#include "sqlite/schema.hpp"
#include "walk_check.hpp"

namespace factum::detail {
namespace {

int writer_flags(const StoreOptions& options) {
  return SQLITE_OPEN_READWRITE | (options.create_if_missing ? SQLITE_OPEN_CREATE : 0);
}

std::int64_t now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

// What the file holds (nothing is written), with the connection configured.
SchemaState checked(Database& db, const StoreOptions& options) {
  const SchemaState state = check_schema(db, options);
  configure_connection(db, options, /*reader=*/false);
  return state;
}

void bind_optional_id(Statement& s, int index, const std::optional<EventId>& id) {
  if (id) {
    s.bind_blob(index, id->bytes().data(), id->bytes().size());
  } else {
    s.bind_null(index);
  }
}

template <typename A, typename B>
bool same_bytes(const A& stored, const B& want) {
  return stored.size() == want.size() &&
         (want.size() == 0 || std::memcmp(stored.data(), want.data(), want.size()) == 0);
}

bool same_optional_id(const Statement& s, int col, const std::optional<EventId>& want) {
  if (s.column_type(col) == SQLITE_NULL) return !want;
  return want && same_bytes(s.column_blob(col), want->bytes());
}

// True when the stored event at the current row of `s` (columns: event_id, position, type,
// schema_version, payload, correlation_id, causation_id, compensates, actor, extra) has the
// content of `want`: the test that tells a retried event from another event with the same id.
bool same_content(const Statement& s, const EventData& want) {
  const Metadata& m = want.metadata;
  if (s.column_text(2) != want.type || s.column_int(3) != std::int64_t{want.schema_version} ||
      !same_bytes(s.column_blob(4), want.payload) || !same_optional_id(s, 5, m.correlation_id) ||
      !same_optional_id(s, 6, m.causation_id) || !same_optional_id(s, 7, m.compensates) ||
      s.column_text(8) != m.actor) {
    return false;
  }
  if (m.values.empty()) return s.column_type(9) == SQLITE_NULL;
  const std::string extra = encode_values(m.values);
  return same_bytes(s.column_blob(9), extra);
}

}  // namespace

Writer::Queries::Queries(Database& db)
    : find_stream(db, "SELECT stream_key FROM streams WHERE stream_id = ?1"),
      insert_stream(db, "INSERT INTO streams (stream_id, category) VALUES (?1, ?2)"),
      last_version(db,
                   "SELECT stream_version FROM events WHERE stream_key = ?1 "
                   "ORDER BY stream_version DESC LIMIT 1"),
      by_id(db,
            "SELECT e.position, e.stream_key, e.stream_version, s.stream_id FROM events e "
            "LEFT JOIN streams s ON s.stream_key = e.stream_key WHERE e.event_id = ?1"),
      ids_from(db,
               "SELECT event_id, position, type, schema_version, payload, correlation_id, "
               "causation_id, compensates, actor, extra FROM events WHERE stream_key = ?1 "
               "AND stream_version >= ?2 ORDER BY stream_version LIMIT ?3"),
      tail(db, kHeadSql),
      log_range(db, select_events("FROM events e LEFT JOIN streams s ON s.stream_key = "
                                  "e.stream_key WHERE e.position >= ?1 AND e.position < ?2 "
                                  "ORDER BY e.position LIMIT ?3")
                        .c_str()),
      insert_event(db,
                   "INSERT INTO events (position, stream_key, stream_version, event_id, type, "
                   "schema_version, payload, correlation_id, causation_id, compensates, actor, "
                   "extra, recorded_at, hash) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)") {}

Writer::Writer(const std::filesystem::path& path, const StoreOptions& options)
    : db_(path, writer_flags(options), static_cast<int>(options.busy_timeout.count())),
      options_(options),
      schema_(checked(db_, options)),
      wal_(schema_ != SchemaState::absent && in_wal_mode(db_)),
      q_(schema_ == SchemaState::absent ? nullptr : std::make_unique<Queries>(db_)),
      begin_(db_, "BEGIN IMMEDIATE"),
      commit_(db_, "COMMIT"),
      savepoint_(db_, "SAVEPOINT factum_append"),
      release_(db_, "RELEASE factum_append"),
      rollback_to_(db_, "ROLLBACK TO factum_append"),
      seal_(db_, ("PRAGMA application_id=" + std::to_string(kApplicationId)).c_str()),
      cache_(db_),
      group_commit_(options.max_group_size) {}

// Called right after BEGIN IMMEDIATE: a new file gets its schema, an older format its upgrade,
// inside this transaction (another process may have done either meanwhile: then nothing).
void Writer::complete_schema() {
  if (schema_ == SchemaState::current) return;
  schema_changed_ = detail::complete_schema(db_);
  if (!q_) q_ = std::make_unique<Queries>(db_);
  if (!schema_changed_) schema_ = SchemaState::current;
}

void Writer::schema_committed() noexcept {
  if (schema_changed_) schema_ = SchemaState::current;
  schema_changed_ = false;
  if (wal_ || schema_ != SchemaState::current) return;
  // A new file was made in rollback-journal mode, so that a first write that fails leaves it as
  // it was; from its first commit on, it is in WAL mode. If another connection holds the file
  // now, the next write tries again.
  try {
    ensure_wal(db_, options_.busy_timeout);
    // A first read in WAL mode opens the WAL index now, while this process holds the file.
    db_.query_int("PRAGMA user_version", "opening the write-ahead log");
    wal_ = true;
  } catch (...) {
    wal_ = false;
  }
}

void Writer::schema_rolled_back() noexcept { schema_changed_ = false; }

std::int64_t Writer::schema_cookie() {
  return db_.query_int("PRAGMA schema_version", "reading the schema's version");
}

std::vector<AppendResult> Writer::write(std::span<const AppendView> appends, AppendSink& sink,
                                        const AppendHook* hook) {
  Pending self;
  self.appends = appends;
  self.sink = &sink;
  self.hook = hook;
  enqueue(self);
  return std::move(self.results);
}

void Writer::write_sql(const std::function<void(Sql&)>& fn) {
  Pending self;
  self.custom = &fn;
  self.alone = true;
  enqueue(self);
}

// Queues `self` for group commit (a write_sql runs alone) and rethrows its error.
void Writer::enqueue(Pending& self) {
  group_commit_.enqueue(
      self, [this](Pending& p) { run_custom(p); },
      [this](std::span<Pending* const> group) { commit_group(group); });
  if (self.error) std::rethrow_exception(self.error);
}

// The write transaction of one writer turn: BEGIN IMMEDIATE when made (waiting up to
// busy_timeout for other processes), rolled back when left without commit().
class Writer::Transaction {
 public:
  explicit Transaction(Writer& w) : w_(w) {
    w_.run(w_.begin_, "taking the write lock");
    try {
      w_.complete_schema();
    } catch (...) {
      w_.rollback();
      w_.schema_rolled_back();
      throw;
    }
  }
  ~Transaction() {
    if (done_) return;
    w_.rollback();
    w_.schema_rolled_back();
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  // COMMIT; on failure the transaction is rolled back, the WAL sealed, and the error thrown.
  void commit(std::string_view doing) {
    done_ = true;
    try {
      w_.commit(doing);
    } catch (...) {
      w_.schema_rolled_back();
      throw;
    }
    w_.schema_committed();
  }

 private:
  Writer& w_;
  bool done_ = false;
};

// One append of a group under its own savepoint (when `isolate`), so that a failing append
// undoes only its own rows. Left without release() or rollback(), it rolls back (best effort:
// the transaction around it is rolled back then in any case).
class Writer::Savepoint {
 public:
  Savepoint(Writer& w, bool isolate) : w_(w), open_(isolate) {
    if (open_) w_.run(w_.savepoint_, "starting an append");
  }
  ~Savepoint() {
    if (!open_ || !w_.db_.in_transaction()) return;
    try {
      rollback();
    } catch (...) {
      // The enclosing Transaction rolls everything back.
    }
  }
  Savepoint(const Savepoint&) = delete;
  Savepoint& operator=(const Savepoint&) = delete;
  // Each closes the scope only once its statements succeeded: a RELEASE that failed leaves
  // the savepoint for rollback() (and the destructor) to undo.
  void release() {
    if (!open_) return;
    w_.run(w_.release_, "finishing an append");
    open_ = false;
  }
  void rollback() {
    if (!open_) return;
    w_.run(w_.rollback_to_, "undoing an append");
    w_.run(w_.release_, "undoing an append");
    open_ = false;
  }

 private:
  Writer& w_;
  bool open_;
};

// A write_sql. When this transaction made or upgraded the schema and fn wrote nothing (no row
// changed, no table or index made), it rolls back: a new file stays empty and an older format
// stays as it was, since only a write makes a store or upgrades one.
void Writer::run_custom(Pending& p) noexcept {
  remembered_.forget();  // fn's SQL runs on this connection: read the log again after it
  try {
    Transaction tx(*this);
    const auto changes = sqlite3_total_changes64(db_.get());
    const std::int64_t cookie = schema_changed_ ? schema_cookie() : 0;
    {
      SqlHandle sql(cache_);
      (*p.custom)(sql);
    }
    if (schema_changed_ && sqlite3_total_changes64(db_.get()) == changes &&
        schema_cookie() == cookie) {
      return;  // tx rolls back
    }
    tx.commit("committing");
  } catch (...) {
    p.error = std::current_exception();
  }
}

void Writer::notify(Pending& p, AppendOutcome outcome) noexcept {
  for (auto& notice : p.notices) {
    try {
      notice(outcome);
    } catch (...) {
      // Documented: a notice must not throw; what it throws is ignored.
    }
  }
  p.notices.clear();
}

void Writer::fail(Pending& p, std::exception_ptr error) noexcept {
  reset(p);
  p.error = std::move(error);
  notify(p, AppendOutcome::rolled_back);
}

// The group-commit transaction. Never throws: each pending append gets its own result or its
// own error, and each slot's outcome notice hears its append's fate before the next turn.
//
// A failing append must leave nothing of itself in the group's transaction. Most failures
// (a version conflict, a duplicate first id, a retry) come before an append writes anything,
// so a group runs first without savepoints (two statements per append saved); an append that
// fails after it wrote (seen by sqlite3_total_changes) makes the group start over with each
// append under its own savepoint. Appends with on_appending slots are isolated from the start:
// their slots must run once per attempt that can commit.
//
// What the last clean commit left (remembered_) stands in for the look-ups of stream keys,
// versions and the head when no other connection has committed since. Groups with
// on_appending slots neither use nor update it (a slot's SQL runs on this connection), and any
// failure forgets it: what it learnt in this transaction may be rolled back.
void Writer::commit_group(std::span<Pending* const> group) noexcept {
  const bool hooked =
      std::any_of(group.begin(), group.end(), [](Pending* p) { return p->hook != nullptr; });
  bool isolate = group.size() > 1 && hooked;
  const std::int64_t now = now_us();
  for (;;) {
    bool again = false;
    bool failed = false;
    try {
      Transaction tx(*this);  // phase 1: the file's write lock
      const bool fresh = !hooked && remembered_.tail && remembered_.data_version &&
                         data_version() == remembered_.data_version;
      if (!fresh) remembered_.forget();
      remembering_ = !hooked;
      // Phase 2: apply each append.
      Tail tail = fresh ? *remembered_.tail : read_tail();
      for (Pending* p : group) {
        const Tail before = tail;
        const auto changes = sqlite3_total_changes64(db_.get());
        Savepoint sp(*this, isolate);
        try {
          apply(*p, tail, now);
          sp.release();
        } catch (...) {
          fail(*p, std::current_exception());
          failed = true;
          remembered_.forget();
          tail = before;
          // SQLite rolls the whole transaction back on some errors (disk full, I/O): then
          // every append of the group fails with this error.
          if (!db_.in_transaction()) throw;
          if (group.size() == 1) return;  // tx rolls back
          if (isolate) {
            sp.rollback();
          } else if (sqlite3_total_changes64(db_.get()) != changes) {
            again = true;  // it wrote before failing: start over, isolated (tx rolls back)
            break;
          }
        }
      }
      if (!again) {
        tx.commit("committing appends");  // phase 3: one commit (one fsync) for the group
        if (!failed && remembering_) {
          remembered_.tail = tail;
          remembered_.data_version = data_version();
        }
        break;
      }
    } catch (...) {
      remembered_.forget();
      for (Pending* p : group) {
        if (!p->error) fail(*p, std::current_exception());
      }
      return;
    }
    remembered_.forget();
    for (Pending* p : group) reset(*p);
    isolate = true;
  }
  for (Pending* p : group) {
    if (!p->error) notify(*p, AppendOutcome::committed);
  }
}

// Forgets what an attempt did to `p` (results, copies, error): before the group starts over,
// and before it fails.
void Writer::reset(Pending& p) noexcept {
  p.error = nullptr;
  p.results.clear();
  if (p.sink == nullptr) return;
  if (p.sink->events != nullptr) p.sink->events->clear();
  p.sink->first_written = p.sink->last_written = 0;
}

void Writer::run(Statement& s, std::string_view doing) {
  StatementScope scope(s);
  s.step(doing);
}

// COMMIT, sealing the WAL when it fails (see seal_wal).
void Writer::commit(std::string_view doing) {
  try {
    run(commit_, doing);
  } catch (...) {
    rollback();
    seal_wal();
    throw;
  }
}

// After a failed COMMIT. SQLite writes a transaction's WAL frames, commit marker included,
// before the fsync that makes them durable; when that fsync fails, the commit fails, but the
// frames stay in the WAL file past its valid end. Nothing reads them now, but a recovery of the
// WAL (a crash, or a close that cannot checkpoint) would replay them, and the append that threw
// would be in the log after all. A one-frame transaction that changes nothing (the application
// id, the same in every format, written again) lands at that same offset and breaks the checksum
// chain behind it, so recovery stops before the orphaned frames. If the disk refuses this write
// too, the outcome stays unknown until the caller retries the same batch (idempotent);
// docs/eventstore.md says so.
void Writer::seal_wal() noexcept {
  if (!wal_) return;  // a rollback journal leaves no frames behind
  try {
    run(begin_, "sealing the log after a failed commit");
    run(seal_, "sealing the log after a failed commit");
    run(commit_, "sealing the log after a failed commit");
  } catch (...) {
    rollback();
  }
}

void Writer::rollback() noexcept {
  if (db_.in_transaction()) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

// The AppendTransaction an on_appending slot sees: the writer's connection, mid-transaction.
class Writer::HookTransaction final : public AppendTransaction {
 public:
  HookTransaction(Writer& writer, Pending& pending, std::span<const RecordedEvent> events)
      : writer_(writer), pending_(pending), events_(events), sql_(writer.cache_) {}
  std::span<const RecordedEvent> events() const override { return events_; }
  Sql& sql() override { return sql_; }
  std::vector<RecordedEvent> read_log(Position from, std::size_t limit) override {
    return writer_.read_log(from, events_.front().position, limit);
  }
  void on_outcome(std::function<void(AppendOutcome)> notice) override {
    pending_.notices.push_back(std::move(notice));
  }

 private:
  Writer& writer_;
  Pending& pending_;
  std::span<const RecordedEvent> events_;
  SqlHandle sql_;
};

void Writer::apply(Pending& p, Tail& tail, std::int64_t now) {
  p.results.clear();
  p.results.reserve(p.appends.size());
  const Position start = tail.position;
  if (p.hook == nullptr) {
    for (const AppendView& a : p.appends) {
      p.results.push_back(apply_one(a, tail, now, p.sink->events));
    }
  } else {
    for (const AppendView& a : p.appends) {
      std::vector<RecordedEvent> events;
      p.results.push_back(apply_one(a, tail, now, &events));
      run_hook(p, events);
    }
  }
  if (tail.position > start) {
    p.sink->first_written = start + 1;
    p.sink->last_written = tail.position;
  }
}

void Writer::run_hook(Pending& p, std::vector<RecordedEvent>& events) {
  if (events.empty()) return;  // a retry: nothing written
  HookTransaction tx(*this, p, events);
  (*p.hook)(tx);
  if (p.sink->events != nullptr) {
    std::move(events.begin(), events.end(), std::back_inserter(*p.sink->events));
  }
}

std::vector<RecordedEvent> Writer::read_log(Position from, Position before, std::size_t limit) {
  std::vector<RecordedEvent> out;
  if (from >= before || limit == 0) return out;
  StatementScope scope(q_->log_range);
  q_->log_range.bind(1, static_cast<std::int64_t>(from));
  q_->log_range.bind(2, static_cast<std::int64_t>(before));
  q_->log_range.bind(3, static_cast<std::int64_t>(std::min<std::size_t>(limit, 1U << 30)));
  while (q_->log_range.step("reading the log inside an append"))
    read_row(q_->log_range, out.emplace_back());
  // The checked walk's rule (walk_check.hpp): every position from `from` on, without a hole.
  WalkCheck check(PageQuery{PageQuery::Kind::all, {}, from});
  for (const RecordedEvent& e : out) check.row(e.position, e.stream_id, e.stream_version);
  const Position last = out.empty() ? from - 1 : out.back().position;
  if (out.size() < limit && last + 1 < before) {
    check.row(before, {}, 0);  // throws: positions last + 1 to before - 1 are missing
  }
  return out;
}

// A retry is looked for (find_retry) when the expected version does not match, or when the
// first event's insert is refused: a batch that can be written costs no look-up by id (the
// unique index and the insert guard check the ids as the rows go in).
AppendResult Writer::apply_one(const AppendView& a, Tail& tail, std::int64_t now,
                               std::vector<RecordedEvent>* committed) {
  std::optional<std::int64_t> key;
  StreamVersion current = 0;
  const auto known = remembering_ ? remembered_.streams.find(a.stream) : remembered_.streams.end();
  if (known != remembered_.streams.end()) {
    key = known->second.key;
    current = known->second.version;
  } else {
    key = find_stream(a.stream);
    current = key ? last_version(*key) : 0;
  }
  if (!a.expected.matches(current)) {
    if (auto retry = find_retry(a, key)) return *retry;
    // A batch that partly overlaps stored events is a duplicate, whatever its version.
    for (const EventData& e : a.events.subspan(1)) {
      if (is_stored(e.id)) throw_duplicate(e.id, a.stream);
    }
    throw ConcurrencyError(std::string(a.stream), a.expected.to_string(), current);
  }
  if (!key) {
    // A new stream cannot hold a retry, but its first id may be stored elsewhere: found before
    // the stream row is written, such a duplicate fails alone instead of making its group
    // start over under savepoints.
    if (auto retry = find_retry(a, key)) return *retry;
    key = insert_stream(a.stream);
  }
  AppendResult result;
  result.first_position = tail.position + 1;
  StreamVersion version = current;
  if (committed != nullptr && committed->empty()) committed->reserve(a.events.size());
  for (const EventData& e : a.events) {
    if (!compensates_in_stream(e, *key)) {
      // A retried batch is told apart before its content is judged, as when the version does
      // not match: a stored compensation appended again elsewhere is a duplicate.
      if (&e == &a.events.front()) {
        if (auto retry = find_retry(a, key)) return *retry;
      }
      throw_bad_compensation(e, a.stream);
    }
    const EventFields f = event_fields(a.stream, e, tail.position + 1, ++version, now);
    const Hash hash = hasher_(tail.hash, f);
    if (!insert_event(*key, f, hash)) {
      // The first event's id may be stored: a retry (nothing of this append is written yet).
      if (&e == &a.events.front()) {
        if (auto retry = find_retry(a, key)) return *retry;
      }
      refused(f);
    }
    if (committed != nullptr) committed->push_back(recorded_of(f, hash, tail.hash));
    tail = {f.position, hash};
  }
  if (remembering_) remember(a.stream, *key, version);
  result.stream_version = version;
  result.last_position = tail.position;
  return result;
}

void Writer::remember(std::string_view stream, std::int64_t key, StreamVersion version) {
  auto it = remembered_.streams.find(stream);
  if (it != remembered_.streams.end()) {
    it->second = {key, version};
    return;
  }
  if (remembered_.streams.size() >= Remembered::kMaxStreams) remembered_.streams.clear();
  remembered_.streams.emplace(std::string(stream), Remembered::StreamState{key, version});
}

// The file's data version: changes with every commit to it, by any connection (this one's
// included), and is read when a transaction begins.
std::optional<unsigned> Writer::data_version() {
  unsigned version = 0;
  if (sqlite3_file_control(db_.get(), "main", SQLITE_FCNTL_DATA_VERSION, &version) != SQLITE_OK) {
    return std::nullopt;  // not known: nothing is remembered
  }
  return version;
}

Writer::Tail Writer::read_tail() {
  const Head head = read_head(q_->tail);
  return {head.position, head.hash};
}

std::optional<std::int64_t> Writer::find_stream(std::string_view stream) {
  StatementScope scope(q_->find_stream);
  q_->find_stream.bind(1, stream);
  if (!q_->find_stream.step("looking up a stream")) return std::nullopt;
  return q_->find_stream.column_int(0);
}

StreamVersion Writer::last_version(std::int64_t stream_key) {
  StatementScope scope(q_->last_version);
  q_->last_version.bind(1, stream_key);
  return q_->last_version.step("reading a stream's version")
             ? static_cast<StreamVersion>(q_->last_version.column_int(0))
             : 0;
}

std::int64_t Writer::insert_stream(std::string_view stream) {
  StatementScope scope(q_->insert_stream);
  q_->insert_stream.bind(1, stream);
  q_->insert_stream.bind(2, category_of(stream));
  q_->insert_stream.step("creating a stream");
  return sqlite3_last_insert_rowid(db_.get());
}

// A batch whose first id is stored already is either a retry (all ids stored contiguously,
// in order, in this stream: return the first try's result) or a duplicate (throw).
std::optional<AppendResult> Writer::find_retry(const AppendView& a,
                                               std::optional<std::int64_t> key) {
  const EventData& first = a.events.front();
  Position first_position = 0;
  StreamVersion first_version = 0;
  {
    StatementScope scope(q_->by_id);
    q_->by_id.bind_blob(1, first.id.bytes().data(), first.id.bytes().size());
    if (!q_->by_id.step("looking up an event id")) return std::nullopt;
    if (!key || q_->by_id.column_int(1) != *key) {
      throw DuplicateEventError(
          first.id.to_string(), std::string(a.stream),
          "is stored already in stream '" + std::string(q_->by_id.column_text(3)) + "'");
    }
    first_position = static_cast<Position>(q_->by_id.column_int(0));
    first_version = static_cast<StreamVersion>(q_->by_id.column_int(2));
  }
  StatementScope scope(q_->ids_from);
  q_->ids_from.bind(1, *key);
  q_->ids_from.bind(2, static_cast<std::int64_t>(first_version));
  q_->ids_from.bind(3, static_cast<std::int64_t>(a.events.size()));
  AppendResult result{first_version, first_position, first_position};
  std::size_t matched = 0;
  while (matched < a.events.size() && q_->ids_from.step("checking a retried batch")) {
    const auto id = q_->ids_from.column_blob(0);
    const EventData& want = a.events[matched];
    if (!same_bytes(id, want.id.bytes())) break;
    if (!same_content(q_->ids_from, want)) {
      throw DuplicateEventError(want.id.to_string(), std::string(a.stream),
                                "is stored already with other content (type, schema version, "
                                "payload or metadata differ): a retry must repeat the same "
                                "events, and a new event needs a new id");
    }
    result.stream_version = first_version + matched;
    result.last_position = static_cast<Position>(q_->ids_from.column_int(1));
    ++matched;
  }
  if (matched != a.events.size()) {
    throw DuplicateEventError(first.id.to_string(), std::string(a.stream),
                              "is stored already, but the batch only partly matches the events "
                              "stored with it (a retry must repeat the whole batch)");
  }
  return result;
}

// True when `e` compensates nothing, or an event of the stream with key `key`.
bool Writer::compensates_in_stream(const EventData& e, std::int64_t key) {
  if (!e.metadata.compensates) return true;
  StatementScope scope(q_->by_id);
  const auto& target = e.metadata.compensates->bytes();
  q_->by_id.bind_blob(1, target.data(), target.size());
  return q_->by_id.step("looking up a compensated event") && q_->by_id.column_int(1) == key;
}

void Writer::throw_bad_compensation(const EventData& e, std::string_view stream) {
  throw InvalidArgument("factum: event " + e.id.to_string() + " of stream '" + std::string(stream) +
                        "' compensates " + e.metadata.compensates->to_string() +
                        ", which is not an event of that stream");
}

bool Writer::insert_event(std::int64_t key, const EventFields& f, const Hash& hash) {
  const Metadata& m = *f.metadata;
  StatementScope scope(q_->insert_event);
  Statement& s = q_->insert_event;
  s.bind(1, static_cast<std::int64_t>(f.position));
  s.bind(2, key);
  s.bind(3, static_cast<std::int64_t>(f.stream_version));
  s.bind_blob(4, f.id->bytes().data(), f.id->bytes().size());
  s.bind(5, f.type);
  s.bind(6, static_cast<std::int64_t>(f.schema_version));
  s.bind_blob(7, f.payload);
  bind_optional_id(s, 8, m.correlation_id);
  bind_optional_id(s, 9, m.causation_id);
  bind_optional_id(s, 10, m.compensates);
  if (m.actor.empty()) {
    s.bind_null(11);
  } else {
    s.bind(11, std::string_view(m.actor));
  }
  std::string extra;
  if (m.values.empty()) {
    s.bind_null(12);
  } else {
    extra = encode_values(m.values);
    s.bind_blob(12, extra.data(), extra.size());
  }
  s.bind(13, f.recorded_at_us);
  s.bind_blob(14, hash.data(), hash.size());
  const int rc = s.step_rc();
  if (rc == SQLITE_DONE) return true;
  // A stored id fails the unique index or, first, the insert guard (events_are_appended).
  if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_TRIGGER) {
    refused_rc_ = rc;
    refused_detail_ = sqlite3_errmsg(db_.get());
    s.reset();
    return false;
  }
  throw_sqlite(db_.get(), rc, "appending an event", db_.file());
}

// After insert_event refused `f`: a DuplicateEventError when its id is stored, else the
// constraint's error.
void Writer::refused(const EventFields& f) {
  if (is_stored(*f.id)) throw_duplicate(*f.id, f.stream_id);
  throw_sqlite(refused_rc_, refused_detail_, "appending an event", db_.file());
}

bool Writer::is_stored(const EventId& id) {
  StatementScope scope(q_->by_id);
  q_->by_id.bind_blob(1, id.bytes().data(), id.bytes().size());
  return q_->by_id.step("looking up an event id");
}

void Writer::throw_duplicate(const EventId& id, std::string_view stream) {
  StatementScope scope(q_->by_id);
  q_->by_id.bind_blob(1, id.bytes().data(), id.bytes().size());
  const std::string where = q_->by_id.step("looking up an event id")
                                ? " in stream '" + std::string(q_->by_id.column_text(3)) + "'"
                                : "";
  throw DuplicateEventError(id.to_string(), std::string(stream), "is stored already" + where);
}

}  // namespace factum::detail
