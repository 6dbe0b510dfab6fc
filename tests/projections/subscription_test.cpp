// Catch-up subscriptions: the history from a position or a checkpoint, then live events, with no
// seam between the two; wake-ups from this process and (by polling) from others; a slow
// subscriber's bounded batches; stopping in every way; a failing handler; bad options.
// Handlers run on the subscription's thread and only record; assertions run on the test's
// thread, after stop() (which joins) or under the recorder's lock. These cases also run under
// ThreadSanitizer (label "concurrency"); some spawn support/writer_child (label "process").
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

using namespace factum;
using factum::test::slurp;
using namespace std::chrono_literals;
using factum::test::eventually;
using factum::test::kWait;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

using State = Subscription::State;

// What a handler saw, in order. add() runs on the subscription's thread; the readers take the
// same lock, so they may run while the subscription does.
class Recorder {
 public:
  void add(const RecordedEvent& e) {
    std::lock_guard lock(mu_);
    events_.push_back(e);
  }
  Subscription::Handler handler() {
    return [this](const RecordedEvent& e) { add(e); };
  }
  std::vector<RecordedEvent> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::vector<Position> positions() const {
    std::lock_guard lock(mu_);
    std::vector<Position> out;
    for (const RecordedEvent& e : events_) out.push_back(e.position);
    return out;
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return events_.size();
  }

 private:
  mutable std::mutex mu_;
  std::vector<RecordedEvent> events_;
};

// first, first + 1, ..., last (empty when last < first).
std::vector<Position> positions_from_to(Position first, Position last) {
  std::vector<Position> out;
  for (Position p = first; p <= last; ++p) out.push_back(p);
  return out;
}

std::vector<Position> positions_of(const std::vector<RecordedEvent>& events) {
  std::vector<Position> out;
  for (const RecordedEvent& e : events) out.push_back(e.position);
  return out;
}

bool is_live(const Subscription& sub) {
  return eventually([&] { return sub.state() == State::live; });
}

// Opened once by the test's thread; handlers wait on it before they touch the object that
// holds their own subscription (the subscription's thread may start before it is stored).
class Gate {
 public:
  void open() { promise_.set_value(); }
  void wait() const { future_.wait(); }

 private:
  std::promise<void> promise_;
  std::shared_future<void> future_ = promise_.get_future().share();
};

// Fulfils a promise when destroyed: captured by a handler, it tells when the subscription's
// state (and with it the handler) is gone.
struct OnDestroy {
  explicit OnDestroy(std::promise<void>& p) : promise(p) {}
  ~OnDestroy() { promise.set_value(); }
  std::promise<void>& promise;
};

// Appends `n` single events to <category>-0 .. <category>-(streams-1) in turn, of `type`.
void append_spread(EventStore& store, int n, const std::string& category = "s", int streams = 3,
                   const std::string& type = "test.Happened") {
  for (int i = 0; i < n; ++i) {
    store.append(category + "-" + std::to_string(i % streams), ExpectedVersion::any(),
                 make_event(type, std::to_string(i)));
  }
}

// ---- child processes (support/writer_child.cpp, race mode) --------------------------------

struct Child {
  pid_t pid = -1;
  std::filesystem::path out;
  std::filesystem::path err;
};

// A pipe whose write end the children do not inherit: closing it starts them all at once.
struct StartSignal {
  StartSignal() { REQUIRE(::pipe2(fds, O_CLOEXEC) == 0); }
  ~StartSignal() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  void fire() {
    ::close(fds[1]);
    fds[1] = -1;
  }
  int fds[2] = {-1, -1};
};

// Starts `writer_child race <path> <writer> <count> <streams>`; it appends once `start` fires.
Child spawn_race_writer(const TempDir& dir, const std::filesystem::path& path, int writer,
                        int count, int streams, const StartSignal& start) {
  const std::string tag = std::to_string(writer);
  std::vector<std::string> args{FACTUM_WRITER_CHILD,   "race",
                                path.string(),         tag,
                                std::to_string(count), std::to_string(streams)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Child child{-1, dir.file("out-" + tag), dir.file("err-" + tag)};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, start.fds[0], STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, child.out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, child.err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE_MESSAGE(rc == 0, "posix_spawn failed: ", rc);
  return child;
}

// Waits for the child to exit successfully (killing it after a minute).
void require_clean_exit(const Child& child) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  int status = 0;
  while (::waitpid(child.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, &status, 0);
      FAIL("writer_child did not finish within a minute");
    }
    std::this_thread::sleep_for(5ms);
  }
  INFO("writer_child stderr: ", slurp(child.err));
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

}  // namespace

