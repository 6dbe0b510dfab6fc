// One projection at work: its thread (catch-up, live batches, rebuilds) and, inline, its part
// of each append's transaction. See projection_engine.hpp for the guarantees.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "factum/projections/projection_engine.hpp"
#include "follower.hpp"
#include "projection_meta.hpp"

namespace factum {

class ProjectionEngine::Runner {
 public:
  Runner(EventStore& store, std::shared_ptr<Projection> projection, ProjectionOptions options,
         const EngineOptions& engine_options);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Records the projection in the file (building generation 1 or starting a rebuild when
  // needed), then starts the thread.
  // start(), stop() and restart() may be called from several threads at once: they take turns.
  void start();
  void stop() noexcept;
  // Never throws a storage error: the thread records the new state and reloads the
  // checkpoint itself, retrying with back-off.
  void restart();
  void request_rebuild();
  // The inline part, inside an append's transaction.
  void on_append(AppendTransaction& tx);
  // After any commit of this process (on_appended): a failure recorded inline by the append
  // that `committed` holds becomes the state status() and wait_for() see.
  void publish_inline_failure(std::span<const RecordedEvent> committed);

  const std::string& name() const noexcept { return name_; }
  ProjectionStatus status(Position head) const;
  // The serving checkpoint as the file has it, and whether the projection can still move.
  Position checkpoint() const;
  bool halted() const;
  // The serving read model was built by this code's version (false during a version rebuild).
  bool serving_current() const;

 private:
  struct Target {  // what a batch writes: the serving generation, or the one being rebuilt
    std::string checkpoint;  // the checkpoint's name
    detail::LogFollower* follower;
    bool rebuild;
  };

  void setup();
  void begin_rebuild(Sql& sql, detail::ProjectionRow& row);
  void run() noexcept;
  // Stops the thread; the caller holds control_mu_.
  void halt() noexcept;
  // After a thread error: reports it, then sleeps the back-off. Returns false when stopped.
  bool recover(std::exception_ptr error, detail::Backoff& backoff) noexcept;
  void report(std::exception_ptr error);
  // Takes the record and the checkpoints back from the file (after restart(), or after a storage
  // error that may have rolled back what a transaction had changed in memory).
  void resync();
  bool step();
  void take_rebuild_request();
  bool store_batch(const Target& target);
  bool external_batch();
  void apply_fast(ProjectionContext& ctx, std::span<const RecordedEvent> events);
  // Applies events one by one under savepoints, handling failures by policy. Returns the
  // checkpoint to save (the last event's position, or the one before a stopping failure).
  Position apply_careful(Sql* sql, ProjectionContext& ctx, std::span<const RecordedEvent> events,
                         Position end);
  bool apply_one(Sql* sql, ProjectionContext& ctx, const RecordedEvent& e);
  void record_failure(const RecordedEvent& e, const std::string& message);
  // Once the transaction holding a recorded stopping failure has committed: status() and
  // wait_for() see it.
  void publish_failure();
  enum class Resolution { none, holds, cleared };
  Resolution resolve_inline_failure(Sql& sql);
  void swap_in(Sql& sql, Position at);
  void report_progress(bool finished);
  void save_state();
  bool adopt_row(Sql& sql);
  void set_state(ProjectionState s);
  bool wants(const RecordedEvent& e) const;

  EventStore& store_;
  std::shared_ptr<Projection> projection_;
  ProjectionOptions options_;
  const EngineOptions& engine_options_;
  std::string name_;
  std::uint32_t version_;
  std::vector<std::string> types_;

  detail::LogFollower follower_;
  detail::LogFollower rebuild_follower_;
  std::unique_ptr<detail::Wakeup> wakeup_;
  std::mutex control_mu_;  // start, stop and restart take turns
  std::thread thread_;
  std::atomic<bool> resync_{false};  // the thread resyncs before its next step
  std::vector<RecordedEvent> batch_;

  // Written by the projection's thread or, inline, inside the writer: guarded by mu_.
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  detail::ProjectionRow row_;
  ProjectionState state_ = ProjectionState::stopped;
  bool serving_current_ = false;  // the serving generation was built by this code's version
  std::atomic<bool> rebuilding_{false};
  bool rebuild_requested_ = false;
  std::atomic<bool> active_{false};  // inline: the hook applies appends
  std::atomic<bool> failed_{false};
  // A failure recorded by an inline append, not reported yet: that append's first event.
  struct InlineFailure {
    Position first_position;
    EventId first_id;
  };
  std::optional<InlineFailure> inline_failure_;  // guarded by mu_

  // Rebuild progress.
  std::chrono::steady_clock::time_point rebuild_started_{};
  std::chrono::steady_clock::time_point last_report_{};
  Position rebuild_start_position_ = 0;
};

}  // namespace factum
