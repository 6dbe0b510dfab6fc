// GroupCommit (eventstore/src/group_commit.hpp), the queue that both writers put their appends
// through: every caller is committed exactly once, before it returns; groups keep each thread's
// order and the size limit; a caller that runs alone is never grouped. Each caller lives on its
// thread's stack and is destroyed as soon as enqueue returns, while the leader that woke it may
// still be returning from the wake-up: under ASan and TSan (label concurrency) this checks that
// a leader no longer touches a caller once it has woken it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "group_commit.hpp"

namespace {

using factum::detail::GroupCommit;

struct Caller : factum::detail::GroupCaller {
  int thread = 0;
  int seq = 0;            // the thread's n-th call
  int commits = 0;        // times a group commit or a run alone included this caller
  std::size_t group = 0;  // the size of the group that committed it (0: ran alone)
};

struct Params {
  int threads = 8;
  int calls = 300;
  std::size_t max_group = 4;
  int alone_every = 0;  // every n-th call of a thread runs alone (0: none)
  std::chrono::microseconds commit_time{0};
};

struct Outcome {
  std::vector<std::vector<std::pair<int, int>>> groups;  // (thread, seq) of each group, in order
  std::size_t alone_runs = 0;
  int failures = 0;  // callers whose own view was wrong when enqueue returned
};

Outcome run(const Params& p) {
  GroupCommit<Caller> gc(p.max_group);
  Outcome out;
  std::mutex mu;                // guards out (commits run one at a time; this is for TSan's sake)
  std::atomic<int> leaders{0};  // callers inside a commit or a run alone at once
  std::atomic<int> failures{0};
  const auto enter = [&] {
    if (leaders.fetch_add(1) != 0) failures.fetch_add(1);  // two leaders at once
    if (p.commit_time.count() > 0) std::this_thread::sleep_for(p.commit_time);
  };
  const auto run_alone = [&](Caller& c) {
    enter();
    ++c.commits;
    c.group = 0;
    {
      std::lock_guard lock(mu);
      ++out.alone_runs;
      out.groups.push_back({{c.thread, c.seq}});
    }
    leaders.fetch_sub(1);
  };
  const auto commit = [&](std::span<Caller* const> group) {
    enter();
    std::vector<std::pair<int, int>> members;
    for (Caller* c : group) {
      ++c->commits;
      c->group = group.size();
      members.emplace_back(c->thread, c->seq);
    }
    {
      std::lock_guard lock(mu);
      out.groups.push_back(std::move(members));
    }
    leaders.fetch_sub(1);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < p.threads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < p.calls; ++i) {
        Caller c;  // destroyed as soon as enqueue returns
        c.thread = t;
        c.seq = i;
        c.alone = p.alone_every > 0 && i % p.alone_every == 0;
        gc.enqueue(c, run_alone, commit);
        const bool right =
            c.commits == 1 && (c.alone ? c.group == 0 : c.group >= 1) && c.group <= p.max_group;
        if (!right) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  out.failures = failures.load();
  return out;
}

// Every (thread, seq) committed once, and each thread's calls in the order it made them.
void check_each_once_in_order(const Params& p, const Outcome& out) {
  std::map<int, int> next;  // thread -> the seq expected next
  std::size_t total = 0;
  for (const auto& g : out.groups) {
    REQUIRE(!g.empty());
    CHECK(g.size() <= p.max_group);
    for (const auto& [thread, seq] : g) {
      CHECK(seq == next[thread]);
      next[thread] = seq + 1;
      ++total;
    }
  }
  CHECK(total == static_cast<std::size_t>(p.threads) * static_cast<std::size_t>(p.calls));
  for (int t = 0; t < p.threads; ++t) CHECK(next[t] == p.calls);
}

}  // namespace

TEST_CASE("group commit commits every caller once, before it returns, in each thread's order") {
  const Params p{.threads = 8, .calls = 400, .max_group = 4};
  const Outcome out = run(p);
  CHECK(out.failures == 0);
  check_each_once_in_order(p, out);
  CHECK(out.alone_runs == 0);
}

TEST_CASE("group commit groups callers that queue behind a commit, up to its limit") {
  // Each commit takes 2 ms: the other callers queue up meanwhile.
  const Params p{
      .threads = 6, .calls = 40, .max_group = 3, .commit_time = std::chrono::milliseconds(2)};
  const Outcome out = run(p);
  CHECK(out.failures == 0);
  check_each_once_in_order(p, out);
  std::size_t largest = 0;
  for (const auto& g : out.groups) largest = std::max(largest, g.size());
  CHECK(largest == p.max_group);
  // Fewer commits than callers: grouping happened (6 threads behind 2 ms commits).
  CHECK(out.groups.size() < static_cast<std::size_t>(p.threads * p.calls));
}

TEST_CASE("group commit runs a caller marked alone in a turn of its own") {
  const Params p{.threads = 6,
                 .calls = 200,
                 .max_group = 8,
                 .alone_every = 5,
                 .commit_time = std::chrono::microseconds(100)};
  const Outcome out = run(p);
  CHECK(out.failures == 0);
  check_each_once_in_order(p, out);
  CHECK(out.alone_runs == static_cast<std::size_t>(p.threads * (p.calls / p.alone_every)));
}

TEST_CASE("group commit with a group size of 1 commits callers one by one") {
  const Params p{.threads = 4, .calls = 200, .max_group = 1};
  const Outcome out = run(p);
  CHECK(out.failures == 0);
  check_each_once_in_order(p, out);
  CHECK(out.groups.size() == static_cast<std::size_t>(p.threads * p.calls));
}
