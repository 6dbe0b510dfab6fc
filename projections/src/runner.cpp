#include "runner.hpp"

#include <algorithm>

#include "factum/eventstore/errors.hpp"
#include "factum/projections/checkpoint_store.hpp"

namespace factum {
namespace {

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

std::string_view mode_name(ProjectionMode mode) {
  return mode == ProjectionMode::inline_append ? "inline" : "async";
}

SubscriptionFilter filter_for(const std::vector<std::string>& types) {
  return SubscriptionFilter::all().with_types(types);
}

// A checkpoint read on a read connection: status() and wait_for() must not queue for the
// writer (CheckpointStore's constructor opens a write transaction).
Position read_checkpoint(const EventStore& store, const std::string& name) {
  Position out = 0;
  store.read_sql([&](Sql& sql) { out = CheckpointStore::load(sql, name); });
  return out;
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

}  // namespace

ProjectionEngine::Runner::Runner(EventStore& store, std::shared_ptr<Projection> projection,
                                 ProjectionOptions options, const EngineOptions& engine_options)
    : store_(store),
      projection_(std::move(projection)),
      options_(options),
      engine_options_(engine_options),
      name_(projection_->name()),
      version_(projection_->version()),
      types_(projection_->event_types()),
      follower_(store, filter_for(types_), 0),
      rebuild_follower_(store, filter_for(types_), 0) {
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

ProjectionEngine::Runner::~Runner() { stop(); }

bool ProjectionEngine::Runner::wants(const RecordedEvent& e) const {
  return types_.empty() || std::find(types_.begin(), types_.end(), e.type) != types_.end();
}

// --- Starting ----------------------------------------------------------------------------

void ProjectionEngine::Runner::start() {
  std::unique_lock control(control_mu_);
  setup();
  wakeup_ = std::make_unique<detail::Wakeup>(store_, options_.poll_interval);
  thread_ = std::thread([this] { run(); });
  control.unlock();
  if (options_.mode != ProjectionMode::inline_append) return;
  // Inline means inline once add() returns: wait until the thread has caught up and the
  // append hook applies the projection (or it failed, is retrying after a storage error, or is
  // rebuilding a new version).
  std::unique_lock lock(mu_);
  while (!active_ && state_ != ProjectionState::failed && state_ != ProjectionState::retrying &&
         !rebuilding_)
    changed_.wait_for(lock, std::chrono::milliseconds(5));
}

void ProjectionEngine::Runner::setup() {
  const bool external = options_.target == ProjectionTarget::external;
  store_.write_sql([&](Sql& sql) {
    detail::create_meta_tables(sql);
    std::optional<detail::ProjectionRow> row = detail::load_row(sql, name_);
    if (!row) {
      row.emplace();
      row->name = name_;
      row->version = version_;
      row->generation = 1;
      ProjectionContext ctx(external ? nullptr : &sql, name_, 1);
      ctx.set_creating(true);
      projection_->reset(ctx);
      if (!external) {
        detail::register_tables(sql, name_, 1, ctx.tables_named());
        detail::serve_generation(sql, name_, 1, 0);
      }
      CheckpointStore::save(sql, name_, 0);
    } else if (row->version != version_ && external) {
      row->generation += 1;
      row->version = version_;
      ProjectionContext ctx(nullptr, name_, row->generation);
      projection_->reset(ctx);
      CheckpointStore::save(sql, name_, 0);
    } else if (row->rebuild_version != 0 && row->rebuild_version == version_) {
      rebuilding_ = true;  // resume the rebuild this version started
    } else if (row->version != version_) {
      begin_rebuild(sql, *row);
    } else if (row->rebuild_version != 0) {
      // A rebuild for another version was left behind: this code serves the old generation.
      detail::drop_generation(sql, name_, row->rebuild_generation);
      CheckpointStore::remove(sql, detail::rebuild_checkpoint_name(name_));
      row->rebuild_version = 0;
      row->rebuild_generation = 0;
    }
    row->mode = std::string(mode_name(options_.mode));
    row->state = rebuilding_ ? "rebuilding" : "catching_up";
    detail::save_row(sql, *row);
    std::lock_guard lock(mu_);
    row_ = *row;
    serving_current_ = row->version == version_;
    state_ = rebuilding_ ? ProjectionState::rebuilding : ProjectionState::catching_up;
  });
  follower_.restart(CheckpointStore(store_).load(name_));
  if (rebuilding_) {
    rebuild_started_ = last_report_ = std::chrono::steady_clock::now();
    rebuild_start_position_ = CheckpointStore(store_).load(detail::rebuild_checkpoint_name(name_));
  }
}

// Creates the next generation's empty tables and a rebuild checkpoint at 0.
void ProjectionEngine::Runner::begin_rebuild(Sql& sql, detail::ProjectionRow& row) {
  if (row.rebuild_generation != 0) detail::drop_generation(sql, name_, row.rebuild_generation);
  const std::uint64_t generation = std::max(row.generation, row.rebuild_generation) + 1;
  ProjectionContext ctx(&sql, name_, generation);
  ctx.set_creating(true);
  projection_->reset(ctx);
  detail::register_tables(sql, name_, generation, ctx.tables_named());
  row.rebuild_version = version_;
  row.rebuild_generation = generation;
  CheckpointStore::save(sql, detail::rebuild_checkpoint_name(name_), 0);
  rebuilding_ = true;
  rebuild_started_ = last_report_ = std::chrono::steady_clock::now();
  rebuild_start_position_ = 0;
}

// --- The thread ----------------------------------------------------------------------------

// Every error of the thread is caught here, the error path included: a storage error is
// reported and retried after a back-off (resync() first takes back from the file what a
// rolled-back transaction changed in memory); another error stops the projection as failed.
void ProjectionEngine::Runner::run() noexcept {
  detail::Backoff backoff;
  bool more = true;
  while (more) {
    try {
      if (resync_) resync();
      wakeup_->arm();
      bool caught_up = false;
      while (!caught_up && !wakeup_->stopped()) caught_up = step();
      more = wakeup_->wait();
      backoff.reset();
    } catch (...) {
      more = recover(std::current_exception(), backoff);
    }
  }
  active_ = false;
  try {
    std::lock_guard lock(mu_);
    if (!failed_) {
      state_ = ProjectionState::stopped;
      row_.state = "stopped";
    }
  } catch (...) {
  }
  changed_.notify_all();
}

bool ProjectionEngine::Runner::recover(std::exception_ptr error,
                                       detail::Backoff& backoff) noexcept {
  resync_ = true;
  try {
    report(error);
  } catch (...) {
    // Reporting failed too (no memory, no file): the retry below is all that is left.
  }
  return wakeup_->sleep(backoff.next());
}

// A storage error: state retrying, the error recorded in memory (the file is failing) and
// on_error called. Another error: state failed, recorded in the file if it can be.
void ProjectionEngine::Runner::report(std::exception_ptr error) {
  const bool transient = detail::is_transient(error);
  {
    std::lock_guard lock(mu_);
    if (state_ != ProjectionState::failed) {
      row_.error = ProjectionFailure{follower_.position() + 1, "", describe(error)};
      if (transient) {
        state_ = ProjectionState::retrying;
      } else {
        row_.state = "failed";
        state_ = ProjectionState::failed;
        failed_ = true;
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
  if (!transient) save_state();
}

void ProjectionEngine::Runner::resync() {
  Position checkpoint = 0;
  store_.write_sql([&](Sql& sql) {
    adopt_row(sql);  // the followers restart below in any case
    const std::optional<detail::ProjectionRow> file = detail::load_row(sql, name_);
    checkpoint = CheckpointStore::load(sql, name_);
    std::lock_guard lock(mu_);
    if (file && !inline_failure_) {  // an inline failure is settled by step()
      // The storage error being retried stays the last failure (and is recorded now).
      if (state_ != ProjectionState::retrying) row_.error = file->error;
      row_.skipped = file->skipped;
      // A stopping failure recorded by a batch that then rolled back: forgotten.
      if (state_ != ProjectionState::failed && file->state != "failed") failed_ = false;
    }
    if (!failed_) detail::save_row(sql, row_);
  });
  follower_.restart(checkpoint);
  rebuild_follower_.restart(0);  // store_batch reloads it from its checkpoint
  resync_ = false;
}

bool ProjectionEngine::Runner::step() {
  take_rebuild_request();
  if (failed_) {
    bool pending;
    {
      std::lock_guard lock(mu_);
      pending = inline_failure_.has_value();
    }
    if (!pending) return true;
    // An inline failure not yet reported: inside the writer, the append that recorded it has
    // either committed (report it) or been rolled back (forget it and go on).
    Resolution r = Resolution::none;
    store_.write_sql([&](Sql& sql) { r = resolve_inline_failure(sql); });
    if (r == Resolution::holds) publish_failure();
    if (r != Resolution::cleared) return true;
  }
  bool serving;
  {
    std::lock_guard lock(mu_);
    serving = serving_current_;
  }
  bool caught_up = true;
  if (options_.target == ProjectionTarget::external) {
    caught_up = external_batch();
  } else if (serving) {
    caught_up = store_batch({name_, &follower_, false});
  }
  if (rebuilding_ && !failed_) {
    caught_up = store_batch({detail::rebuild_checkpoint_name(name_), &rebuild_follower_, true}) &&
                caught_up;
  }
  if (!failed_) {
    set_state(rebuilding_ ? ProjectionState::rebuilding
              : caught_up ? ProjectionState::running
                          : ProjectionState::catching_up);
  }
  return caught_up;
}

// A rebuild() request starts its rebuild; a request whose transaction failed stays requested.
void ProjectionEngine::Runner::take_rebuild_request() {
  bool requested = false;
  {
    std::lock_guard lock(mu_);
    std::swap(requested, rebuild_requested_);
  }
  if (!requested) return;
  try {
    if (options_.target == ProjectionTarget::external) {
      store_.write_sql([&](Sql& sql) {
        std::lock_guard lock(mu_);
        row_.generation += 1;
        ProjectionContext ctx(nullptr, name_, row_.generation);
        projection_->reset(ctx);
        CheckpointStore::save(sql, name_, 0);
        detail::save_row(sql, row_);
      });
      follower_.restart(0);
    } else {
      store_.write_sql([&](Sql& sql) {
        std::lock_guard lock(mu_);
        begin_rebuild(sql, row_);
        row_.state = "rebuilding";
        state_ = ProjectionState::rebuilding;
        detail::save_row(sql, row_);
      });
      rebuild_follower_.restart(0);
    }
  } catch (...) {
    std::lock_guard lock(mu_);
    rebuild_requested_ = true;
    throw;
  }
}

// --- Batches ---------------------------------------------------------------------------------

// One transaction: the checkpoint read inside the write lock, the next batch applied, the
// checkpoint saved. A throwing apply sends the batch again through apply_careful. Returns true
// when the target reached the head.
bool ProjectionEngine::Runner::store_batch(const Target& target) {
  bool caught_up = false;
  bool swapped = false;
  Position end = 0;
  bool adopted = false;
  bool failed_here = false;  // this batch recorded a stopping failure
  auto body = [&](Sql& sql, bool careful) {
    if (failed_) return;  // recorded inline meanwhile: step() resolves it
    if (adopt_row(sql)) {
      adopted = true;  // another engine swapped or started a rebuild: go on from its state
      return;
    }
    const Position saved = CheckpointStore::load(sql, target.checkpoint);
    if (saved != target.follower->position()) target.follower->restart(saved);
    batch_.clear();
    const bool at_end = target.follower->next(batch_, options_.batch_size);
    std::uint64_t generation;
    {
      std::lock_guard lock(mu_);
      generation = target.rebuild ? row_.rebuild_generation : row_.generation;
    }
    ProjectionContext ctx(&sql, name_, generation);
    end = target.follower->position();
    if (careful) {
      end = apply_careful(&sql, ctx, batch_, end);
      std::lock_guard lock(mu_);
      detail::save_row(sql, row_);
    } else {
      apply_fast(ctx, batch_);
    }
    if (end != saved) CheckpointStore::save(sql, target.checkpoint, end);
    failed_here = failed_;
    if (failed_) return;
    // Reaching the end of a range is not enough: check the head inside the write lock.
    caught_up = at_end && end >= store_.head_position();
    if (caught_up && target.rebuild) {
      swap_in(sql, end);
      swapped = true;
    } else if (caught_up && options_.mode == ProjectionMode::inline_append) {
      active_ = true;  // from the next append on, the hook applies it
    }
  };
  try {
    store_.write_sql([&](Sql& sql) { body(sql, false); });
  } catch (...) {
    swapped = false;
    target.follower->restart(0);  // reloaded from the checkpoint by body
    store_.write_sql([&](Sql& sql) { body(sql, true); });
  }
  if (failed_here) publish_failure();
  if (adopted) {
    follower_.restart(0);
    rebuild_follower_.restart(0);
    return false;
  }
  if (swapped) {
    {
      std::lock_guard lock(mu_);
      serving_current_ = true;
    }
    rebuilding_ = false;
    follower_.restart(end);
    if (options_.mode == ProjectionMode::inline_append) active_ = true;
    report_progress(true);
  } else if (target.rebuild) {
    report_progress(false);
  }
  changed_.notify_all();
  return caught_up || failed_;
}

void ProjectionEngine::Runner::apply_fast(ProjectionContext& ctx,
                                          std::span<const RecordedEvent> events) {
  for (const RecordedEvent& e : events) {
    ctx.set_key({e.position, e.id});
    projection_->apply(e, ctx);
  }
}

Position ProjectionEngine::Runner::apply_careful(Sql* sql, ProjectionContext& ctx,
                                                 std::span<const RecordedEvent> events,
                                                 Position end) {
  for (const RecordedEvent& e : events) {
    if (!apply_one(sql, ctx, e) && options_.on_failure == FailurePolicy::stop) {
      return e.position - 1;
    }
  }
  return end;
}

// Applies `e` under a savepoint (store target); on failure rolls its changes back and records
// it. Returns whether it applied.
bool ProjectionEngine::Runner::apply_one(Sql* sql, ProjectionContext& ctx, const RecordedEvent& e) {
  ctx.set_key({e.position, e.id});
  if (sql != nullptr) sql->execute("SAVEPOINT factum_projection_event");
  std::string message;
  try {
    projection_->apply(e, ctx);
    if (sql != nullptr) sql->execute("RELEASE factum_projection_event");
    return true;
  } catch (...) {
    message = describe(std::current_exception());
  }
  if (sql != nullptr) {
    sql->execute("ROLLBACK TO factum_projection_event");
    sql->execute("RELEASE factum_projection_event");
  }
  record_failure(e, message);
  return false;
}

// Inside the batch's (or the append's) transaction: the projection stops applying at once, but
// status() and wait_for() report the failure only once the checkpoint before it has committed
// (publish_failure), so that no reader sees a failed projection with the checkpoint it had
// before the batch.
void ProjectionEngine::Runner::record_failure(const RecordedEvent& e, const std::string& message) {
  std::lock_guard lock(mu_);
  row_.error = ProjectionFailure{e.position, e.type, message};
  if (options_.on_failure == FailurePolicy::stop) {
    row_.state = "failed";
    failed_ = true;
  } else {
    ++row_.skipped;
  }
}

void ProjectionEngine::Runner::publish_failure() {
  {
    std::lock_guard lock(mu_);
    inline_failure_.reset();
    if (!failed_ || state_ == ProjectionState::failed) return;
    state_ = ProjectionState::failed;
  }
  changed_.notify_all();
}

// External target: the handler runs outside any transaction; the checkpoint (and any failure)
// is saved after the batch: at least once.
bool ProjectionEngine::Runner::external_batch() {
  batch_.clear();
  const Position before = follower_.position();
  const bool at_end = follower_.next(batch_, options_.batch_size);
  std::uint64_t generation;
  {
    std::lock_guard lock(mu_);
    generation = row_.generation;
  }
  ProjectionContext ctx(nullptr, name_, generation);
  const Position end = apply_careful(nullptr, ctx, batch_, follower_.position());
  if (end != before || failed_) {
    store_.write_sql([&](Sql& sql) {
      CheckpointStore::save(sql, name_, end);
      std::lock_guard lock(mu_);
      detail::save_row(sql, row_);
    });
  }
  if (failed_) follower_.restart(end);
  publish_failure();
  changed_.notify_all();
  return at_end || failed_;
}

// Inside the rebuild's last transaction: the new generation becomes the serving one.
void ProjectionEngine::Runner::swap_in(Sql& sql, Position at) {
  detail::ProjectionRow next;
  {
    std::lock_guard lock(mu_);
    next = row_;
  }
  detail::serve_generation(sql, name_, next.rebuild_generation, next.generation);
  detail::drop_generation(sql, name_, next.generation);
  CheckpointStore::save(sql, name_, at);
  CheckpointStore::remove(sql, detail::rebuild_checkpoint_name(name_));
  next.version = next.rebuild_version;
  next.generation = next.rebuild_generation;
  next.rebuild_version = 0;
  next.rebuild_generation = 0;
  next.state = "running";
  detail::save_row(sql, next);
  std::lock_guard lock(mu_);
  row_ = next;
}

// --- Inline --------------------------------------------------------------------------------

void ProjectionEngine::Runner::on_append(AppendTransaction& tx) {
  if (!active_) return;
  if (failed_ && resolve_inline_failure(tx.sql()) != Resolution::cleared) return;
  const std::span<const RecordedEvent> events = tx.events();
  Sql& sql = tx.sql();
  const Position saved = CheckpointStore::load(sql, name_);
  const Position first = events.front().position;
  const Position last = events.back().position;
  if (saved >= last) return;
  if (adopt_row(sql)) {
    wakeup_->notify();  // another engine changed the generation: the thread goes on from it
    return;
  }
  if (first - saved - 1 > options_.batch_size) {
    wakeup_->notify();  // a long gap (another process's appends): the thread catches up
    return;
  }
  std::vector<RecordedEvent> todo;
  for (RecordedEvent& e : tx.read_log(saved + 1, options_.batch_size)) {
    if (wants(e)) todo.push_back(std::move(e));
  }
  for (const RecordedEvent& e : events) {
    if (e.position > saved && wants(e)) todo.push_back(e);
  }
  std::uint64_t generation;
  {
    std::lock_guard lock(mu_);
    generation = row_.generation;
  }
  ProjectionContext ctx(&sql, name_, generation);
  std::uint64_t skipped_before;
  {
    std::lock_guard lock(mu_);
    skipped_before = row_.skipped;
  }
  const Position end = apply_careful(&sql, ctx, todo, last);
  CheckpointStore::save(sql, name_, end);
  std::lock_guard lock(mu_);
  if (failed_ || row_.skipped != skipped_before) detail::save_row(sql, row_);
  if (!failed_) return;
  // Reported once this append has committed (publish_inline_failure); the thread is woken to
  // settle it should the append be rolled back instead.
  inline_failure_ = InlineFailure{events.front().position, events.front().id};
  wakeup_->notify();
}

// Inside the writer. A failure recorded by an inline append that has not been reported yet:
// the file (as this transaction sees it) tells whether that append's changes are there. When
// they are not, it was rolled back (another slot threw, or its commit failed): the failure is
// forgotten and the row taken back from the file.
ProjectionEngine::Runner::Resolution ProjectionEngine::Runner::resolve_inline_failure(Sql& sql) {
  {
    std::lock_guard lock(mu_);
    if (!inline_failure_) return Resolution::none;
  }
  const std::optional<detail::ProjectionRow> file = detail::load_row(sql, name_);
  if (file && file->state == "failed") return Resolution::holds;
  std::lock_guard lock(mu_);
  inline_failure_.reset();
  if (file) {
    row_.error = file->error;
    row_.skipped = file->skipped;
    row_.state = file->state;
  }
  failed_ = false;
  return Resolution::cleared;
}

// After a commit of this process (on_appended, in the appending thread, before append()
// returns): when it committed the append that recorded an inline failure, the failure is
// reported.
void ProjectionEngine::Runner::publish_inline_failure(std::span<const RecordedEvent> committed) {
  {
    std::lock_guard lock(mu_);
    if (!inline_failure_) return;
    const InlineFailure f = *inline_failure_;
    const bool ours = std::any_of(committed.begin(), committed.end(), [&](const RecordedEvent& e) {
      return e.position == f.first_position && e.id == f.first_id;
    });
    if (!ours) return;
  }
  publish_failure();
}

// --- Control and status ----------------------------------------------------------------------

void ProjectionEngine::Runner::report_progress(bool finished) {
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

// Takes the file's record when another engine (thread or process) running this projection
// moved it to another generation; returns whether it did. Inside the write lock.
bool ProjectionEngine::Runner::adopt_row(Sql& sql) {
  const std::optional<detail::ProjectionRow> file = detail::load_row(sql, name_);
  if (!file) return false;
  std::lock_guard lock(mu_);
  if (file->generation == row_.generation && file->rebuild_generation == row_.rebuild_generation) {
    return false;
  }
  row_.version = file->version;
  row_.generation = file->generation;
  row_.rebuild_version = file->rebuild_version;
  row_.rebuild_generation = file->rebuild_generation;
  serving_current_ = file->version == version_;
  rebuilding_ = file->rebuild_generation != 0 && file->rebuild_version == version_;
  if (!serving_current_) active_ = false;
  return true;
}

void ProjectionEngine::Runner::save_state() {
  store_.write_sql([&](Sql& sql) {
    if (adopt_row(sql)) return;
    std::lock_guard lock(mu_);
    detail::save_row(sql, row_);
  });
}

// Records the new state in the file too, so that recorded() shows what status() shows. A
// failure recorded meanwhile by an inline append (failed_ is set under mu_) is not overwritten.
void ProjectionEngine::Runner::set_state(ProjectionState s) {
  {
    std::lock_guard lock(mu_);
    if (state_ == s || failed_) return;
    state_ = s;
    row_.state = std::string(to_string(s));
  }
  save_state();
  changed_.notify_all();
}

void ProjectionEngine::Runner::stop() noexcept {
  std::lock_guard control(control_mu_);
  halt();
}

void ProjectionEngine::Runner::halt() noexcept {
  active_ = false;
  if (wakeup_) wakeup_->stop();
  if (thread_.joinable()) thread_.join();
}

void ProjectionEngine::Runner::restart() {
  std::lock_guard control(control_mu_);
  halt();
  {
    std::lock_guard lock(mu_);
    state_ = ProjectionState::catching_up;
    row_.state = "catching_up";
    inline_failure_.reset();
  }
  failed_ = false;
  resync_ = true;  // the thread records the state and reloads the checkpoint
  wakeup_->resume();
  thread_ = std::thread([this] { run(); });
}

void ProjectionEngine::Runner::request_rebuild() {
  {
    std::lock_guard lock(mu_);
    rebuild_requested_ = true;
  }
  if (wakeup_) wakeup_->notify();
}

Position ProjectionEngine::Runner::checkpoint() const { return read_checkpoint(store_, name_); }

bool ProjectionEngine::Runner::halted() const {
  std::lock_guard lock(mu_);
  return state_ == ProjectionState::failed || state_ == ProjectionState::stopped;
}

bool ProjectionEngine::Runner::serving_current() const {
  std::lock_guard lock(mu_);
  return serving_current_;
}

ProjectionStatus ProjectionEngine::Runner::status(Position head) const {
  ProjectionStatus s;
  {
    std::lock_guard lock(mu_);
    s.name = name_;
    s.version = row_.version;
    s.generation = row_.generation;
    s.state = state_;
    s.skipped = row_.skipped;
    s.error = row_.error;
  }
  s.mode = options_.mode;
  s.head = head;
  s.checkpoint = checkpoint();
  s.lag = head - std::min(head, s.checkpoint);
  if (rebuilding_) {
    s.rebuild_checkpoint = read_checkpoint(store_, detail::rebuild_checkpoint_name(name_));
  }
  return s;
}

}  // namespace factum
