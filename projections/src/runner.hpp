// One projection at work: its thread (catch-up, live batches, rebuilds) and, inline, its part
// of each append's transaction. See projection_engine.hpp for the guarantees and
// docs/projections.md ("The runner's states") for the state machine: its two tables map onto
// the private members below row by row (the states: next_state, show_error, record_failed,
// enter_stopped; the events: add_turn, a batch, on_append, rebuild_turn, restart_turn, and
// another engine's change as open_turn reads it). runner.cpp holds the turns, the states, the
// events but the batch and the inline append, and the thread; runner_batch.cpp a batch (store
// and external targets); runner_inline.cpp an inline append.
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

// The message of `e` (what() of a std::exception), for status() and the file.
std::string describe_error(std::exception_ptr e);

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

  // One batch of a store target, from its read to what the thread does after its commit.
  struct Batch {
    bool rebuild = false;             // the generation being built, not the serving one
    LogFollower* follower = nullptr;  // follower_ or rebuild_follower_
    std::string checkpoint;           // the checkpoint's name
    Position begin = 0;               // where the read began
    Position read_end = 0;            // where the read (and the rest read in the lock) ended
    bool at_end = false;              // the read reached the end of the log
    Position head = 0;                // the head inside the write lock
    // What the write transaction decided (set again by each of its tries).
    Decision d;
    bool ran = false;               // the target was this code's to write
    std::optional<Position> moved;  // the checkpoint another transaction left, not `begin`
    Position end = 0;               // where the batch ends: its checkpoint
    bool swapped = false;           // a rebuild reached the head and swapped in
    bool idle = false;              // nothing more to do for this target now
  };

  // One batch of an external target, delivered before its transaction.
  struct Delivery {
    Position before = 0;      // the checkpoint it was delivered from
    Position end = 0;         // the checkpoint it leaves
    bool at_end = false;      // the read reached the end of the log
    ProjectionRow delivered;  // the row (version, generation) it was delivered for
    ProjectionRow row;        // the same with the batch's failures and skips
    ProjectionState next = ProjectionState::catching_up;
  };

  // Turns: inside a transaction, the file's row and a turn number (another engine's change is
  // whatever this row holds).
  Decision open_turn(Sql& sql) FACTUM_EXCLUDES(mu_);
  // Writes the row when the transaction changed it.
  static void save(Sql& sql, const Decision& d);
  // Once the transaction of `d` committed: status() shows it (unless a later transaction's
  // decision was shown already).
  void publish(const Decision& d) FACTUM_EXCLUDES(mu_);
  // Inline, after the outcome notice says committed: commits up to `last` are applied.
  static void note_inline(std::atomic<Position>& through, Position last) noexcept;

  // The states (docs/projections.md, "The runner's states", first table). catching_up,
  // running and rebuilding: what a batch that ended (caught up or not) leaves for `row`.
  ProjectionState next_state(const ProjectionRow& row, bool caught_up) const;
  // retrying or failed, shown at once after an error of the thread (unless failed already);
  // returns whether it was shown.
  bool show_error(ProjectionState state, const ProjectionFailure& failure) FACTUM_EXCLUDES(mu_);
  // failed, recorded in the file.
  void record_failed(const ProjectionFailure& failure) FACTUM_EXCLUDES(mu_);
  // stopped, once the thread ends (a failed projection stays failed).
  void enter_stopped() FACTUM_EXCLUDES(mu_);

  // The events (second table). add(): setup() runs add_turn and readies the followers.
  void setup() FACTUM_EXCLUDES(mu_);
  Decision add_turn(Sql& sql) FACTUM_EXCLUDES(mu_);
  void create_first_generation(Sql& sql, ProjectionRow& row);
  void drop_abandoned_rebuild(Sql& sql, ProjectionRow& row);
  // restart() and rebuild(), asked on any thread, taken by the projection's thread.
  void take_restart() FACTUM_EXCLUDES(mu_);
  Decision restart_turn(Sql& sql) FACTUM_EXCLUDES(mu_);
  void take_rebuild_request() FACTUM_EXCLUDES(mu_);
  Decision rebuild_turn(Sql& sql) FACTUM_EXCLUDES(mu_);
  void begin_rebuild(Sql& sql, ProjectionRow& row);
  void reset_external(Sql& sql, ProjectionRow& row);
  // Rebuild progress is timed from `from`, for `generation`.
  void time_rebuild(std::uint64_t generation, Position from);

  // The thread: rounds of step() until stopped; errors reported, retried or failed.
  void run() noexcept FACTUM_EXCLUDES(mu_);
  void halt() noexcept FACTUM_REQUIRES(control_mu_);
  bool recover(std::exception_ptr error, Backoff& backoff) noexcept FACTUM_EXCLUDES(mu_);
  void report(std::exception_ptr error) FACTUM_EXCLUDES(mu_);
  void call_on_error(std::exception_ptr error);
  bool step() FACTUM_EXCLUDES(mu_);
  void reload();
  bool failed_shown() const FACTUM_EXCLUDES(mu_);
  bool rebuild_shown() const FACTUM_EXCLUDES(mu_);

  // A batch of a store target (runner_batch.cpp): read, apply, checkpoint, next state.
  bool store_batch(bool rebuild) FACTUM_EXCLUDES(mu_);
  Batch read_batch(bool rebuild);
  bool read_events(LogFollower& follower, Position begin);
  bool idle_at_head(const Batch& b) const FACTUM_EXCLUDES(mu_);
  void write_batch(Batch& b) FACTUM_EXCLUDES(mu_);
  void batch_turn(Sql& sql, Batch& b, bool careful) FACTUM_EXCLUDES(mu_);
  bool another_engines_change(Sql& sql, Batch& b) const;
  void notice_rebuild(const ProjectionRow& row, Position saved);
  void drop_batch(Sql& sql, Batch& b, Position saved);
  Position apply_batch(Sql& sql, ProjectionContext& ctx, Batch& b,
                       std::span<const RecordedEvent> events, Position through, bool careful);
  bool finishes_in_lock(const Batch& b) const;
  void finish_in_lock(Sql& sql, ProjectionContext& ctx, Batch& b, bool careful);
  void read_rest(Batch& b, std::size_t limit);
  void end_batch(Sql& sql, Batch& b, Position saved);
  void follow_up(const Batch& b);
  void report_progress(bool finished);
  // A batch of an external target (runner_batch.cpp).
  bool external_batch() FACTUM_EXCLUDES(mu_);
  Delivery deliver() FACTUM_EXCLUDES(mu_);
  bool nothing_to_record(const Delivery& x) const FACTUM_EXCLUDES(mu_);
  bool external_turn(Sql& sql, const Delivery& x, Decision& d) FACTUM_EXCLUDES(mu_);

  // An inline append (runner_inline.cpp).
  bool is_live() const FACTUM_EXCLUDES(mu_);
  bool inline_applies(const ProjectionRow& row);
  bool inline_reaches(std::span<const RecordedEvent> events, Position saved);
  Position apply_inline(AppendTransaction& tx, ProjectionRow& row, Position saved);
  void record_inline(AppendTransaction& tx, Decision d, Position applied);

  // Applying events (runner_batch.cpp).
  void apply_fast(ProjectionContext& ctx, std::span<const RecordedEvent> events);
  // One by one, each under a savepoint (store target), failures recorded in `row` by policy.
  // Returns the checkpoint to save: `end`, or the position before a stopping failure.
  Position apply_careful(Sql* sql, ProjectionContext& ctx, std::span<const RecordedEvent> events,
                         Position end, ProjectionRow& row);
  void swap_in(Sql& sql, ProjectionRow& row, Position at);
  bool wants(const RecordedEvent& e) const;
  bool applies(const RecordedEvent& e) const;
  // Hands `e` to the projection: forget() for a factum.SubjectForgotten fact, then apply()
  // when its types (or its query) take it.
  void deliver(const RecordedEvent& e, ProjectionContext& ctx);
  bool external() const noexcept { return options_.target == ProjectionTarget::external; }
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
  const std::optional<Query> query_;  // Projection::query(): read and applied instead of types_

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
