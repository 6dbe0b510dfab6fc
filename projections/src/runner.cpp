#include "runner.hpp"

#include <algorithm>

#include "factum/eventstore/errors.hpp"
#include "factum/projections/checkpoint_store.hpp"
#include "test_hooks.hpp"

namespace factum::detail {
namespace {

// A batch that read to the end of the log reads the events appended between its read and the
// write lock inside the lock, when they are at most this many; more, and the next batch reads
// them outside it.
constexpr Position kFinishInLock = 4096;

void check_name(const std::string& name) {
  const bool ok =
      !name.empty() && name.size() <= 100 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.';
      });
  if (!ok) {
    throw InvalidArgument("factum: projection name '" + name +
                          "' must be 1-100 letters, digits, '_', '-' or '.'");
  }
}

SubscriptionFilter filter_for(const std::vector<std::string>& types) {
  return SubscriptionFilter::all().with_types(types);
}

// A checkpoint read on a read connection: status() and wait_for() must not queue for the
// writer.
Position read_checkpoint(const EventStore& store, const std::string& name) {
  Position out = 0;
  store.read_sql([&](Sql& sql) { out = CheckpointStore::load(sql, name); });
  return out;
}

// Inline: a commit of this process whose events inline appends applied already (as their outcome
// notices told) needs no batch, so it does not wake the thread.
Wakeup::Wanted not_applied_inline(std::shared_ptr<std::atomic<Position>> through) {
  return [through = std::move(through)](const std::vector<RecordedEvent>& events) {
    return events.empty() || events.back().position > through->load(std::memory_order_acquire);
  };
}

