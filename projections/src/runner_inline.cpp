// An inline append (docs/projections.md, "The runner's states", the event "an inline append"):
// inside the writer, in the append's transaction, the gap since the checkpoint and the append's
// events applied. A failure or skip it records is published by the writer's outcome notice once
// the append has committed; a rolled-back append publishes nothing.
#include <algorithm>

#include "runner.hpp"

namespace factum::detail {

void ProjectionRunner::on_append(AppendTransaction& tx) {
  if (!is_live()) return;
  Decision d = open_turn(tx.sql());
  if (!inline_applies(d.row)) return;
  const Position saved = load_position(tx.sql(), name_);
  if (!inline_reaches(tx.events(), saved)) return;
  const Position applied = apply_inline(tx, d.row, saved);
  record_inline(tx, std::move(d), applied);
}

bool ProjectionRunner::is_live() const {
  MutexLock lock(mu_);
  return live_;
}

// Another engine's change: a failed projection is skipped, another version left to the thread.
bool ProjectionRunner::inline_applies(const ProjectionRow& row) {
  if (row.state == ProjectionState::failed) return false;
  if (row.version == version_) return true;
  wakeup_->notify();  // another engine moved to another version: the thread looks
  return false;
}

// Whether the append's events are past the checkpoint, after a gap this append may fill.
bool ProjectionRunner::inline_reaches(std::span<const RecordedEvent> events, Position saved) {
  if (saved >= events.back().position) return false;
  if (events.front().position - saved - 1 <= options_.batch_size) return true;
  wakeup_->notify();  // a long gap (another process's appends): the thread catches up
  return false;
}

// The gap (read inside the append's transaction) and the append's events, in position order.
// Returns the checkpoint to save.
Position ProjectionRunner::apply_inline(AppendTransaction& tx, ProjectionRow& row, Position saved) {
  Sql& sql = tx.sql();
  const std::span<const RecordedEvent> events = tx.events();
  const Position first = events.front().position;
  const Position last = events.back().position;
  ProjectionContext ctx(&sql, name_, row.generation);
  if (saved + 1 == first &&
      std::all_of(events.begin(), events.end(), [&](const RecordedEvent& e) { return wants(e); })) {
    return apply_careful(&sql, ctx, events, last, row);  // the common case: no copies
  }
  std::vector<RecordedEvent> todo;
  if (saved + 1 < first) {
    for (RecordedEvent& e : tx.read_log(saved + 1, options_.batch_size)) {
      if (wants(e)) todo.push_back(std::move(e));
    }
  }
  for (const RecordedEvent& e : events) {
    if (e.position > saved && wants(e)) todo.push_back(e);
  }
  return apply_careful(&sql, ctx, todo, last, row);
}

// The checkpoint and the row in the append's transaction; shown once the append committed,
// which also records how far inline appends got.
void ProjectionRunner::record_inline(AppendTransaction& tx, Decision d, Position applied) {
  save_position(tx.sql(), name_, applied);
  d.checkpoint = applied;
  save(tx.sql(), d);
  if (d.row.state == ProjectionState::failed) d.state = ProjectionState::failed;
  tx.on_outcome([self = shared_from_this(), d = std::move(d), applied](AppendOutcome outcome) {
    if (outcome != AppendOutcome::committed) return;
    note_inline(*self->inline_through_, applied);
    self->publish(d);
  });
}

}  // namespace factum::detail