namespace doctest {
// Shows position lists in failure messages (the first 40 and the length).
template <>
struct StringMaker<std::vector<factum::Position>> {
  static String convert(const std::vector<factum::Position>& v) {
    std::ostringstream s;
    s << "[" << v.size() << " positions:";
    for (std::size_t i = 0; i < v.size() && i < 40; ++i) s << ' ' << v[i];
    if (v.size() > 40) s << " ...";
    s << "]";
    return String(s.str().c_str());
  }
};
}  // namespace doctest

// ---- what is delivered ------------------------------------------------------------------------

TEST_CASE("a subscription to all delivers the history, then live events, each once in order") {
  TempStore t;
  append_spread(t.store, 25);
  Recorder seen;
  Subscription sub(t.store, {.batch_size = 4, .poll_interval = 0ms}, seen.handler());
  REQUIRE(sub.wait_for(25, kWait));
  CHECK(is_live(sub));
  append_spread(t.store, 10);
  t.store.append("s-9", ExpectedVersion::any(), make_events(5));
  REQUIRE(sub.wait_for(40, kWait));
  sub.stop();
  CHECK(sub.state() == State::stopped);
  CHECK(sub.position() == 40);
  CHECK(seen.positions() == positions_from_to(1, 40));
  CHECK(seen.events() == t.store.read_all().to_vector());
  CHECK(sub.max_held() <= 4);
}

TEST_CASE("a category subscription delivers that category's events only, history then live") {
  TempStore t;
  const std::vector<std::string> streams{"account-1", "order-1", "account-2", "orders-3"};
  const auto append_round = [&](int n) {
    for (int i = 0; i < n; ++i)
      t.store.append(streams[i % 4], ExpectedVersion::any(), make_event());
  };
  append_round(20);  // the last is orders-3: the category's last event is not the head
  Recorder seen;
  Subscription sub(
      t.store,
      {.filter = SubscriptionFilter::category("account"), .batch_size = 3, .poll_interval = 0ms},
      seen.handler());
  const auto last_account = [&] { return t.store.read_category("account").to_vector().back(); };
  REQUIRE(sub.wait_for(last_account().position, kWait));
  append_round(19);  // the last is account-2
  REQUIRE(t.store.head_position() == last_account().position);
  REQUIRE(sub.wait_for(t.store.head_position(), kWait));
  sub.stop();
  const auto expected = t.store.read_category("account").to_vector();
  CHECK(expected.size() == 20);
  CHECK(seen.positions() == positions_of(expected));
  for (const RecordedEvent& e : seen.events()) CHECK(e.category() == "account");
}

TEST_CASE("a stream subscription delivers that stream's events only, history then live") {
  TempStore t;
  append_spread(t.store, 30, "s", 3);  // s-0 holds 1, 4, 7, ...
  Recorder seen;
  Subscription sub(
      t.store, {.filter = SubscriptionFilter::stream("s-1"), .batch_size = 4, .poll_interval = 0ms},
      seen.handler());
  REQUIRE(sub.wait_for(29, kWait));
  append_spread(t.store, 30, "s", 3);
  REQUIRE(sub.wait_for(59, kWait));
  sub.stop();
  const auto expected = t.store.read_stream("s-1").to_vector();
  REQUIRE(expected.size() == 20);
  CHECK(seen.positions() == positions_of(expected));
  StreamVersion version = 0;
  for (const RecordedEvent& e : seen.events()) {
    CHECK(e.stream_id == "s-1");
    CHECK(e.stream_version == ++version);
  }
}