std::string describe(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

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

ProjectionRunner::ProjectionRunner(EventStore& store, std::shared_ptr<Projection> projection,
                                   ProjectionOptions options, const EngineOptions& engine_options)
    : store_(store),
      projection_(std::move(projection)),
      options_(options),
      engine_options_(engine_options),
      name_(projection_->name()),
      version_(projection_->version()),
      types_(projection_->event_types()),
      follower_(store, filter_for(types_), 0),
      rebuild_follower_(store, filter_for(types_), 0),
      inline_through_(std::make_shared<std::atomic<Position>>(0)),
      wakeup_(std::make_unique<Wakeup>(store, options.poll_interval,
                                       options.mode == ProjectionMode::inline_append
                                           ? not_applied_inline(inline_through_)
                                           : Wakeup::Wanted{})) {
  check_name(name_);
  if (options_.batch_size == 0) {
    throw InvalidArgument("factum: projection '" + name_ + "': batch_size is 0");
  }
  if (options_.mode == ProjectionMode::inline_append &&
      options_.target == ProjectionTarget::external) {
    throw InvalidArgument("factum: projection '" + name_ +
                          "': inline mode needs a read model in the store (external target)");
  }
}

ProjectionRunner::~ProjectionRunner() { stop(); }

bool ProjectionRunner::wants(const RecordedEvent& e) const {
  return types_.empty() || std::find(types_.begin(), types_.end(), e.type) != types_.end();
}

// --- Turns: the file decides, memory follows once committed ------------------------------

ProjectionRunner::Decision ProjectionRunner::open_turn(Sql& sql) {
  std::optional<ProjectionRow> file = load_own_row(sql, name_);
  MutexLock lock(mu_);
  Decision d;
  d.turn = ++turns_;
  d.known = file.has_value();
  d.stored = file ? *file : row_;
  d.row = d.stored;
  // A storage error being retried stays the last failure, and is recorded with this turn.
  if (retry_error_) d.row.error = retry_error_;
  return d;
}

void ProjectionRunner::save(Sql& sql, const Decision& d) {
  if (d.row != d.stored) save_row(sql, d.row);
}

void ProjectionRunner::publish(const Decision& d) {
  {
    MutexLock lock(mu_);
    if (d.turn > row_turn_) {  // a later transaction's row may have been published first
      row_turn_ = d.turn;
      row_ = d.row;
    }
    if (d.checkpoint && d.turn > checkpoint_turn_) {
      checkpoint_turn_ = d.turn;
      checkpoint_ = *d.checkpoint;
    }
    if (d.state && d.turn > state_turn_) {
      state_turn_ = d.turn;
      state_ = *d.state;
      if (d.live) live_ = true;
      if (state_ == ProjectionState::failed) live_ = false;
    }
    // Stored now: the error being retried is no longer only in memory.
    if (retry_error_ && d.row.error == retry_error_) retry_error_.reset();
  }
  changed_.notify_all();
}

void ProjectionRunner::note_inline(std::atomic<Position>& through, Position last) noexcept {
  // Notices come one at a time, in commit order, from the writer's turn.
  if (last > through.load(std::memory_order_relaxed)) {
    through.store(last, std::memory_order_release);
  }
}

ProjectionState ProjectionRunner::next_state(const ProjectionRow& row, bool caught_up) const {
  if (row.state == ProjectionState::failed) return ProjectionState::failed;
  if (is_rebuilding(row)) return ProjectionState::rebuilding;
  return caught_up ? ProjectionState::running : ProjectionState::catching_up;
}

// --- Starting --------------------------------------------------------------------------------

void ProjectionRunner::start() {
  {
    MutexLock control(control_mu_);
    setup();
    thread_ = std::thread([this] { run(); });
  }
  if (options_.mode != ProjectionMode::inline_append) return;
  // Inline means inline once add() returns: wait until appends apply it (or it failed, is
  // retrying after a storage error, or rebuilds a new version).
  MutexLock lock(mu_);
  while (!live_ &&
         (state_ == ProjectionState::catching_up || state_ == ProjectionState::rebuilding) &&
         row_.version == version_)
    changed_.wait_for(lock, std::chrono::milliseconds(5));
}

void ProjectionRunner::setup() {
  const bool external = options_.target == ProjectionTarget::external;
  Decision d;
  Position checkpoint = 0;
  store_.write_sql([&](Sql& sql) {
    create_meta_tables(sql);
    d = open_turn(sql);
    ProjectionRow& row = d.row;
    if (!d.known) {
      row = ProjectionRow{};
      row.name = name_;
      row.version = version_;
      row.generation = 1;
      ProjectionContext ctx(external ? nullptr : &sql, name_, 1);
      ProjectionContextAccess::set_creating(ctx);
      projection_->reset(ctx);
      if (!external) {
        register_tables(sql, name_, 1, ProjectionContextAccess::tables(ctx));
        serve_generation(sql, name_, 1, 0);
      }
      CheckpointStore::save(sql, name_, 0);
    } else if (row.version != version_ && external) {
      row.generation += 1;
      row.version = version_;
      ProjectionContext ctx(nullptr, name_, row.generation);
      projection_->reset(ctx);
      CheckpointStore::save(sql, name_, 0);
    } else if (is_rebuilding(row)) {
      // Resume the rebuild this version started.
      progress_generation_ = row.rebuild_generation;
      rebuild_started_ = last_report_ = std::chrono::steady_clock::now();
      rebuild_start_position_ = CheckpointStore::load(sql, rebuild_checkpoint_name(name_));
    } else if (row.version != version_) {
      begin_rebuild(sql, row);
    } else if (row.rebuild_version != 0) {
      // A rebuild for another version was left behind: this code serves the old generation.
      drop_generation(sql, name_, row.rebuild_generation);
      CheckpointStore::remove(sql, rebuild_checkpoint_name(name_));
      row.rebuild_version = 0;
      row.rebuild_generation = 0;
    }
    row.mode = options_.mode;
    row.state = is_rebuilding(row) ? ProjectionState::rebuilding : ProjectionState::catching_up;
    d.state = row.state;
    save_row(sql, row);
    checkpoint = CheckpointStore::load(sql, name_);
    d.checkpoint = checkpoint;
  });
  publish(d);
  follower_.restart(checkpoint);
  // A rebuild resumed or begun here goes on from its checkpoint (0 when begun).
  rebuild_follower_.restart(rebuild_start_position_);
}

// Creates the next generation's empty tables and a rebuild checkpoint at 0.
void ProjectionRunner::begin_rebuild(Sql& sql, ProjectionRow& row) {
  if (row.rebuild_generation != 0) drop_generation(sql, name_, row.rebuild_generation);
  const std::uint64_t generation = std::max(row.generation, row.rebuild_generation) + 1;
  ProjectionContext ctx(&sql, name_, generation);
  ProjectionContextAccess::set_creating(ctx);
  projection_->reset(ctx);
  register_tables(sql, name_, generation, ProjectionContextAccess::tables(ctx));
  row.rebuild_version = version_;
  row.rebuild_generation = generation;
  CheckpointStore::save(sql, rebuild_checkpoint_name(name_), 0);
  progress_generation_ = generation;
  rebuild_started_ = last_report_ = std::chrono::steady_clock::now();
  rebuild_start_position_ = 0;
}

// --- The thread ----------------------------------------------------------------------------

// Every error of the thread is caught here, the error path included: a storage error is
// reported and retried after a back-off; another error stops the projection as failed.
void ProjectionRunner::run() noexcept {
  Backoff backoff;
  reload_ = true;
  bool more = true;
  while (more) {
    try {
      wakeup_->arm();
      bool idle = false;
      while (!idle && !wakeup_->stopped()) idle = step();
      more = wakeup_->wait();
      backoff.reset();
    } catch (...) {
      more = recover(std::current_exception(), backoff);
    }
  }
  {
    MutexLock lock(mu_);
    live_ = false;
    if (state_ != ProjectionState::failed) {
      state_ = ProjectionState::stopped;
      row_.state = ProjectionState::stopped;
    }
  }
  changed_.notify_all();
}

bool ProjectionRunner::recover(std::exception_ptr error, Backoff& backoff) noexcept {
  reload_ = true;
  try {
    report(error);
  } catch (...) {
    // Reporting failed too (no memory, no file): the retry below is all that is left.
  }
  return wakeup_->sleep(backoff.next());
}

// A storage error: state retrying, the error kept in memory (the file is failing) and
// on_error called. Another error: state failed, recorded in the file if it can be.
void ProjectionRunner::report(std::exception_ptr error) {
  const bool transient = is_transient(error);
  const ProjectionFailure failure{follower_.position() + 1, "", describe(error)};
  bool stops = false;  // this error fails the projection now
  {
    MutexLock lock(mu_);
    if (state_ != ProjectionState::failed) {
      state_ = transient ? ProjectionState::retrying : ProjectionState::failed;
      state_turn_ = turns_;
      if (transient) {
        retry_error_ = failure;
      } else {
        row_.error = failure;
        row_.state = ProjectionState::failed;
        live_ = false;
        stops = true;
      }
    }
  }
  changed_.notify_all();
  if (engine_options_.on_error) {
    try {
      engine_options_.on_error(name_, error);
    } catch (...) {
      // on_error must not throw; a throwing one must not stop the retries.
    }
  }
  if (!stops) return;
  Decision d;
  store_.write_sql([&](Sql& sql) {
    d = open_turn(sql);
    d.row.state = ProjectionState::failed;
    d.row.error = failure;
    d.state = ProjectionState::failed;
    save(sql, d);
  });
  publish(d);
}

// One round of the state machine: requests first, then a batch of each target.
bool ProjectionRunner::step() {
  if (reload_) {
    // After an error a follower may hold a half-read range: both start afresh. An external
    // target's from its checkpoint. A store target's where they stood, with no read: its batch
    // checks where it began against the checkpoint inside the write lock and reads again from
    // there when they differ. So the first storage call of a retry is its batch's read, which
    // (as its write) gets a second try before the back-off: a read or write that fails once costs
    // no pause (a failed wake-up poll still does).
    if (options_.target == ProjectionTarget::external) {
      follower_.restart(read_checkpoint(store_, name_));
      rebuild_follower_.restart(0);
    } else {
      follower_.restart(follower_.position());
      rebuild_follower_.restart(rebuild_follower_.position());
    }
    reload_ = false;
  }
  take_restart();
  {
    MutexLock lock(mu_);
    if (state_ == ProjectionState::failed) return true;  // a rebuild() waits for restart()
  }
  take_rebuild_request();
  if (options_.target == ProjectionTarget::external) return external_batch();
  const bool serving_idle = store_batch(false);
  {
    MutexLock lock(mu_);
    if (state_ == ProjectionState::failed || !is_rebuilding(row_)) return serving_idle;
  }
  return store_batch(true) && serving_idle;
}

// After restart(): the file's failed state becomes catching_up (the error stays recorded).
void ProjectionRunner::take_restart() {
  {
    MutexLock lock(mu_);
    if (!restart_requested_) return;
  }
  Decision d;
  store_.write_sql([&](Sql& sql) {
    d = open_turn(sql);
    if (d.row.state == ProjectionState::failed) d.row.state = ProjectionState::catching_up;
    save(sql, d);
  });
  {
    MutexLock lock(mu_);
    restart_requested_ = false;
  }
  publish(d);
}

// A rebuild() request starts its rebuild; a request whose transaction failed stays requested.
void ProjectionRunner::take_rebuild_request() {
  {
    MutexLock lock(mu_);
    if (!rebuild_requested_) return;
    rebuild_requested_ = false;
  }
  const bool external = options_.target == ProjectionTarget::external;
  Decision d;
  try {
    store_.write_sql([&](Sql& sql) {
      d = open_turn(sql);
      if (external) {
        d.row.generation += 1;
        ProjectionContext ctx(nullptr, name_, d.row.generation);
        projection_->reset(ctx);
        CheckpointStore::save(sql, name_, 0);
        d.checkpoint = 0;
      } else {
        begin_rebuild(sql, d.row);
        d.row.state = ProjectionState::rebuilding;
        d.state = ProjectionState::rebuilding;
      }
      save(sql, d);
    });
  } catch (...) {
    MutexLock lock(mu_);
    rebuild_requested_ = true;
    throw;
  }
  publish(d);
  if (external) {
    follower_.restart(0);
  } else {
    rebuild_follower_.restart(0);
  }
}

// --- Batches ---------------------------------------------------------------------------------

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
  LogFollower& follower = rebuild ? rebuild_follower_ : follower_;
  const std::string checkpoint = rebuild ? rebuild_checkpoint_name(name_) : name_;
  if (!rebuild) {
    // Inline appends may have moved the checkpoint past the follower: start from there.
    const Position through = inline_through_->load(std::memory_order_acquire);
    if (through > follower.position()) follower.restart(through);
  }
  const Position begin = follower.position();
  batch_.clear();
  bool at_end = false;
  try {
    at_end = follower.next(batch_, options_.batch_size);
  } catch (const StorageError&) {
    // As a failed write transaction is run once more before the back-off, a failed read is
    // read once more, afresh (a storage error throws again from here).
    batch_.clear();
    follower.restart(begin);
    at_end = follower.next(batch_, options_.batch_size);
  }
  Position read_end = follower.position();
  if (!rebuild && at_end && batch_.empty() && read_end == begin) {
    // Nothing after the checkpoint: an idle running projection has nothing to record either,
    // and takes no write lock (on PostgreSQL every write transaction counts as a commit that
    // wakes the watchers, this projection's own included).
    MutexLock lock(mu_);
    if (state_ == ProjectionState::running && !retry_error_ && checkpoint_ == begin) return true;
  }
  after_batch_read(name_);

  Decision d;
  bool idle = false;
  bool swapped = false;
  bool ran = false;               // the target was this code's to write
  std::optional<Position> moved;  // the checkpoint another transaction left, not `begin`
  Position end = 0;
  auto body = [&](Sql& sql, bool careful) {
    d = open_turn(sql);
    ProjectionRow& row = d.row;
    swapped = false;
    ran = false;
    moved.reset();
    idle = true;
    if (row.state == ProjectionState::failed) {  // another engine's failure: shown as it is
      d.state = ProjectionState::failed;
      save(sql, d);
      return;
    }
    if (rebuild ? !is_rebuilding(row) : row.version != version_) {
      // Nothing of this code's to write: another engine swapped, or runs a newer version.
      d.state = next_state(row, true);
      save(sql, d);
      return;
    }
    ran = true;
    const Position saved = load_position(sql, checkpoint);
    if (rebuild && row.rebuild_generation != progress_generation_) {
      // A rebuild this thread had not seen yet (another engine started it): time it from here.
      progress_generation_ = row.rebuild_generation;
      rebuild_started_ = last_report_ = std::chrono::steady_clock::now();
      rebuild_start_position_ = saved;
    }
    if (saved != begin) {  // moved since the read began: read again from where it is
      moved = saved;
      if (!rebuild) d.checkpoint = saved;
      idle = false;
      save(sql, d);
      return;
    }
    ProjectionContext ctx(&sql, name_, rebuild ? row.rebuild_generation : row.generation);
    // Applies `events`, read up to `through`; returns where the batch ends (before a failing
    // event that stops the projection).
    const auto apply = [&](std::span<const RecordedEvent> events, Position through) {
      if (careful) return apply_careful(&sql, ctx, events, through, row);
      apply_fast(ctx, events);
      return through;
    };
    end = apply(batch_, read_end);
    // Reaching the end of a range is not enough: check the head inside the write lock.
    const Position head = store_.head_position();
    if (at_end && end == read_end && end < head && head - end <= kFinishInLock &&
        row.state != ProjectionState::failed) {
      // Appends committed between the read and the lock. Read them now, inside it, where the
      // head cannot move: waiting for a batch whose read no append overtakes never ends while
      // other writers keep appending (an inline add() and a rebuild's swap waited forever).
      const std::size_t from = batch_.size();
      try {
        while (!follower.next(batch_, from + static_cast<std::size_t>(head - end) + 1)) {
        }
      } catch (...) {
        // A half-read rest is not applied: the retry reads it again.
        batch_.erase(batch_.begin() + static_cast<std::ptrdiff_t>(from), batch_.end());
        follower.restart(read_end);
        throw;
      }
      read_end = follower.position();
      end = apply(std::span<const RecordedEvent>(batch_).subspan(from), read_end);
    }
    if (end != saved) save_position(sql, checkpoint, end);
    const bool caught_up = row.state != ProjectionState::failed && at_end && end >= head;
    if (caught_up && rebuild) {
      swap_in(sql, row, end);
      swapped = true;
    }
    if (!rebuild || swapped) d.checkpoint = end;
    row.state = next_state(row, caught_up);
    d.state = row.state;
    d.live = caught_up && options_.mode == ProjectionMode::inline_append;
    idle = caught_up || row.state == ProjectionState::failed;
    save(sql, d);
  };
  try {
    store_.write_sql([&](Sql& sql) { body(sql, false); });
  } catch (...) {
    // Rolled back. The same events again, carefully (a storage error throws again from here
    // and the thread starts afresh after its back-off).
    store_.write_sql([&](Sql& sql) { body(sql, true); });
  }
  publish(d);
  if (moved) {
    follower.restart(*moved);
  } else if (!ran) {
    follower.restart(begin);  // not applied: read again when it is this code's to write
  } else if (end != read_end) {
    follower.restart(end);  // stopped at a failing event
  }
  if (swapped) {
    follower_.restart(end);
    report_progress(true);
  } else if (rebuild && ran && !moved) {
    report_progress(false);
  }
  return idle;
}

