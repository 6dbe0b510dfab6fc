// A batch of the projection's thread (docs/projections.md, "The runner's states", the event "a
// batch"): for a read model in the store, read (outside the write lock), then in one transaction
// apply, checkpoint and next state; for an external target, read and apply, then a transaction
// that saves the checkpoint.
#include <algorithm>

#include "factum/eventstore/errors.hpp"
#include "factum/projections/checkpoint_store.hpp"
#include "runner.hpp"
#include "test_hooks.hpp"

namespace factum::detail {
namespace {

// A batch that read to the end of the log reads the events appended between its read and the
// write lock inside the lock, when they are at most this many; more, and the next batch reads
// them outside it.
constexpr Position kFinishInLock = 4096;

void record_failure(ProjectionRow& row, const RecordedEvent& e, std::string message,
                    FailurePolicy policy) {
  row.error = ProjectionFailure{e.position, e.type, std::move(message)};
  if (policy == FailurePolicy::stop) {
    row.state = ProjectionState::failed;
  } else {
    ++row.skipped;
  }
}

}  // namespace

// --- A batch of a read model in the store ----------------------------------------------------

// One batch on the serving generation or (rebuild) the one being built. The events are read
// first, outside any write transaction (on a read connection: appends from this and other
// processes go on meanwhile); then one write transaction reads the checkpoint inside the write
// lock, and applies the batch and saves the checkpoint only if it still stands where the read
// began. If another engine or an inline append moved it meanwhile, the batch is dropped and the
// next one reads again from there: no event is lost or applied twice. A batch that read to the
// end of the log reads what was appended meanwhile inside the lock (up to kFinishInLock
// events), so that it reaches the head even while other writers never pause. A throwing apply
// sends the batch again, each event under a savepoint. Returns true when there is nothing more
// to do for this target now.
bool ProjectionRunner::store_batch(bool rebuild) {
  Batch b = read_batch(rebuild);
  if (idle_at_head(b)) return true;
  after_batch_read(name_);
  write_batch(b);
  after_batch_commit(name_);
  publish(b.d);
  follow_up(b);
  return b.idle;
}

// Read: outside any write transaction.
ProjectionRunner::Batch ProjectionRunner::read_batch(bool rebuild) {
  Batch b;
  b.rebuild = rebuild;
  b.follower = rebuild ? &rebuild_follower_ : &follower_;
  b.checkpoint = rebuild ? rebuild_checkpoint_name(name_) : name_;
  if (!rebuild) {
    // Inline appends may have moved the checkpoint past the follower: start from there.
    const Position through = inline_through_->load(std::memory_order_acquire);
    if (through > follower_.position()) follower_.restart(through);
  }
  b.begin = b.follower->position();
  b.at_end = read_events(*b.follower, b.begin);
  b.read_end = b.follower->position();
  return b;
}

bool ProjectionRunner::read_events(LogFollower& follower, Position begin) {
  batch_.clear();
  try {
    return follower.next(batch_, options_.batch_size);
  } catch (const StorageError&) {
    // As a failed write transaction is run once more before the back-off, a failed read is
    // read once more, afresh (a storage error throws again from here).
    batch_.clear();
    follower.restart(begin);
    return follower.next(batch_, options_.batch_size);
  }
}

// Nothing after the checkpoint: an idle running projection has nothing to record either, and
// takes no write lock (on PostgreSQL every write transaction counts as a commit that wakes the
// watchers, this projection's own included).
bool ProjectionRunner::idle_at_head(const Batch& b) const {
  if (b.rebuild || !b.at_end || !batch_.empty() || b.read_end != b.begin) return false;
  MutexLock lock(mu_);
  return state_ == ProjectionState::running && !retry_error_ && checkpoint_ == b.begin;
}

void ProjectionRunner::write_batch(Batch& b) {
  try {
    store_.write_sql([&](Sql& sql) { batch_turn(sql, b, false); });
  } catch (...) {
    // Rolled back. The same events again, carefully (a storage error throws again from here
    // and the thread starts afresh after its back-off).
    store_.write_sql([&](Sql& sql) { batch_turn(sql, b, true); });
  }
}

// The batch's transaction: apply, checkpoint, next state, decided by the checkpoint as it is
// inside the write lock.
void ProjectionRunner::batch_turn(Sql& sql, Batch& b, bool careful) {
  b.d = open_turn(sql);
  b.swapped = false;
  b.ran = false;
  b.moved.reset();
  b.idle = true;
  if (another_engines_change(sql, b)) return;
  b.ran = true;
  const Position saved = load_position(sql, b.checkpoint);
  if (b.rebuild) notice_rebuild(b.d.row, saved);
  if (saved != b.begin) {
    drop_batch(sql, b, saved);
    return;
  }
  ProjectionContext ctx(&sql, name_, b.rebuild ? b.d.row.rebuild_generation : b.d.row.generation);
  b.end = apply_batch(sql, ctx, b, batch_, b.read_end, careful);
  // Reaching the end of a range is not enough: check the head inside the write lock.
  b.head = store_.head_position();
  if (finishes_in_lock(b)) finish_in_lock(sql, ctx, b, careful);
  end_batch(sql, b, saved);
}

// Another engine's change, as the row read at the start of the turn has it, that leaves this
// batch nothing to write but the state: its failure, or a target that is not this code's.
bool ProjectionRunner::another_engines_change(Sql& sql, Batch& b) const {
  const ProjectionRow& row = b.d.row;
  if (row.state == ProjectionState::failed) {  // another engine's failure: shown as it is
    b.d.state = ProjectionState::failed;
  } else if (b.rebuild ? !is_rebuilding(row) : row.version != version_) {
    // Nothing of this code's to write: another engine swapped, or runs a newer version.
    b.d.state = next_state(row, true);
  } else {
    return false;
  }
  save(sql, b.d);
  return true;
}

// A rebuild this thread had not seen yet (another engine started it): time it from here.
void ProjectionRunner::notice_rebuild(const ProjectionRow& row, Position saved) {
  if (row.rebuild_generation != progress_generation_) time_rebuild(row.rebuild_generation, saved);
}

// Moved since the read began: nothing but the row; the next batch reads again from where the
// checkpoint is.
void ProjectionRunner::drop_batch(Sql& sql, Batch& b, Position saved) {
  b.moved = saved;
  if (!b.rebuild) b.d.checkpoint = saved;
  b.idle = false;
  save(sql, b.d);
}

// Apply: `events`, read up to `through`; returns where the batch ends (before a failing event
// that stops the projection).
Position ProjectionRunner::apply_batch(Sql& sql, ProjectionContext& ctx, Batch& b,
                                       std::span<const RecordedEvent> events, Position through,
                                       bool careful) {
  if (careful) return apply_careful(&sql, ctx, events, through, b.d.row);
  apply_fast(ctx, events);
  return through;
}

bool ProjectionRunner::finishes_in_lock(const Batch& b) const {
  return b.at_end && b.end == b.read_end && b.end < b.head && b.head - b.end <= kFinishInLock &&
         b.d.row.state != ProjectionState::failed;
}

// Appends committed between the read and the lock. Read them now, inside it, where the head
// cannot move: waiting for a batch whose read no append overtakes never ends while other
// writers keep appending (an inline add() and a rebuild's swap waited forever).
void ProjectionRunner::finish_in_lock(Sql& sql, ProjectionContext& ctx, Batch& b, bool careful) {
  const std::size_t from = batch_.size();
  read_rest(b, from + static_cast<std::size_t>(b.head - b.end) + 1);
  b.read_end = b.follower->position();
  b.end = apply_batch(sql, ctx, b, std::span<const RecordedEvent>(batch_).subspan(from), b.read_end,
                      careful);
}

void ProjectionRunner::read_rest(Batch& b, std::size_t limit) {
  const std::size_t from = batch_.size();
  try {
    while (!b.follower->next(batch_, limit)) {
    }
  } catch (...) {
    // A half-read rest is not applied: the retry reads it again.
    batch_.erase(batch_.begin() + static_cast<std::ptrdiff_t>(from), batch_.end());
    b.follower->restart(b.read_end);
    throw;
  }
}

// Checkpoint and next state, in the batch's transaction: a rebuild that reached the head swaps
// in.
void ProjectionRunner::end_batch(Sql& sql, Batch& b, Position saved) {
  ProjectionRow& row = b.d.row;
  if (b.end != saved) save_position(sql, b.checkpoint, b.end);
  const bool caught_up = row.state != ProjectionState::failed && b.at_end && b.end >= b.head;
  if (caught_up && b.rebuild) {
    swap_in(sql, row, b.end);
    b.swapped = true;
  }
  if (!b.rebuild || b.swapped) b.d.checkpoint = b.end;
  row.state = next_state(row, caught_up);
  b.d.state = row.state;
  b.d.live = caught_up && options_.mode == ProjectionMode::inline_append;
  b.idle = caught_up || row.state == ProjectionState::failed;
  save(sql, b.d);
}

// Once committed: the follower goes on from where the file's checkpoint now is.
void ProjectionRunner::follow_up(const Batch& b) {
  if (b.moved) {
    b.follower->restart(*b.moved);
  } else if (!b.ran) {
    b.follower->restart(b.begin);  // not applied: read again when it is this code's to write
  } else if (b.end != b.read_end) {
    b.follower->restart(b.end);  // stopped at a failing event
  }
  if (b.swapped) {
    follower_.restart(b.end);
    report_progress(true);
  } else if (b.rebuild && b.ran && !b.moved) {
    report_progress(false);
  }
}

void ProjectionRunner::report_progress(bool finished) {
  if (!engine_options_.on_progress) return;
  const auto now = std::chrono::steady_clock::now();
  if (!finished && now - last_report_ < engine_options_.progress_interval) return;
  last_report_ = now;
  RebuildProgress p;
  p.projection = name_;
  p.done = finished ? follower_.position() : rebuild_follower_.position();
  p.total = std::max(store_.head_position(), p.done);
  const double seconds = std::chrono::duration<double>(now - rebuild_started_).count();
  const Position replayed = p.done - std::min(p.done, rebuild_start_position_);
  p.events_per_second = seconds > 0 ? static_cast<double>(replayed) / seconds : 0;
  if (p.events_per_second > 0) {
    p.time_left = std::chrono::seconds(
        static_cast<std::int64_t>(static_cast<double>(p.total - p.done) / p.events_per_second));
  }
  p.finished = finished;
  try {
    engine_options_.on_progress(p);
  } catch (...) {
    // on_progress must not throw; a throwing one must not stop the rebuild.
  }
}

// Inside the rebuild's last transaction: the new generation becomes the serving one.
void ProjectionRunner::swap_in(Sql& sql, ProjectionRow& row, Position at) {
  serve_generation(sql, name_, row.rebuild_generation, row.generation);
  drop_generation(sql, name_, row.generation);
  CheckpointStore::save(sql, name_, at);
  CheckpointStore::remove(sql, rebuild_checkpoint_name(name_));
  row.version = row.rebuild_version;
  row.generation = row.rebuild_generation;
  row.rebuild_version = 0;
  row.rebuild_generation = 0;
}

// --- A batch of an external target -----------------------------------------------------------

// The handler runs outside any transaction; the checkpoint (and any failure) is saved after the
// batch: at least once.
bool ProjectionRunner::external_batch() {
  const Delivery x = deliver();
  if (nothing_to_record(x)) return x.at_end;
  Decision d;
  bool moved = false;  // another engine reset the target meanwhile
  store_.write_sql([&](Sql& sql) { moved = !external_turn(sql, x, d); });
  publish(d);
  if (moved) {
    reload_ = true;
    return false;
  }
  if (x.next == ProjectionState::failed) follower_.restart(x.end);
  return x.at_end || x.next == ProjectionState::failed;
}

// Read and apply, outside any transaction.
ProjectionRunner::Delivery ProjectionRunner::deliver() {
  Delivery x;
  batch_.clear();
  x.before = follower_.position();
  x.at_end = follower_.next(batch_, options_.batch_size);
  {
    MutexLock lock(mu_);
    x.delivered = row_;
  }
  x.row = x.delivered;
  ProjectionContext ctx(nullptr, name_, x.row.generation);
  x.end = apply_careful(nullptr, ctx, batch_, follower_.position(), x.row);
  x.next = next_state(x.row, x.at_end);
  return x;
}

bool ProjectionRunner::nothing_to_record(const Delivery& x) const {
  MutexLock lock(mu_);
  return x.end == x.before && x.row == row_ && state_ == x.next;
}

// Checkpoint and next state; returns false (and saves nothing of the batch) when another engine
// reset the target since the batch was delivered.
bool ProjectionRunner::external_turn(Sql& sql, const Delivery& x, Decision& d) {
  d = open_turn(sql);
  if (d.row.version != x.delivered.version || d.row.generation != x.delivered.generation) {
    d.state = next_state(d.row, false);  // its checkpoint stands; this batch's does not
    save(sql, d);
    return false;
  }
  d.row.skipped += x.row.skipped - x.delivered.skipped;
  if (x.row.error != x.delivered.error) d.row.error = x.row.error;
  d.row.state = x.next;
  d.state = x.next;
  if (x.end != x.before) CheckpointStore::save(sql, name_, x.end);
  d.checkpoint = x.end;
  save(sql, d);
  return true;
}

// --- Applying events -------------------------------------------------------------------------

void ProjectionRunner::apply_fast(ProjectionContext& ctx, std::span<const RecordedEvent> events) {
  for (const RecordedEvent& e : events) {
    ProjectionContextAccess::set_key(ctx, {e.position, e.id});
    deliver(e, ctx);
  }
}

Position ProjectionRunner::apply_careful(Sql* sql, ProjectionContext& ctx,
                                         std::span<const RecordedEvent> events, Position end,
                                         ProjectionRow& row) {
  for (const RecordedEvent& e : events) {
    ProjectionContextAccess::set_key(ctx, {e.position, e.id});
    std::optional<SqlSavepoint> savepoint;
    if (sql != nullptr) savepoint.emplace(*sql);
    std::string message;
    try {
      deliver(e, ctx);
      if (savepoint) savepoint->release();
      continue;
    } catch (...) {
      message = describe_error(std::current_exception());
    }
    if (savepoint) savepoint->rollback();  // a storage error here fails the transaction
    record_failure(row, e, std::move(message), options_.on_failure);
    if (options_.on_failure == FailurePolicy::stop) return e.position - 1;
  }
  return end;
}

}  // namespace factum::detail
