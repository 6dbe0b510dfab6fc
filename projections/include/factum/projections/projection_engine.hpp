// factum/projections/projection_engine.hpp — runs projections: keeps each read model in step
// with the log, exactly once for read models in the store's file, and rebuilds them with new
// logic while the old ones keep serving.
//
//   factum::ProjectionEngine engine(store);
//   engine.add(std::make_shared<Balances>());                          // async, own thread
//   engine.add(std::make_shared<Statements>(),
//              {.mode = factum::ProjectionMode::inline_append});      // never behind the log
//   ...
//   for (const auto& s : engine.status()) std::cout << s.name << " lag " << s.lag << "\n";
//
// Guarantees (store target):
// - Exactly once: a batch of events, the read-model changes they cause and the checkpoint
//   commit in one transaction, which reads its checkpoint inside the store's write lock. A
//   crash loses no event and applies none twice, and several engines (threads or processes)
//   running the same projection never apply an event twice.
// - Inline mode: the projection is applied inside each append's own transaction in this
//   process, so after append() returns the read model already shows it. Appends made by
//   processes without the projection are caught up by the projection's thread (within
//   poll_interval; on PostgreSQL at once, woken by LISTEN/NOTIFY) or by the next inline
//   append, which applies the gap first.
// - Async mode: the projection follows the log on its own thread, from its checkpoint, in
//   transactions of batch_size events.
// - Versions: when a projection's version differs from the one recorded in the file (or on
//   rebuild()), a new generation of its tables is built from position 1 while the old one
//   keeps serving queries; once caught up, both swap in one transaction with the checkpoint.
//   While a version change rebuilds, the old generation stays as of the rebuild's start (the
//   new code cannot write it); rebuild() at the same version keeps it current meanwhile.
// - Failures: an apply that throws rolls back that event's changes. Policy stop: the
//   projection stops with the position, type and error recorded in the file (the others go
//   on); restart() resumes it. Policy skip: the event is skipped, counted and recorded.
// - Storage errors: no projection thread ends the process or hangs on one. When the store
//   cannot be read or written (a StorageError, or std::bad_alloc), the transaction in progress
//   rolls back, the projection reports it (state retrying, ProjectionStatus::error,
//   EngineOptions::on_error) and retries with back-off (10 ms doubling to 1 s); once the store
//   works again it goes on from its checkpoint, still exactly once. stop() and the destructor
//   return promptly while it backs off. Another error of the thread itself (a corrupt event)
//   stops the projection as failed until restart().
// Guarantees (external target): at least once, in position order; the checkpoint is saved
// after each batch; apply gets ctx.key() to make its effects idempotent. Rebuild calls reset
// then replays (no blue/green: the target is not ours to swap).
//
// State lives in the store's file: factum_checkpoints (name -> position), factum_projections
// (version, generation, mode, state, last error), factum_projection_tables (tables per
// generation), so tools (the `factum` CLI) can show it without the projection code.
//
// Thread-safety: every member may be called from any thread. Projections' code runs on their
// own threads (and, inline, on appending threads), one call at a time per projection. The
// EventStore must outlive the engine; the destructor stops every projection.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event_store.hpp"
#include "factum/projections/projection.hpp"

namespace factum {

enum class ProjectionMode {
  async,          // on its own thread, from its checkpoint
  inline_append,  // inside each append's transaction (store target only)
};

enum class FailurePolicy {
  stop,  // stop this projection, record the error; restart() resumes at the failed event
  skip,  // record the error, count the event as skipped, go on
};

struct ProjectionOptions {
  ProjectionMode mode = ProjectionMode::async;        // default: async
  ProjectionTarget target = ProjectionTarget::store;  // default: tables in the store
  FailurePolicy on_failure = FailurePolicy::stop;     // default: stop
  std::size_t batch_size = 512;                       // events per transaction
  // How often to look for other processes' commits (PostgreSQL: the fallback of LISTEN); 0: never.
  std::chrono::milliseconds poll_interval{100};
};

enum class ProjectionState {
  catching_up,  // reading history towards the head
  running,      // at the head, following the log
  rebuilding,   // building a new generation; the old one serves queries
  retrying,     // reading or writing the store failed (see ProjectionStatus::error and
                // EngineOptions::on_error): retrying with back-off, resuming by itself
  stopped,      // not running (engine stopped, or never started in this process)
  failed,       // stopped by a failing event (see ProjectionStatus::error); reported only once
                // the checkpoint just before that event has committed
};

// "running", "failed", ...
std::string_view to_string(ProjectionState state) noexcept;

struct ProjectionFailure {
  Position position = 0;   // the event that failed
  std::string event_type;  // its type
  std::string message;     // what apply threw