void ProjectionRunner::apply_fast(ProjectionContext& ctx, std::span<const RecordedEvent> events) {
  for (const RecordedEvent& e : events) {
    ProjectionContextAccess::set_key(ctx, {e.position, e.id});
    projection_->apply(e, ctx);
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
      projection_->apply(e, ctx);
      if (savepoint) savepoint->release();
      continue;
    } catch (...) {
      message = describe(std::current_exception());
    }
    if (savepoint) savepoint->rollback();  // a storage error here fails the transaction
    record_failure(row, e, std::move(message), options_.on_failure);
    if (options_.on_failure == FailurePolicy::stop) return e.position - 1;
  }
  return end;
}

// External target: the handler runs outside any transaction; the checkpoint (and any failure)
// is saved after the batch: at least once.
bool ProjectionRunner::external_batch() {
  batch_.clear();
  const Position before = follower_.position();
  const bool at_end = follower_.next(batch_, options_.batch_size);
  ProjectionRow delivered;  // the version and generation the batch was delivered for
  {
    MutexLock lock(mu_);
    delivered = row_;
  }
  ProjectionRow row = delivered;
  ProjectionContext ctx(nullptr, name_, row.generation);
  const Position end = apply_careful(nullptr, ctx, batch_, follower_.position(), row);
  const ProjectionState next = next_state(row, at_end);
  {
    MutexLock lock(mu_);
    if (end == before && row == row_ && state_ == next) return at_end;  // nothing to record
  }
  Decision d;
  bool moved = false;  // another engine reset the target meanwhile
  store_.write_sql([&](Sql& sql) {
    d = open_turn(sql);
    moved = d.row.version != delivered.version || d.row.generation != delivered.generation;
    if (moved) {
      d.state = next_state(d.row, false);  // its checkpoint stands; this batch's does not
      save(sql, d);
      return;
    }
    d.row.skipped += row.skipped - delivered.skipped;
    if (row.error != delivered.error) d.row.error = row.error;
    d.row.state = next;
    d.state = next;
    if (end != before) CheckpointStore::save(sql, name_, end);
    d.checkpoint = end;
    save(sql, d);
  });
  publish(d);
  if (moved) {
    reload_ = true;
    return false;
  }
  if (next == ProjectionState::failed) follower_.restart(end);
  return at_end || next == ProjectionState::failed;
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

// --- Inline ----------------------------------------------------------------------------------

// Inside the writer, in the append's transaction. A failure or skip it records is published
// by the writer's outcome notice once the append has committed; a rolled-back append
// publishes nothing.
void ProjectionRunner::on_append(AppendTransaction& tx) {
  {
    MutexLock lock(mu_);
    if (!live_) return;
  }
  Sql& sql = tx.sql();
  Decision d = open_turn(sql);
  ProjectionRow& row = d.row;
  if (row.state == ProjectionState::failed) return;
  if (row.version != version_) {
    wakeup_->notify();  // another engine moved to another version: the thread looks
    return;
  }
  const std::span<const RecordedEvent> events = tx.events();
  const Position saved = load_position(sql, name_);
  const Position first = events.front().position;
  const Position last = events.back().position;
  if (saved >= last) return;
  if (first - saved - 1 > options_.batch_size) {
    wakeup_->notify();  // a long gap (another process's appends): the thread catches up
    return;
  }
  ProjectionContext ctx(&sql, name_, row.generation);
  Position applied = 0;
  if (saved + 1 == first &&
      std::all_of(events.begin(), events.end(), [&](const RecordedEvent& e) { return wants(e); })) {
    applied = apply_careful(&sql, ctx, events, last, row);  // the common case: no copies
  } else {
    std::vector<RecordedEvent> todo;
    if (saved + 1 < first) {
      for (RecordedEvent& e : tx.read_log(saved + 1, options_.batch_size)) {
        if (wants(e)) todo.push_back(std::move(e));
      }
    }
    for (const RecordedEvent& e : events) {
      if (e.position > saved && wants(e)) todo.push_back(e);
    }
    applied = apply_careful(&sql, ctx, todo, last, row);
  }
  save_position(sql, name_, applied);
  d.checkpoint = applied;
  if (row != d.stored) save(sql, d);
  if (row.state == ProjectionState::failed) d.state = ProjectionState::failed;
  tx.on_outcome([self = shared_from_this(), d = std::move(d), applied](AppendOutcome outcome) {
    if (outcome != AppendOutcome::committed) return;
    note_inline(*self->inline_through_, applied);
    self->publish(d);
  });
}

// --- Control and status ----------------------------------------------------------------------

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

void ProjectionRunner::stop() noexcept {
  MutexLock control(control_mu_);
  halt();
}

void ProjectionRunner::halt() noexcept {
  {
    MutexLock lock(mu_);
    live_ = false;
  }
  wakeup_->stop();
  if (thread_.joinable()) thread_.join();
}

void ProjectionRunner::restart() {
  MutexLock control(control_mu_);
  halt();
  {
    MutexLock lock(mu_);
    state_ = ProjectionState::catching_up;
    state_turn_ = turns_;
    row_.state = ProjectionState::catching_up;
    restart_requested_ = true;  // the thread records it in the file
  }
  wakeup_->resume();
  thread_ = std::thread([this] { run(); });
}

void ProjectionRunner::request_rebuild() {
  {
    MutexLock lock(mu_);
    rebuild_requested_ = true;
  }
  wakeup_->notify();
}

Position ProjectionRunner::checkpoint() const { return read_checkpoint(store_, name_); }

bool ProjectionRunner::wait_committed(Position p,
                                      std::chrono::steady_clock::time_point until) const {
  MutexLock lock(mu_);
  for (;;) {
    if (checkpoint_ >= p && row_.version == version_) return true;
    if (state_ == ProjectionState::failed || state_ == ProjectionState::stopped) return false;
    if (!changed_.wait_until(lock, until)) return false;
  }
}

bool ProjectionRunner::halted() const {
  MutexLock lock(mu_);
  return state_ == ProjectionState::failed || state_ == ProjectionState::stopped;
}

bool ProjectionRunner::serving_current() const {
  MutexLock lock(mu_);
  return row_.version == version_;
}

ProjectionStatus ProjectionRunner::status(Position head) const {
  ProjectionStatus s;
  bool rebuilding;
  {
    MutexLock lock(mu_);
    s.version = row_.version;
    s.generation = row_.generation;
    s.state = state_;
    s.skipped = row_.skipped;
    s.error = retry_error_ ? retry_error_ : row_.error;
    rebuilding = is_rebuilding(row_);
  }
  s.name = name_;
  s.mode = options_.mode;
  s.head = head;
  s.checkpoint = checkpoint();
  s.lag = head - std::min(head, s.checkpoint);
  if (rebuilding) {
    s.rebuild_checkpoint = read_checkpoint(store_, rebuild_checkpoint_name(name_));
  }
  return s;
}

}  // namespace factum::detail