TEST_CASE("with_types delivers only the named event types and still moves past the others") {
  TempStore t;
  const std::vector<std::string> types{"a.Opened", "a.Noted", "a.Closed"};
  const auto append_typed = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const std::string category = i % 2 == 0 ? "account" : "order";
      t.store.append(category + "-1", ExpectedVersion::any(), make_event(types[i % 3]));
    }
  };
  append_typed(30);
  Recorder all_seen;
  Recorder category_seen;
  Subscription all(t.store,
                   {.filter = SubscriptionFilter::all().with_types({"a.Opened", "a.Closed"}),
                    .batch_size = 2,
                    .poll_interval = 0ms},
                   all_seen.handler());
  Subscription account(t.store,
                       {.filter = SubscriptionFilter::category("account").with_types({"a.Noted"}),
                        .poll_interval = 0ms},
                       category_seen.handler());
  append_typed(31);  // ends with a.Opened of account-1 (position 61)
  REQUIRE(all.wait_for(61, kWait));
  REQUIRE(account.wait_for(61, kWait));
  t.store.append("order-1", ExpectedVersion::any(), make_event("a.Noted"));
  REQUIRE(all.wait_for(62, kWait));  // a non-matching head is passed over too
  all.stop();
  account.stop();
  std::vector<Position> want_all;
  std::vector<Position> want_account;
  for (const RecordedEvent& e : t.store.read_all().to_vector()) {
    if (e.type != "a.Noted") want_all.push_back(e.position);
    if (e.type == "a.Noted" && e.category() == "account") want_account.push_back(e.position);
  }
  CHECK(all_seen.positions() == want_all);
  CHECK(category_seen.positions() == want_account);
  CHECK_FALSE(want_account.empty());
}

TEST_CASE("a subscription from position k delivers the events after k only") {
  TempStore t;
  append_spread(t.store, 20);
  Recorder seen;
  Subscription sub(t.store, {.from = 12, .batch_size = 5, .poll_interval = 0ms}, seen.handler());
  REQUIRE(sub.wait_for(20, kWait));
  append_spread(t.store, 5);
  REQUIRE(sub.wait_for(25, kWait));
  sub.stop();
  CHECK(seen.positions() == positions_from_to(13, 25));
}

TEST_CASE("a subscription with a saved checkpoint resumes after it and saves its progress") {
  TempStore t;
  append_spread(t.store, 20);
  CheckpointStore checkpoints(t.store);
  checkpoints.save("reader", 7);
  const SubscriptionOptions options{
      .from = 2, .checkpoint = "reader", .batch_size = 5, .poll_interval = 0ms};  // from: ignored
  Recorder first;
  {
    Subscription sub(t.store, options, first.handler());
    REQUIRE(sub.wait_for(20, kWait));
    append_spread(t.store, 5);
    REQUIRE(sub.wait_for(25, kWait));
  }
  CHECK(first.positions() == positions_from_to(8, 25));
  CHECK(checkpoints.load("reader") == 25);

  Recorder second;  // the next run starts after the checkpoint: nothing old again
  Subscription sub(t.store, options, second.handler());
  append_spread(t.store, 3);
  REQUIRE(sub.wait_for(28, kWait));
  sub.stop();
  CHECK(second.positions() == positions_from_to(26, 28));
  CHECK(checkpoints.load("reader") == 28);
}

TEST_CASE("a checkpoint never saved starts after `from` and is saved as the subscription moves") {
  TempStore t;
  append_spread(t.store, 10);
  Recorder seen;
  Subscription sub(t.store, {.from = 4, .checkpoint = "fresh", .poll_interval = 0ms},
                   seen.handler());
  REQUIRE(sub.wait_for(10, kWait));
  sub.stop();
  CHECK(seen.positions() == positions_from_to(5, 10));
  CHECK(CheckpointStore(t.store).load("fresh") == 10);
}

// ---- the switch from history to live under concurrent appends --------------------------------

