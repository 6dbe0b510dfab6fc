// The SQLite writer's transactions: the group-commit turn (BEGIN IMMEDIATE, each append under
// a savepoint when needed, one COMMIT for the group), the schema made or upgraded inside it, a
// failed commit's sealing of the WAL, write_sql, and the transaction an on_appending slot sees.
// What one append does inside the turn (its look-ups and inserts) is in writer_append.cpp.
#include "sqlite/writer.hpp"

#include <algorithm>
#include <chrono>
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

}  // namespace

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

bool Writer::checkpoint_truncate() {
  bool done = false;
  Pending self;
  self.checkpointed = &done;
  self.alone = true;
  enqueue(self);
  return done;
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
  if (p.checkpointed != nullptr) {
    if (!wal_) {  // rollback-journal mode: nothing outlives the commit in a WAL
      *p.checkpointed = true;
      return;
    }
    const int rc =
        sqlite3_wal_checkpoint_v2(db_.get(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    if (rc == SQLITE_OK) {
      *p.checkpointed = true;
    } else if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) {
      try {
        throw_sqlite(db_.get(), rc, "checkpointing the log after a forget", db_.file());
      } catch (...) {
        p.error = std::current_exception();
      }
    }
    return;
  }
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
      // The head is read in every transaction (one descent of the events' B-tree): the file's
      // data version alone let a writer of another process go unseen now and then (4 of 32
      // runs of the multiprocess race under ThreadSanitizer and load: an append at a taken
      // position, refused by the events_are_appended trigger). Positions only grow, so a head
      // equal to the remembered one means no other writer appended since.
      const Tail current = read_tail();
      const bool fresh = !hooked && remembered_.tail && remembered_.data_version &&
                         data_version() == remembered_.data_version && current == *remembered_.tail;
      if (!fresh) remembered_.forget();
      remembering_ = !hooked;
      // Phase 2: apply each append.
      Tail tail = current;
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

}  // namespace factum::detail
