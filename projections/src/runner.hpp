// One projection at work: its thread (catch-up, live batches, rebuilds) and, inline, its part
// of each append's transaction. See projection_engine.hpp for the guarantees and
// docs/projections.md ("The runner's states") for the state machine.
//
// The file is the state: every transaction (a batch on the thread, an inline append) starts
// from the projection's row as the file has it inside that transaction, decides, and writes the
// row back when it changed. Memory holds a copy for status(), published only once the
// transaction that wrote it has committed: a batch's after write_sql returns, an inline
// append's from the writer's outcome notice (AppendTransaction::on_outcome). A rolled-back
// transaction publishes nothing, so nothing has to be undone or re-read afterwards.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "factum/detail/mutex.hpp"
#include "factum/projections/projection_engine.hpp"
#include "follower.hpp"
#include "projection_meta.hpp"

namespace factum::detail {

class ProjectionRunner : public std::enable_shared_from_this<ProjectionRunner> {
 public:
  // Checks the name and the options. Throws InvalidArgument.
  ProjectionRunner(EventStore& store, std::shared_ptr<Projection> projection,
                   ProjectionOptions options, const EngineOptions& engine_options);
  ~ProjectionRunner();
  ProjectionRunner(const ProjectionRunner&) = delete;
  ProjectionRunner& operator=(const ProjectionRunner&) = delete;

  // Records the projection in the file (building generation 1 or starting a rebuild when
  // needed), then starts the thread; inline, waits until appends apply it.
  // start(), stop() and restart() may be called from several threads at once: they take turns.
  void start() FACTUM_EXCLUDES(control_mu_, mu_);
  void stop() noexcept FACTUM_EXCLUDES(control_mu_);
  // Never throws a storage error: the thread records the new state itself, retrying with
  // back-off.
  void restart() FACTUM_EXCLUDES(control_mu_, mu_);
  void request_rebuild() FACTUM_EXCLUDES(mu_);
  // The inline part, inside an append's transaction (on_appending).
  void on_append(AppendTransaction& tx) FACTUM_EXCLUDES(mu_);

  const std::string& name() const noexcept { return name_; }
  ProjectionStatus status(Position head) const FACTUM_EXCLUDES(mu_);
  // The serving checkpoint as the file has it, and whether the projection can still move.
  Position checkpoint() const;
  // Waits until this runner's own committed transactions put the serving checkpoint of this
  // code's version at `p` or beyond (returns true), it halts, or `until` passes (false). A hint
  // for wait_for, which reads the file to be sure: other engines' progress is not seen here.
  bool wait_committed(Position p, std::chrono::steady_clock::time_point until) const
      FACTUM_EXCLUDES(mu_);
  bool halted() const FACTUM_EXCLUDES(mu_);
  // The serving read model was built by this code's version (false during a version rebuild).
  bool serving_current() const FACTUM_EXCLUDES(mu_);

 private:
  // What a transaction decided, published once it committed.
  struct Decision {
    std::uint64_t turn = 0;  // orders publications as the writer ordered the transactions
    bool known = false;      // the file has a row for the projection
    ProjectionRow stored;    // the row as the file had it when the transaction began
    ProjectionRow row;       // as the transaction leaves it
    std::optional<ProjectionState> state;  // unset: keep the state shown
    std::optional<Position> checkpoint;    // the serving checkpoint it left (unset: unknown)
    bool live = false;                     // inline: appends apply the projection from now on
  };

  // Setup and the thread (the thread's own members are touched by it alone, or before it
  // starts).
  void setup() FACTUM_EXCLUDES(mu_);
  void begin_rebuild(Sql& sql, ProjectionRow& row);
  void run() noexcept FACTUM_EXCLUDES(mu_);
  void halt() noexcept FACTUM_REQUIRES(control_mu_);
  bool recover(std::exception_ptr error, Backoff& backoff) noexcept FACTUM_EXCLUDES(mu_);
  void report(std::exception_ptr error) FACTUM_EXCLUDES(mu_);
  bool step() FACTUM_EXCLUDES(mu_);
  void take_restart() FACTUM_EXCLUDES(mu_);
  void take_rebuild_request() FACTUM_EXCLUDES(mu_);
  bool store_batch(bool rebuild) FACTUM_EXCLUDES(mu_);
  bool external_batch() FACTUM_EXCLUDES(mu_);
  void report_progress(bool finished);