namespace {

// One round on `store` (shared by the rounds of a case; a fresh file per round costs more than
// the round): `writers` threads append `per_writer` single events each; once `start_after` of
// them are in, a subscription starts from where the round began (the round's events are then
// its whole history), or from the head at that moment (mid-stream). When the writers are done
// it must have delivered exactly the positions after its start, once each, in order.
void switch_race_round(EventStore& store, int round, int writers, int per_writer, int start_after,
                       bool from_head) {
  CAPTURE(round);
  const Position head_before = store.head_position();
  std::atomic<int> appended{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&store, &appended, w, per_writer] {
      for (int i = 0; i < per_writer; ++i) {
        store.append("w" + std::to_string(w) + "-" + std::to_string(i % 2), ExpectedVersion::any(),
                     make_event());
        ++appended;
      }
    });
  }
  while (appended.load() < start_after) std::this_thread::yield();
  // Polling off in even rounds: a lost in-process wake-up is then not covered up by a poll.
  const auto poll = round % 2 == 0 ? 0ms : 5ms;
  const Position from = from_head ? store.head_position() : head_before;
  Recorder seen;
  Subscription sub(store, {.from = from, .batch_size = 7, .poll_interval = poll}, seen.handler());
  for (std::thread& th : threads) th.join();
  const Position head = store.head_position();
  REQUIRE(head == head_before + static_cast<Position>(writers * per_writer));
  REQUIRE(sub.wait_for(head, kWait));
  sub.stop();
  REQUIRE(seen.positions() == positions_from_to(from + 1, head));
}

// Rounds per case: fewer on PostgreSQL, where each append is round trips to the server (16
// still cover 2, 3 and 4 writers, polling on and off, and start points across the round).
int switch_rounds() { return factum::test::testing_postgres() ? 16 : 50; }

}  // namespace

TEST_CASE("a subscription started while other threads append delivers its history and all after") {
  TempStore t;
  for (int round = 0; round < switch_rounds(); ++round) {
    const int writers = 2 + round % 3;
    switch_race_round(t.store, round, writers, 20, (round * 7) % 40, false);
  }
}

TEST_CASE("a subscription started mid-stream from k while others append delivers k+1..head") {
  TempStore t;
  for (int round = 0; round < switch_rounds(); ++round) {
    const int writers = 2 + round % 3;
    switch_race_round(t.store, round, writers, 20, 1 + (round * 11) % 40, true);
  }
}

TEST_CASE("an append in flight while a subscription starts is delivered when it commits") {
  // The append is held inside its transaction (by an on_appending slot) while the subscription
  // starts, reads the history without it and goes live; then it commits. No polling: only
  // this process's notification of that commit can wake the subscription.
  TempStore t;
  append_spread(t.store, 3);
  std::promise<void> in_flight;
  Gate release;
  boost::signals2::scoped_connection hold = t.store.on_appending().connect([&](AppendTransaction&) {
    in_flight.set_value();
    release.wait();
  });
  std::thread writer([&] { t.store.append("late-1", ExpectedVersion::any(), make_event()); });
  in_flight.get_future().wait();
  Recorder seen;
  Subscription sub(t.store, {.poll_interval = 0ms}, seen.handler());
  const bool live = is_live(sub);
  release.open();
  writer.join();
  REQUIRE(live);
  REQUIRE(t.store.head_position() == 4);
  CHECK(sub.wait_for(4, kWait));
  sub.stop();
  CHECK(seen.positions() == positions_from_to(1, 4));
}

// ---- wake-ups from other connections and processes --------------------------------------------

TEST_CASE("events appended by other processes reach a polling subscription, each once in order") {
  TempDir dir;
  const auto path = test::temp_store_location(dir);
  EventStore store = EventStore::open(path, TempStore::fast_options());
  Recorder seen;
  Subscription sub(store, {.batch_size = 16, .poll_interval = 20ms}, seen.handler());
  StartSignal start;
  const Child a = spawn_race_writer(dir, path, 0, 150, 3, start);
  const Child b = spawn_race_writer(dir, path, 1, 150, 3, start);
  start.fire();
  require_clean_exit(a);
  require_clean_exit(b);
  REQUIRE(store.head_position() == 300);
  REQUIRE(sub.wait_for(300, kWait));
  sub.stop();
  CHECK(seen.positions() == positions_from_to(1, 300));
  CHECK(seen.events() == store.read_all().to_vector());
}

