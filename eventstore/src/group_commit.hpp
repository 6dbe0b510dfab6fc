// Group commit, shared by the SQLite and the PostgreSQL writer, LevelDB-style: callers queue up;
// the caller at the front becomes the leader, commits the queued appends together in one
// transaction (one fsync, or one round trip to the server), wakes their callers and hands the
// lead to the next caller in the queue. No extra thread: the leader's own thread does the work.
//
// Internal. Thread-safety: enqueue() may be called from any thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "factum/detail/mutex.hpp"

namespace factum::detail {

// A caller's place in the queue; each writer's pending append derives from it.
struct GroupCaller {
  enum class Turn { wait, lead, done };
  bool alone = false;  // commits in a turn of its own (a write_sql), never grouped
  // Whose turn: written by the leader that commits this caller or passes the lead to it, once,
  // before it posts `woken`; read by the caller after woken.wait().
  Turn turn = Turn::wait;
  Signal woken;
};

template <class P>
class GroupCommit {
  static_assert(std::is_base_of_v<GroupCaller, P>);

 public:
  explicit GroupCommit(std::size_t max_group) : max_group_(std::max<std::size_t>(1, max_group)) {}

  // Queues `self` and returns once its group was committed (by self or another leader). The
  // leader runs the group on its own thread, with no lock held: `run_alone(self)` when
  // self.alone, else `commit(group)` with up to max_group queued callers that are not alone, in
  // queue order, self first. Neither may throw: they record each caller's outcome in the caller.
  //
  // Each caller sleeps on its own mutex and condition variable, and the leader wakes them after
  // releasing the queue's mutex: a woken caller does not run into the queue's lock (held while
  // the leader wakes the others) and go back to sleep on it. The leader touches a caller only
  // under that caller's mutex, so its owner returns (and destroys it) only after the last touch.
  template <class RunAlone, class Commit>
  void enqueue(P& self, const RunAlone& run_alone, const Commit& commit) FACTUM_EXCLUDES(mu_) {
    bool lead = false;
    {
      MutexLock lock(mu_);
      queue_.push_back(&self);
      lead = !leading_;
      leading_ = true;
      // A leader waiting for its group to fill (gather) is woken once enough callers queued.
      if (!lead && queue_.size() >= gather_until_) gather_cv_.notify_one();
    }
    if (!lead) {
      self.woken.wait();
      lead = self.turn == GroupCaller::Turn::lead;
    }
    if (lead) run_turn(self, run_alone, commit);
  }

 private:
  // The leader's turn: gathers a group, commits it, hands each caller its outcome, and passes
  // the lead to the next caller in the queue.
  template <class RunAlone, class Commit>
  void run_turn(P& self, const RunAlone& run_alone, const Commit& commit) FACTUM_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (!self.alone) gather(lock);
    std::size_t n = 1;
    if (!self.alone) {
      while (n < queue_.size() && n < max_group_ && !queue_[n]->alone) ++n;
    }
    // Only the leader uses group_, and only one caller leads at a time (leading_).
    group_.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    if (self.alone) {
      run_alone(self);
    } else {
      commit(std::span<P* const>(group_));
    }
    const auto took = std::chrono::steady_clock::now() - start;
    lock.lock();
    if (!self.alone) {
      last_group_ = n;
      last_commit_ = took;
    }
    for (std::size_t i = 0; i < n; ++i) queue_.pop_front();
    lock.unlock();
    for (P* p : group_) {
      if (p == &self) continue;
      p->turn = GroupCaller::Turn::done;
      p->woken.post();  // p's owner may return (and destroy p) from here on
    }
    // Hand the lead on (still leading_: no caller queued meanwhile has taken it), or give it up.
    lock.lock();
    P* next = queue_.empty() ? nullptr : queue_.front();
    leading_ = next != nullptr;
    lock.unlock();
    if (next != nullptr) {
      next->turn = GroupCaller::Turn::lead;
      next->woken.post();
    }
  }

  // The bounded wait (PostgreSQL's commit_delay, made adaptive). The callers of the last group
  // are woken together when it commits; they come back one by one, and the first one would lead
  // a group of one or two while the rest queue behind a whole commit (an fsync, a round trip):
  // groups alternate between tiny and large. So a leader whose queue is shorter than the last
  // group waits, for at most half the time the last commit took (and 10 ms), until as many
  // callers queued as were in the last group. A lone writer (last group of 1) never waits; when
  // callers stop coming, one wait runs out and the next group's size sets the next goal.
  void gather(MutexLock& lock) FACTUM_REQUIRES(mu_) {
    const std::size_t want = std::min(last_group_, max_group_);
    if (queue_.size() >= want) return;
    const auto budget = std::min<std::chrono::steady_clock::duration>(
        last_commit_ / 2, std::chrono::milliseconds(10));
    const auto deadline = std::chrono::steady_clock::now() + budget;
    gather_until_ = want;
    while (queue_.size() < want) {
      if (!gather_cv_.wait_until(lock, deadline) && std::chrono::steady_clock::now() >= deadline) {
        break;
      }
    }
    gather_until_ = std::numeric_limits<std::size_t>::max();
  }

  const std::size_t max_group_;
  Mutex mu_;
  std::deque<P*> queue_ FACTUM_GUARDED_BY(mu_);
  // Pacing (see gather()): the size and duration of the last group's commit, and the queue
  // length at which a gathering leader is woken (max: none is gathering).
  std::size_t last_group_ FACTUM_GUARDED_BY(mu_) = 1;
  std::chrono::steady_clock::duration last_commit_ FACTUM_GUARDED_BY(mu_){};
  std::size_t gather_until_ FACTUM_GUARDED_BY(mu_) = std::numeric_limits<std::size_t>::max();
  CondVar gather_cv_;
  bool leading_ FACTUM_GUARDED_BY(mu_) = false;  // a caller leads (from enqueue to hand-off)
  std::vector<P*> group_;                        // the leader's group (only the leader uses it)
};

}  // namespace factum::detail