  // Inside a transaction: the file's row and a turn number.
  Decision open_turn(Sql& sql) FACTUM_EXCLUDES(mu_);
  // Writes the row when the transaction changed it.
  static void save(Sql& sql, const Decision& d);
  // Once the transaction of `d` committed: status() shows it (unless a later transaction's
  // decision was shown already).
  void publish(const Decision& d) FACTUM_EXCLUDES(mu_);
  // Inline, after the outcome notice says committed: commits up to `last` are applied.
  static void note_inline(std::atomic<Position>& through, Position last) noexcept;
  // The state the thread shows for `row` once its batch ended (caught up or not).
  ProjectionState next_state(const ProjectionRow& row, bool caught_up) const;

  // Applying events.
  void apply_fast(ProjectionContext& ctx, std::span<const RecordedEvent> events);
  // One by one, each under a savepoint (store target), failures recorded in `row` by policy.
  // Returns the checkpoint to save: `end`, or the position before a stopping failure.
  Position apply_careful(Sql* sql, ProjectionContext& ctx, std::span<const RecordedEvent> events,
                         Position end, ProjectionRow& row);
  void swap_in(Sql& sql, ProjectionRow& row, Position at);
  bool wants(const RecordedEvent& e) const;
  bool is_rebuilding(const ProjectionRow& row) const noexcept {
    return row.rebuild_generation != 0 && row.rebuild_version == version_;
  }

  // Constant after construction.
  EventStore& store_;
  std::shared_ptr<Projection> projection_;
  const ProjectionOptions options_;
  const EngineOptions& engine_options_;
  const std::string name_;
  const std::uint32_t version_;
  const std::vector<std::string> types_;

  // The thread's own.
  LogFollower follower_;
  LogFollower rebuild_follower_;
  std::vector<RecordedEvent> batch_;
  bool reload_ = true;  // the followers start afresh (thread start, after an error)
  std::chrono::steady_clock::time_point rebuild_started_{};
  std::chrono::steady_clock::time_point last_report_{};
  Position rebuild_start_position_ = 0;
  std::uint64_t progress_generation_ = 0;  // the rebuild the progress figures are about

  // The last position inline appends applied, as committed (their outcome notices set it): the
  // serving checkpoint is at least there. Commits of this process up to it need no batch, so
  // they do not wake the thread; a batch starts reading from it when its follower is behind.
  const std::shared_ptr<std::atomic<Position>> inline_through_;
  const std::unique_ptr<Wakeup> wakeup_;  // thread-safe (follower.hpp)
  Mutex control_mu_;                      // start, stop and restart take turns
  std::thread thread_ FACTUM_GUARDED_BY(control_mu_);

  // What status() shows, written by the thread and, inline, by appending threads.
  mutable Mutex mu_;
  mutable CondVar changed_;
  ProjectionState state_ FACTUM_GUARDED_BY(mu_) = ProjectionState::stopped;
  ProjectionRow row_ FACTUM_GUARDED_BY(mu_);        // as last committed (the error: as last seen)
  std::uint64_t turns_ FACTUM_GUARDED_BY(mu_) = 0;  // transactions opened
  std::uint64_t row_turn_ FACTUM_GUARDED_BY(mu_) = 0;    // the turn row_ comes from
  std::uint64_t state_turn_ FACTUM_GUARDED_BY(mu_) = 0;  // the turn state_ comes from
  Position checkpoint_ FACTUM_GUARDED_BY(mu_) = 0;  // as this runner's last committed turn left it
  std::uint64_t checkpoint_turn_ FACTUM_GUARDED_BY(mu_) = 0;  // the turn checkpoint_ comes from
  bool live_ FACTUM_GUARDED_BY(mu_) = false;                  // inline: appends apply it
  // The storage error being retried, until a committed turn has stored it in the row.
  std::optional<ProjectionFailure> retry_error_ FACTUM_GUARDED_BY(mu_);
  bool rebuild_requested_ FACTUM_GUARDED_BY(mu_) = false;
  bool restart_requested_ FACTUM_GUARDED_BY(mu_) = false;
};

}  // namespace factum::detail