TEST_CASE("a commit by another connection just after the catch-up read is seen at the next poll") {
  // Another EventStore object on the file has a connection of its own and does not fire this
  // store's on_appended: for the subscription it is another process. It commits from inside
  // the handler, after the subscription's read of the history has ended and before its first
  // poll of PRAGMA data_version (on PostgreSQL, of its NOTIFY channel): the first poll must not
  // take that commit as its baseline.
  TempDir dir;
  const auto path = test::temp_store_location(dir);
  EventStore store = EventStore::open(path, TempStore::fast_options());
  EventStore other = EventStore::open(path, TempStore::fast_options());
  store.append("s-1", ExpectedVersion::any(), make_event());
  Recorder seen;
  Subscription sub(store, {.poll_interval = 20ms}, [&](const RecordedEvent& e) {
    seen.add(e);
    if (e.position == 1) other.append("s-2", ExpectedVersion::any(), make_event());
  });
  REQUIRE(sub.wait_for(2, kWait));
  other.append("s-2", ExpectedVersion::any(), make_event());
  REQUIRE(sub.wait_for(3, kWait));
  sub.stop();
  CHECK(seen.positions() == positions_from_to(1, 3));
}

TEST_CASE("without polling, another process's commits are read at this process's next append") {
  TempDir dir;
  const auto path = test::temp_store_location(dir);
  EventStore store = EventStore::open(path, TempStore::fast_options());
  Recorder seen;
  Subscription sub(store, {.poll_interval = 0ms}, seen.handler());
  REQUIRE(is_live(sub));  // its read of the (empty) history is over before the child writes
  StartSignal start;
  const Child child = spawn_race_writer(dir, path, 0, 5, 2, start);
  start.fire();
  require_clean_exit(child);
  REQUIRE(store.head_position() == 5);
  // Nothing has woken it: with no poll and no append here it cannot know of those commits.
  // (A negative check: it cannot turn true by chance, whatever the timing.)
  CHECK_FALSE(sub.wait_for(1, 200ms));
  CHECK(seen.size() == 0);
  store.append("local-1", ExpectedVersion::any(), make_event());
  REQUIRE(sub.wait_for(6, kWait));
  sub.stop();
  CHECK(seen.positions() == positions_from_to(1, 6));
}

// ---- a slow subscriber ------------------------------------------------------------------------

TEST_CASE("a slow subscriber holds at most batch_size events and receives all 20000") {
  constexpr std::size_t kBatch = 64;
  constexpr int kAppends = 200;
  constexpr int kPerAppend = 100;
  constexpr Position kTotal = kAppends * kPerAppend;
  TempStore t;
  std::mutex mu;
  std::vector<Position> seen;
  std::atomic<std::size_t> largest_batch{0};
  Subscription sub = Subscription::batched(
      t.store, {.batch_size = kBatch, .poll_interval = 0ms},
      [&](std::span<const RecordedEvent> batch) {
        largest_batch = std::max(largest_batch.load(), batch.size());
        {
          std::lock_guard lock(mu);
          for (const RecordedEvent& e : batch) seen.push_back(e.position);
        }
        std::this_thread::sleep_for(1ms);  // slow work per batch (not a timing assertion)
      });
  std::size_t most_held = 0;
  for (int i = 0; i < kAppends; ++i) {
    t.store.append("s-" + std::to_string(i % 10), ExpectedVersion::any(), make_events(kPerAppend));
    most_held = std::max(most_held, sub.max_held());
  }
  REQUIRE(sub.wait_for(kTotal, 60s));
  sub.stop();
  CHECK(most_held <= kBatch);
  CHECK(sub.max_held() == kBatch);  // appends of 100 cannot be delivered whole
  CHECK(largest_batch.load() == kBatch);
  std::lock_guard lock(mu);
  CHECK(seen == positions_from_to(1, kTotal));
}

// ---- stopping ---------------------------------------------------------------------------------

TEST_CASE("destroying a subscription stops it: nothing is delivered after the destructor returns") {
  TempStore t;
  append_spread(t.store, 100);
  std::atomic<bool> destroyed{false};
  std::atomic<int> late{0};
  std::atomic<int> delivered{0};
  std::atomic<bool> writing{true};
  std::thread writer([&] {  // keeps appending through the destruction
    while (writing) t.store.append("w-1", ExpectedVersion::any(), make_event());
  });
  {
    Subscription sub(t.store, {.batch_size = 8, .poll_interval = 5ms}, [&](const RecordedEvent&) {
      if (destroyed) ++late;
      ++delivered;
    });
    CHECK(sub.wait_for(150, kWait));  // not REQUIRE: the writer must be joined
  }
  destroyed = true;
  const int at_destruction = delivered;
  append_spread(t.store, 20);
  writing = false;
  writer.join();
  CHECK(late == 0);
  CHECK(delivered == at_destruction);
  CHECK(t.store.on_appended().empty());  // its wake-up slot is disconnected
}