  friend bool operator==(const ProjectionFailure&, const ProjectionFailure&) = default;
};

struct ProjectionStatus {
  std::string name;
  std::uint32_t version = 0;     // the version of the serving read model
  std::uint64_t generation = 0;  // its generation
  ProjectionMode mode = ProjectionMode::async;
  ProjectionState state = ProjectionState::stopped;
  Position checkpoint = 0;          // the last position the serving read model reflects
  Position head = 0;                // the log's head when the status was taken
  Position lag = 0;                 // head - checkpoint
  Position rebuild_checkpoint = 0;  // while rebuilding: how far the new generation got
  std::uint64_t skipped = 0;        // events skipped by FailurePolicy::skip
  // The last failure: a failing event, or a storage error (event_type empty, position the next
  // event to apply). Kept after the projection recovers from a storage error.
  std::optional<ProjectionFailure> error;
};

// Progress of a rebuild, reported through EngineOptions::on_progress.
struct RebuildProgress {
  std::string projection;
  Position done = 0;             // events of the log replayed so far
  Position total = 0;            // the log's head
  double events_per_second = 0;  // since the rebuild started
  std::chrono::seconds time_left{0};
  bool finished = false;  // the new generation was swapped in
};

struct EngineOptions {
  // Called on the rebuilding projection's thread, at most every progress_interval and once at
  // the end. Must not throw.
  std::function<void(const RebuildProgress&)> on_progress{};  // default: none
  std::chrono::milliseconds progress_interval{500};           // default: half a second
  // Called on a projection's thread with the projection's name when the thread itself fails
  // (not an apply: those follow the FailurePolicy): for a storage error (StorageError,
  // std::bad_alloc) at each failed attempt, before the back-off; for any other error (a corrupt
  // event, say) once, as the projection stops. Must not throw, nor call stop() or restart() (it
  // runs on the thread they join).
  std::function<void(std::string_view projection, std::exception_ptr error)> on_error{};
};

class ProjectionEngine {
 public:
  // Writes nothing: the engine's tables are made when a projection is first added (add()), in
  // that projection's first transaction. Throws nothing but std::bad_alloc.
  explicit ProjectionEngine(EventStore& store, EngineOptions options = {});
  ~ProjectionEngine();
  ProjectionEngine(const ProjectionEngine&) = delete;
  ProjectionEngine& operator=(const ProjectionEngine&) = delete;

  // Registers `projection` and starts it: a new one builds generation 1 from position 1; a
  // known one resumes from its checkpoint; one whose version changed rebuilds. An inline
  // projection is caught up before add() returns (unless it rebuilds a new version, or a
  // storage error makes it retry: then its thread catches up once the store works again), so
  // the appends that follow are applied inside their transactions. Throws
  // InvalidArgument (null, a name already added, a bad name, inline with an external target,
  // batch_size 0), StorageError; and what reset() throws when it creates generation 1.
  void add(std::shared_ptr<Projection> projection, ProjectionOptions options = {});

  // Starts a blue/green rebuild of `name` at its current version (returns at once; see
  // status() and on_progress). Throws NotFound for an unknown name.
  void rebuild(std::string_view name);
  // Resumes a failed or stopped projection from its checkpoint (the checkpoint is reloaded on
  // the projection's thread, which retries on a storage error). Calls from several threads, and
  // with stop(), take turns. Throws NotFound.
  void restart(std::string_view name);
  // Stops every projection (joins their threads). Inline projections stop being applied.
  void stop() noexcept;

  // Status of every added projection, by name; of one (throws NotFound).
  std::vector<ProjectionStatus> status() const;
  ProjectionStatus status(std::string_view name) const;

  // Waits until `name`'s serving read model, built by this code's version, reflects position
  // `p` (after a version change: until the rebuilt one is swapped in), or it failed or
  // stopped, or `timeout` passed. Returns whether it reached `p`. Throws NotFound.
  bool wait_for(std::string_view name, Position p, std::chrono::milliseconds timeout) const;
  // Waits until every projection has reached the head as it is at the call. Returns whether
  // all did within `timeout` (false as soon as one fails).
  bool wait_idle(std::chrono::milliseconds timeout) const;

  // What the file records of every projection that ever ran on it (no code needed): for
  // tools. head/lag are filled; state is as last recorded. Throws StorageError.
  static std::vector<ProjectionStatus> recorded(const EventStore& store);

 private:
  EventStore& store_;
  EngineOptions options_;
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with the append hook
};

}  // namespace factum
