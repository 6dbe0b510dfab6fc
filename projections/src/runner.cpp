#include "runner.hpp"

#include <algorithm>

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/personal.hpp"
#include "factum/projections/checkpoint_store.hpp"

namespace factum::detail {
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

// The types the projection asked for and the facts of forgotten subjects, which every
// projection is told of (Projection::forget); every event when it asked for all. A query is read
// by query, and the forgotten subjects' stream beside it (follower_for).
SubscriptionFilter filter_for(std::vector<std::string> types, const std::optional<Query>& query,
                              const std::string& name) {
  if (query) {
    if (!types.empty()) {
      throw InvalidArgument("factum: projection '" + name +
                            "' names both event types and a query: name the types in the query");
    }
    return SubscriptionFilter::query(*query);
  }
  if (!types.empty()) types.emplace_back(kSubjectForgottenType);
  return SubscriptionFilter::all().with_types(types);
}

LogFollower follower_for(const EventStore& store, const std::vector<std::string>& types,
                         const std::optional<Query>& query, const std::string& name) {
  return LogFollower(store, filter_for(types, query, name), 0,
                     query ? std::string(kSubjectsStream) : std::string());
}

bool is_forget_fact(const RecordedEvent& e) {
  return e.type == kSubjectForgottenType && e.stream_id == kSubjectsStream;
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

// The position a thread error is about: the one a damaged or missing event names (the checked
// walk reads a page at a time, so the follower may stand well before it), else `next`.
Position failure_position(std::exception_ptr e, Position next) {
  try {
    std::rethrow_exception(e);
  } catch (const CorruptStoreError& ex) {
    return ex.position() != 0 ? ex.position() : next;
  } catch (const CorruptEventError& ex) {
    return ex.position() != 0 ? ex.position() : next;
  } catch (...) {
    return next;
  }
}

}  // namespace

std::string describe_error(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

ProjectionRunner::ProjectionRunner(EventStore& store, std::shared_ptr<Projection> projection,
                                   ProjectionOptions options, const EngineOptions& engine_options)
    : store_(store),
      projection_(std::move(projection)),
      options_(options),
      engine_options_(engine_options),
      name_(projection_->name()),
      version_(projection_->version()),
      types_(projection_->event_types()),
      query_(projection_->query()),
      follower_(follower_for(store, types_, query_, name_)),
      rebuild_follower_(follower_for(store, types_, query_, name_)),
      inline_through_(std::make_shared<std::atomic<Position>>(0)),
      wakeup_(std::make_unique<Wakeup>(store, options.poll_interval,
                                       options.mode == ProjectionMode::inline_append
                                           ? not_applied_inline(inline_through_)
                                           : Wakeup::Wanted{})) {
  check_name(name_);
  if (options_.batch_size == 0) {
    throw InvalidArgument("factum: projection '" + name_ + "': batch_size is 0");
  }
  if (options_.mode == ProjectionMode::inline_append && external()) {
    throw InvalidArgument("factum: projection '" + name_ +
                          "': inline mode needs a read model in the store (external target)");
  }
}

ProjectionRunner::~ProjectionRunner() { stop(); }

bool ProjectionRunner::wants(const RecordedEvent& e) const {
  return applies(e) || is_forget_fact(e);
}

// Whether apply() wants `e` (forget() is told of every forget fact besides).
bool ProjectionRunner::applies(const RecordedEvent& e) const {
  if (query_) return factum::matches(*query_, e);
  return types_.empty() || std::find(types_.begin(), types_.end(), e.type) != types_.end();
}

void ProjectionRunner::deliver(const RecordedEvent& e, ProjectionContext& ctx) {
  if (is_forget_fact(e)) {
    if (const std::optional<std::string> subject = forgotten_subject(e)) {
      projection_->forget(*subject, ctx);
    }
    if (!applies(e)) return;
  }
  projection_->apply(e, ctx);
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

// --- The states --------------------------------------------------------------------------

// catching_up, running or rebuilding, as a batch leaves them; failed stays failed.
ProjectionState ProjectionRunner::next_state(const ProjectionRow& row, bool caught_up) const {
  if (row.state == ProjectionState::failed) return ProjectionState::failed;
  if (is_rebuilding(row)) return ProjectionState::rebuilding;
  return caught_up ? ProjectionState::running : ProjectionState::catching_up;
}

// retrying: the error kept in memory (the file is failing) until a committed turn stores it.
// failed: shown at once, and recorded in the file by record_failed.
bool ProjectionRunner::show_error(ProjectionState state, const ProjectionFailure& failure) {
  MutexLock lock(mu_);
  if (state_ == ProjectionState::failed) return false;
  state_ = state;
  state_turn_ = turns_;
  if (state == ProjectionState::retrying) {
    retry_error_ = failure;
  } else {
    row_.error = failure;
    row_.state = ProjectionState::failed;
    live_ = false;
  }
  return true;
}

void ProjectionRunner::record_failed(const ProjectionFailure& failure) {
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

void ProjectionRunner::enter_stopped() {
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

// --- add() -------------------------------------------------------------------------------

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
  Decision d;
  store_.write_sql([&](Sql& sql) { d = add_turn(sql); });
  publish(d);
  follower_.restart(d.checkpoint.value_or(0));
  // A rebuild resumed or begun here goes on from its checkpoint (0 when begun).
  rebuild_follower_.restart(rebuild_start_position_);
}

// Generation 1, a new version (rebuilt; an external target reset), or resume; then
// catching_up or rebuilding, whatever the file held (a failed projection resumes too).
ProjectionRunner::Decision ProjectionRunner::add_turn(Sql& sql) {
  create_meta_tables(sql);
  Decision d = open_turn(sql);
  ProjectionRow& row = d.row;
  if (!d.known) {
    create_first_generation(sql, row);
  } else if (row.version != version_ && external()) {
    row.version = version_;
    reset_external(sql, row);
  } else if (is_rebuilding(row)) {
    // Resume the rebuild this version started.
    time_rebuild(row.rebuild_generation,
                 CheckpointStore::load(sql, rebuild_checkpoint_name(name_)));
  } else if (row.version != version_) {
    begin_rebuild(sql, row);
  } else if (row.rebuild_version != 0) {
    drop_abandoned_rebuild(sql, row);
  }
  row.mode = options_.mode;
  row.state = is_rebuilding(row) ? ProjectionState::rebuilding : ProjectionState::catching_up;
  d.state = row.state;
  save_row(sql, row);
  d.checkpoint = CheckpointStore::load(sql, name_);
  return d;
}

// Reset, tables, views, checkpoint 0.
void ProjectionRunner::create_first_generation(Sql& sql, ProjectionRow& row) {
  row = ProjectionRow{};
  row.name = name_;
  row.version = version_;
  row.generation = 1;
  ProjectionContext ctx(external() ? nullptr : &sql, name_, 1);
  ProjectionContextAccess::set_creating(ctx);
  projection_->reset(ctx);
  if (!external()) {
    register_tables(sql, name_, 1, ProjectionContextAccess::tables(ctx));
    serve_generation(sql, name_, 1, 0);
  }
  CheckpointStore::save(sql, name_, 0);
}

// A rebuild for another version was left behind: this code serves the old generation.
void ProjectionRunner::drop_abandoned_rebuild(Sql& sql, ProjectionRow& row) {
  drop_generation(sql, name_, row.rebuild_generation);
  CheckpointStore::remove(sql, rebuild_checkpoint_name(name_));
  row.rebuild_version = 0;
  row.rebuild_generation = 0;
}

// --- restart() and rebuild() -------------------------------------------------------------

// After restart(): the file's failed state becomes catching_up (the error stays recorded).
void ProjectionRunner::take_restart() {
  {
    MutexLock lock(mu_);
    if (!restart_requested_) return;
  }
  Decision d;
  store_.write_sql([&](Sql& sql) { d = restart_turn(sql); });
  {
    MutexLock lock(mu_);
    restart_requested_ = false;
  }
  publish(d);
}

ProjectionRunner::Decision ProjectionRunner::restart_turn(Sql& sql) {
  Decision d = open_turn(sql);
  if (d.row.state == ProjectionState::failed) d.row.state = ProjectionState::catching_up;
  save(sql, d);
  return d;
}

// A rebuild() request starts its rebuild; a request whose transaction failed stays requested.
void ProjectionRunner::take_rebuild_request() {
  {
    MutexLock lock(mu_);
    if (!rebuild_requested_) return;
    rebuild_requested_ = false;
  }
  Decision d;
  try {
    store_.write_sql([&](Sql& sql) { d = rebuild_turn(sql); });
  } catch (...) {
    MutexLock lock(mu_);
    rebuild_requested_ = true;
    throw;
  }
  publish(d);
  (external() ? follower_ : rebuild_follower_).restart(0);
}

// A store target: the next generation and rebuilding. An external target: reset, replayed
// from position 1 by its batches.
ProjectionRunner::Decision ProjectionRunner::rebuild_turn(Sql& sql) {
  Decision d = open_turn(sql);
  if (external()) {
    reset_external(sql, d.row);
    d.checkpoint = 0;
  } else {
    begin_rebuild(sql, d.row);
    d.row.state = ProjectionState::rebuilding;
    d.state = ProjectionState::rebuilding;
  }
  save(sql, d);
  return d;
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
  time_rebuild(generation, 0);
}

// External targets are not ours to swap: the next generation resets the target, checkpoint 0.
void ProjectionRunner::reset_external(Sql& sql, ProjectionRow& row) {
  row.generation += 1;
  ProjectionContext ctx(nullptr, name_, row.generation);
  projection_->reset(ctx);
  CheckpointStore::save(sql, name_, 0);
}

void ProjectionRunner::time_rebuild(std::uint64_t generation, Position from) {
  progress_generation_ = generation;
  rebuild_started_ = last_report_ = std::chrono::steady_clock::now();
  rebuild_start_position_ = from;
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
  enter_stopped();
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

// A storage error: retrying, and on_error called. Another error (a corrupt event, a hole in the
// log): failed, recorded in the file if it can be.
void ProjectionRunner::report(std::exception_ptr error) {
  const ProjectionState state =
      is_transient(error) ? ProjectionState::retrying : ProjectionState::failed;
  const ProjectionFailure failure{failure_position(error, follower_.position() + 1), "",
                                  describe_error(error)};
  const bool shown = show_error(state, failure);
  changed_.notify_all();
  call_on_error(error);
  if (shown && state == ProjectionState::failed) record_failed(failure);
}

void ProjectionRunner::call_on_error(std::exception_ptr error) {
  if (!engine_options_.on_error) return;
  try {
    engine_options_.on_error(name_, error);
  } catch (...) {
    // on_error must not throw; a throwing one must not stop the retries.
  }
}

// One round of the state machine: requests first, then a batch of each target.
bool ProjectionRunner::step() {
  if (reload_) reload();
  take_restart();
  if (failed_shown()) return true;  // a rebuild() waits for restart()
  take_rebuild_request();
  if (external()) return external_batch();
  const bool serving_idle = store_batch(false);
  if (!rebuild_shown()) return serving_idle;
  return store_batch(true) && serving_idle;
}

// After an error a follower may hold a half-read range: both start afresh. An external target's
// from its checkpoint. A store target's where they stood, with no read: its batch checks where it
// began against the checkpoint inside the write lock and reads again from there when they differ.
// So the first storage call of a retry is its batch's read, which (as its write) gets a second
// try before the back-off: a read or write that fails once costs no pause (a failed wake-up poll
// still does).
void ProjectionRunner::reload() {
  if (external()) {
    follower_.restart(read_checkpoint(store_, name_));
    rebuild_follower_.restart(0);
  } else {
    follower_.restart(follower_.position());
    rebuild_follower_.restart(rebuild_follower_.position());
  }
  reload_ = false;
}

bool ProjectionRunner::failed_shown() const {
  MutexLock lock(mu_);
  return state_ == ProjectionState::failed;
}

bool ProjectionRunner::rebuild_shown() const {
  MutexLock lock(mu_);
  return state_ != ProjectionState::failed && is_rebuilding(row_);
}

// --- Control and status ----------------------------------------------------------------------

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

// status() shows catching_up at once; the thread's first turn writes it to the file.
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
  // The checkpoint and the count of skipped events from one read of the file: the count of the
  // events the checkpoint has passed. Memory takes a batch's count only after its commit, which
  // the file (and so wait_for) shows first.
  store_.read_sql([&](Sql& sql) {
    s.checkpoint = CheckpointStore::load(sql, name_);
    if (const std::optional<ProjectionRow> stored = load_row(sql, name_)) {
      s.skipped = stored->skipped;
    }
    if (rebuilding)
      s.rebuild_checkpoint = CheckpointStore::load(sql, rebuild_checkpoint_name(name_));
  });
  s.lag = head - std::min(head, s.checkpoint);
  return s;
}

}  // namespace factum::detail