TEST_CASE("stop() called by the handler returns, and no event is delivered after it") {
  TempStore t;
  Gate ready;
  std::optional<Subscription> sub;
  std::vector<Position> seen;  // the subscription's thread only, read after it ended
  std::atomic<bool> stopped{false};
  std::atomic<int> after_stop{0};
  sub.emplace(t.store,
              SubscriptionOptions{.checkpoint = "stopper", .batch_size = 100, .poll_interval = 0ms},
              [&](const RecordedEvent& e) {
                ready.wait();
                if (stopped) {
                  ++after_stop;
                  return;
                }
                seen.push_back(e.position);
                if (e.position == 10) {
                  sub->stop();  // must not wait for this very thread
                  stopped = true;
                }
              });
  ready.open();
  t.store.append("s-1", ExpectedVersion::any(), make_events(50));  // one batch of 50
  CHECK_FALSE(sub->wait_for(50, kWait));  // returns once the subscription has stopped
  CHECK(sub->state() == State::stopped);
  sub->stop();  // joins the ended thread
  CHECK(after_stop == 0);
  CHECK(seen == positions_from_to(1, 10));
  // What was not delivered is not counted: a restart resumes after event 10.
  CHECK(sub->position() == 10);
  CHECK(CheckpointStore(t.store).load("stopper") == 10);
}

TEST_CASE("a subscription destroyed by its own handler ends without deadlock or more deliveries") {
  TempStore t;
  Gate ready;
  std::promise<void> finished;
  std::optional<Subscription> sub;
  std::vector<Position> seen;  // the subscription's thread only, read after `finished`
  std::atomic<bool> gone{false};
  std::atomic<int> after_reset{0};
  sub.emplace(t.store, SubscriptionOptions{.batch_size = 100, .poll_interval = 0ms},
              [&, on_destroy = std::make_shared<OnDestroy>(finished)](const RecordedEvent& e) {
                ready.wait();
                if (gone) {
                  ++after_reset;
                  return;
                }
                seen.push_back(e.position);
                if (e.position == 5) {
                  sub.reset();  // destroys the Subscription on its own thread
                  gone = true;
                }
              });
  ready.open();
  t.store.append("s-1", ExpectedVersion::any(), make_events(50));  // one batch of 50
  // The thread ends by itself and drops its state, the handler included.
  REQUIRE(finished.get_future().wait_for(kWait) == std::future_status::ready);
  CHECK_FALSE(sub.has_value());
  CHECK(after_reset == 0);
  CHECK(seen == positions_from_to(1, 5));
  CHECK(t.store.on_appended().empty());
}

TEST_CASE("stop() twice, and destruction after stop(), are harmless") {
  TempStore t;
  append_spread(t.store, 5);
  Recorder seen;
  Subscription sub(t.store, {.poll_interval = 0ms}, seen.handler());
  REQUIRE(sub.wait_for(5, kWait));
  sub.stop();
  sub.stop();
  CHECK(sub.state() == State::stopped);
  CHECK(sub.position() == 5);
  append_spread(t.store, 3);
  CHECK_FALSE(sub.wait_for(8, 0ms));
  CHECK(seen.positions() == positions_from_to(1, 5));
}

TEST_CASE("move-assigning a subscription stops the one it replaces, the moved one runs on") {
  TempStore t;
  Recorder a_seen;
  Recorder b_seen;
  Subscription a(t.store, {.poll_interval = 0ms}, a_seen.handler());
  Subscription b(t.store, {.poll_interval = 0ms}, b_seen.handler());
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  REQUIRE(a.wait_for(1, kWait));
  REQUIRE(b.wait_for(1, kWait));
  a = std::move(b);  // a's first subscription is stopped and joined here
  CHECK(t.store.on_appended().num_slots() == 1);
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  REQUIRE(a.wait_for(2, kWait));
  Subscription c(std::move(a));
  t.store.append("s-1", ExpectedVersion::any(), make_event());
  REQUIRE(c.wait_for(3, kWait));
  c.stop();
  CHECK(a_seen.positions() == positions_from_to(1, 1));
  CHECK(b_seen.positions() == positions_from_to(1, 3));
}

