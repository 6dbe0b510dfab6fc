#include <chrono>
#include <string>

#include "postgres/writer.hpp"

namespace factum::detail::pg {
namespace {

std::int64_t now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

void add_columns(Params& p, const EventData& e, std::int64_t now, const Hash& hash) {
  add_columns(p, e, now);
  add_hash(p, hash);
}

void add_hash(Params& p, const Hash& hash) {
  p.own_bytes(std::string(reinterpret_cast<const char*>(hash.data()), hash.size()));
}

void add_columns(Params& p, const EventData& e, std::int64_t now) {
  const Metadata& m = e.metadata;
  p.id(e.id)
      .text(e.type)
      .i64(e.schema_version)
      .bytes(e.payload)
      .optional_id(m.correlation_id)
      .optional_id(m.causation_id)
      .optional_id(m.compensates);
  if (m.actor.empty()) {
    p.null(kTextOid);
  } else {
    p.text(m.actor);
  }
  if (m.values.empty()) {
    p.null(kByteaOid);
  } else {
    p.own_bytes(encode_values(m.values));
  }
  p.i64(now);
}

std::vector<AppendResult> PgWriter::write(std::span<const AppendView> appends, AppendSink& sink,
                                          const AppendHook* hook, const AppendChecks* checks) {
  Pending self;
  self.appends = appends;
  self.sink = &sink;
  self.hook = hook;
  self.checks = checks;
  enqueue(self);
  return std::move(self.results);
}

void PgWriter::write_sql(const std::function<void(Sql&)>& fn) {
  Pending self;
  self.custom = &fn;
  self.alone = true;
  enqueue(self);
}

void PgWriter::enqueue(Pending& self) {
  group_commit_.enqueue(
      self, [this](Pending& p) { run_custom(p); },
      [this](std::span<Pending* const> group) { commit_group(group); });
  if (self.error) std::rethrow_exception(self.error);
}

PgConn& PgWriter::conn() {
  if (!conn_ || !conn_->alive()) {
    conn_.reset();
    conn_ = std::make_unique<PgConn>(target_, options_);
  }
  return *conn_;
}

void PgWriter::run_custom(Pending& p) noexcept {
  cache_.valid = false;  // the SQL may write anything (or drop anything)
  tag_table_ = key_table_ = false;
  try {
    PgConn& c = conn();
    // The caller's SQL is planned as the server would by default (postgres/statements.hpp).
    c.exec(std::string("BEGIN; ") + pg::kCallerPlanner, "starting a transaction");
    try {
      lock_head(c);  // serialised with the appends of every process
      PgSql sql(c);
      (*p.custom)(sql);
      // Events written through SQL (an import) move the head row too; every write counts as
      // a commit for watchers, and wakes listeners.
      static const std::string move_head =
          "WITH h AS (SELECT coalesce(max(position), 0) AS position FROM events), "
          "u AS (UPDATE factum_store s SET commits = s.commits + 1, "
          "position = greatest(s.position, h.position), hash = CASE WHEN h.position > "
          "s.position THEN (SELECT hash FROM events WHERE position = h.position) ELSE s.hash "
          "END FROM h WHERE s.id = 1 RETURNING s.commits) "
          "SELECT pg_notify($1, commits::text), " +
          std::string(pg::kCommitLockWait) + " FROM u";
      Params().text(channel_).run(c, move_head.c_str(), "moving the log's head");
      c.exec("COMMIT", "committing");
    } catch (...) {
      c.rollback();
      throw;
    }
  } catch (...) {
    p.error = std::current_exception();
  }
}

void PgWriter::learn(std::string_view stream) {
  const auto exact = cache_.streams.find(stream);
  const auto it = seen_.find(stream);
  if (exact == cache_.streams.end()) {
    if (it != seen_.end()) seen_.erase(it);
  } else if (it != seen_.end()) {
    it->second = exact->second;
  } else {
    if (seen_.size() >= kMaxCachedStreams) seen_.clear();
    seen_.emplace(stream, exact->second);
  }
}

void PgWriter::notify(Pending& p, AppendOutcome outcome) noexcept {
  for (auto& notice : p.notices) {
    try {
      notice(outcome);
    } catch (...) {
      // Documented: a notice must not throw; what it throws is ignored.
    }
  }
  p.notices.clear();
}

void PgWriter::reset(Pending& p) noexcept {
  p.results.clear();
  if (p.sink == nullptr) return;
  if (p.sink->events != nullptr) p.sink->events->clear();
  p.sink->first_written = p.sink->last_written = 0;
}

void PgWriter::fail(Pending& p, std::exception_ptr error) noexcept {
  reset(p);
  p.error = std::move(error);
  notify(p, AppendOutcome::rolled_back);
}

void PgWriter::commit_group(std::span<Pending* const> group) noexcept {
  const std::int64_t now = now_us();
  bool isolated = false;
  bool reconnected = false;
  for (;;) {
    const Attempt a = attempt(group, now, isolated, reconnected);
    if (a == Attempt::done) return;
    for (Pending* p : group) restart(*p);
    (a == Attempt::isolate ? isolated : reconnected) = true;
  }
}

PgWriter::Attempt PgWriter::attempt(std::span<Pending* const> group, std::int64_t now,
                                    bool isolated, bool reconnected) noexcept {
  const bool savepoints = group.size() > 1;
  bool committing = false;               // COMMIT (or a pipeline's implicit one) was sent
  Cache next;                            // the cache if this transaction commits
  Versions decided;                      // what the decided appends leave
  std::vector<std::string_view> forget;  // streams appended step by step
  try {
    PgConn& c = conn();
    try {
      if (!isolated && (speculate(c, group, now, committing) ||
                        (committing = false, chain_on_server(c, group, now, committing)))) {
        for (Pending* p : group) notify(*p, AppendOutcome::committed);
        return Attempt::done;
      }
      committing = false;  // a speculation that did not commit was rolled back
      Known known;
      Tail tail = begin_group(c, group, known, next.commits);
      // A stale speculation dropped the cache and set contended_: it stays set until a careful
      // group finds the head where this writer's last commit left it.
      if (cache_.valid) {
        contended_ = cache_.commits != next.commits || cache_.store != known.store;
        if (!contended_) next.streams = std::move(cache_.streams);
      }
      next.store = store_ = known.store;
      cache_.valid = false;
      if (next.streams.size() + known.streams.size() > kMaxCachedStreams) next.streams.clear();
      for (const auto& [id, stream] : known.streams) next.streams[id] = stream;
      const Position start = tail.position;
      Pipeline queued(c);
      Batch batch(c.stored_previous());            // decided appends' inserts, not yet sent
      std::set<std::string, std::less<>> touched;  // streams appended in this group
      std::set<EventId> written;                   // ids appended in this group
      bool stepwise = isolated;  // once an append ran step by step, Known is stale: all do
      for (Pending* p : group) {
        const Tail before = tail;
        stepwise = stepwise || !decidable(*p, known, touched, written);
        for (const AppendView& a : p->appends) {
          touched.emplace(a.stream);
          for (const EventData& e : a.events) written.insert(e.id);
        }
        if (!stepwise) {
          try {
            decide(*p, known, batch, tail, now);
            remember(*p, decided);
          } catch (...) {
            fail(*p, std::current_exception());
            tail = before;
          }
          continue;
        }
        // What a step-by-step append did (a retry, slots that write) is not cached.
        for (const AppendView& a : p->appends) forget.push_back(a.stream);
        batch.send(queued);
        queued.run("appending events");
        if (savepoints) c.exec("SAVEPOINT factum_append", "appending");
        try {
          apply(c, *p, tail, now);
          if (savepoints) c.exec("RELEASE SAVEPOINT factum_append", "appending");
        } catch (...) {
          fail(*p, std::current_exception());
          tail = before;
          if (!c.ok() || !savepoints) throw;
          c.exec("ROLLBACK TO SAVEPOINT factum_append; RELEASE SAVEPOINT factum_append",
                 "undoing a failed append");
        }
      }
      Batch::MadeStreams made;  // their keys come back in r
      batch.send(queued, &made);
      if (tail.position != start) {
        Params head;
        head.i64(static_cast<std::int64_t>(tail.position))
            .bytes(tail.hash.data(), tail.hash.size())
            .text(channel_);
        queued.send(
            "WITH u AS (UPDATE factum_store SET position = $1, hash = $2, "
            "commits = commits + 1 WHERE id = 1 RETURNING commits) "
            "SELECT pg_notify($3, commits::text), commits, " +
                std::string(pg::kCommitLockWait) + " FROM u",
            head);
      }
      queued.send("COMMIT", Params());
      committing = true;
      std::vector<PgResult> r;
      try {
        r = queued.run("committing appends");
      } catch (const StorageError&) {
        if (c.ok()) throw;
        throw unknown_outcome();
      }
      // Committed. The cache is kept when the head row's answer is sound.
      // The tables the group made when missing exist now.
      if (known.tag_table) tag_table_ = true;
      if (known.keys_checked) key_table_ = true;
      next.valid = tail.position == start || (r.size() >= 2 && r[r.size() - 2].rows() == 1 &&
                                              r[r.size() - 2].int64(0, 1, next.commits));
      next.tail = tail;
      for (const auto& [stream, version] : decided) {
        next.streams[std::string(stream)].version = version;
      }
      for (const auto& [stream, result] : made) {
        const auto it = next.streams.find(stream);
        std::int64_t key = 0;
        if (it != next.streams.end() && result < r.size() && r[result].rows() == 1 &&
            r[result].int64(0, 0, key)) {
          it->second.key = key;
        }
      }
      for (std::string_view stream : forget) {
        if (const auto it = next.streams.find(stream); it != next.streams.end()) {
          next.streams.erase(it);
        }
      }
      cache_ = std::move(next);
      // What the group learnt of its streams, for a group chained on the server (which checks
      // it): exact as of this commit, or not known (appended step by step).
      for (const Pending* p : group) {
        for (const AppendView& a : p->appends) learn(a.stream);
      }
    } catch (...) {
      c.rollback();
      throw;
    }
  } catch (...) {
    const Attempt again =
        next_attempt(std::current_exception(), group.size(), committing, isolated, reconnected);
    if (again != Attempt::done) return again;
    for (Pending* p : group) {
      if (!p->error) fail(*p, std::current_exception());
    }
    return Attempt::done;
  }
  for (Pending* p : group) {
    if (!p->error) notify(*p, AppendOutcome::committed);
  }
  return Attempt::done;
}

PgWriter::Attempt PgWriter::next_attempt(const std::exception_ptr& error, std::size_t members,
                                         bool committing, bool isolated,
                                         bool reconnected) noexcept {
  if (!conn_) return Attempt::done;  // no connection could be made
  if (!conn_->ok()) {
    if (committing || reconnected) return Attempt::done;
    conn_.reset();
    return Attempt::reconnect;
  }
  if (isolated || members < 2) return Attempt::done;
  try {
    std::rethrow_exception(error);
  } catch (const StorageError& e) {
    if (e.kind() == StorageError::Kind::other) return Attempt::isolate;
  } catch (...) {
  }
  return Attempt::done;
}

void PgWriter::restart(Pending& p) noexcept {
  notify(p, AppendOutcome::rolled_back);
  reset(p);
  p.error = nullptr;
}

StorageError PgWriter::unknown_outcome() const {
  return StorageError(StorageError::Kind::io,
                      "factum: the connection to '" + target_->shown +
                          "' broke during COMMIT: the append's outcome is unknown; "
                          "retry the same batch (retries are idempotent)");
}

}  // namespace factum::detail::pg