// ---- a failing handler ------------------------------------------------------------------------

TEST_CASE("a handler that throws fails the subscription, its batch is not checkpointed") {
  TempStore t;
  append_spread(t.store, 35);
  std::promise<std::exception_ptr> reported;
  std::atomic<int> reports{0};
  Subscription sub(t.store,
                   {.checkpoint = "flaky",
                    .batch_size = 10,
                    .poll_interval = 0ms,
                    .on_error =
                        [&](std::exception_ptr e) {
                          if (reports++ == 0) reported.set_value(e);
                        }},
                   [](const RecordedEvent& e) {
                     if (e.position == 25) throw std::runtime_error("handler failed at 25");
                   });
  auto report = reported.get_future();
  REQUIRE(report.wait_for(kWait) == std::future_status::ready);
  CHECK(sub.state() == State::failed);
  REQUIRE(sub.error() != nullptr);
  CHECK(report.get() == sub.error());
  CHECK_THROWS_WITH_AS(std::rethrow_exception(sub.error()), "handler failed at 25",
                       std::runtime_error);
  CHECK_FALSE(sub.wait_for(35, kWait));  // returns at once: it has failed
  CHECK(sub.position() == 20);
  CHECK(CheckpointStore(t.store).load("flaky") == 20);
  t.store.append("s-1", ExpectedVersion::any(), make_event());  // a failed one stays failed
  sub.stop();
  CHECK(reports == 1);

  // The same checkpoint name again: delivery resumes with the failing batch (at least once).
  Recorder again;
  Subscription retry(t.store, {.checkpoint = "flaky", .batch_size = 10, .poll_interval = 0ms},
                     again.handler());
  REQUIRE(retry.wait_for(36, kWait));
  retry.stop();
  CHECK(again.positions() == positions_from_to(21, 36));
  CHECK(CheckpointStore(t.store).load("flaky") == 36);
}

TEST_CASE("a batch handler that throws on its first batch leaves no checkpoint") {
  TempStore t;
  append_spread(t.store, 5);
  Subscription sub =
      Subscription::batched(t.store, {.checkpoint = "never", .poll_interval = 0ms},
                            [](std::span<const RecordedEvent>) { throw std::logic_error("no"); });
  CHECK_FALSE(sub.wait_for(5, kWait));
  CHECK(sub.state() == State::failed);
  CHECK(sub.position() == 0);
  CHECK(CheckpointStore(t.store).load("never") == 0);
}

// ---- bad options ------------------------------------------------------------------------------

TEST_CASE("a subscription refuses an empty handler, batch_size 0 and a bad filter") {
  TempStore t;
  const auto noop = [](const RecordedEvent&) {};
  CHECK_THROWS_AS(Subscription(t.store, {}, Subscription::Handler{}), InvalidArgument);
  CHECK_THROWS_AS(Subscription::batched(t.store, {}, Subscription::BatchHandler{}),
                  InvalidArgument);
  CHECK_THROWS_AS(Subscription(t.store, {.batch_size = 0}, noop), InvalidArgument);
  CHECK_THROWS_AS(Subscription(t.store, {.filter = SubscriptionFilter::category("")}, noop),
                  InvalidArgument);
  CHECK_THROWS_AS(Subscription(t.store, {.filter = SubscriptionFilter::stream("")}, noop),
                  InvalidArgument);
  SubscriptionFilter partitioned = SubscriptionFilter::category("order");
  partitioned.partitions = 3;
  partitioned.partition = 3;
  CHECK_THROWS_AS(Subscription(t.store, {.filter = partitioned}, noop), InvalidArgument);
  partitioned.partitions = 0;
  partitioned.partition = 0;
  CHECK_THROWS_AS(Subscription(t.store, {.filter = partitioned}, noop), InvalidArgument);
  CHECK(t.store.on_appended().empty());  // nothing was left connected
}
