// Anchoring as the service runs (StoreOptions::anchoring): anchors by count, by time and at
// close, off the append's path; failures reported and retried, never failing an append; and the
// check at open that refuses a store behind or unlike its newest anchor. Both backends.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "factum/eventstore/anchor.hpp"
#include "support/anchor_keys.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace std::chrono_literals;
using factum::test::eventually;
using factum::test::make_ed25519_keys;
using factum::test::make_events;
using factum::test::temp_store_location;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

// A key pair, an anchor file and the options that anchor a store into it.
struct Setup {
  TempDir dir;
  test::KeyFiles keys = make_ed25519_keys(dir.file(""));
  std::shared_ptr<AnchorFile> file = std::make_shared<AnchorFile>(dir.file("anchors.jsonl"));
  AnchorPublicKey pub = AnchorPublicKey::from_pem_file(keys.public_key);
  std::filesystem::path location = temp_store_location(dir);
  // What on_error received (options() reports there).
  mutable std::mutex errors_mutex;
  mutable std::vector<std::string> errors;

  std::string first_error() const {
    std::lock_guard lock(errors_mutex);
    return errors.empty() ? std::string() : errors.front();
  }

  StoreOptions options(std::uint64_t every_events, std::chrono::milliseconds every,
                       bool at_close = false) const {
    StoreOptions o = TempStore::fast_options();
    o.anchoring.key =
        std::make_shared<const AnchorSigningKey>(AnchorSigningKey::from_pem_file(keys.private_key));
    o.anchoring.sink = file;
    o.anchoring.every_events = every_events;
    o.anchoring.every = every;
    o.anchoring.at_close = at_close;
    o.anchoring.on_error = [this](std::exception_ptr e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& error) {
        std::lock_guard lock(errors_mutex);
        errors.emplace_back(error.what());
      }
    };
    return o;
  }
};

void append_one_by_one(EventStore& store, int n) {
  for (int i = 0; i < n; ++i) store.append("s-1", ExpectedVersion::any(), make_events(1));
}

}  // namespace

TEST_CASE("a store anchors every N events on its own thread, each anchor chained to the last") {
  Setup s;
  EventStore store = EventStore::open(s.location, s.options(5, 0ms));
  auto last_at = [&](Position p) {
    return eventually([&] {
      const std::optional<Anchor> last = s.file->last();
      return last && last->position == p;
    });
  };
  append_one_by_one(store, 5);
  CHECK(last_at(5));
  append_one_by_one(store, 4);  // fewer than 5 since the last anchor: not due
  std::this_thread::sleep_for(100ms);
  CHECK(s.file->anchors().size() == 1);
  append_one_by_one(store, 1);
  CHECK(last_at(10));
  // A burst counts as a whole: one anchor of its end (the thread takes what is pending).
  store.append("s-2", ExpectedVersion::any(), make_events(12));
  CHECK(last_at(22));
  const std::vector<Anchor> anchors = s.file->anchors();
  CHECK(anchors.size() == 3);
  CHECK(check_anchors(anchors, s.pub).ok());
  CHECK(verify_anchored(store, anchors, s.pub).ok());
  CHECK(s.first_error() == "");
}

TEST_CASE("a store anchors a quiet tail after `every`, and what is left when it closes") {
  Setup s;
  {
    EventStore store = EventStore::open(s.location, s.options(0, 50ms));
    append_one_by_one(store, 3);
    CHECK(eventually([&] {
      const std::optional<Anchor> last = s.file->last();
      return last && last->position == 3;
    }));
  }
  {
    EventStore store = EventStore::open(s.location, s.options(0, 0ms, true));
    append_one_by_one(store, 2);
    CHECK(s.file->last()->position == 3);  // neither count nor time: only the close anchors
  }
  const std::optional<Anchor> last = s.file->last();
  REQUIRE(last);
  CHECK(last->position == 5);
  const std::size_t before = s.file->anchors().size();
  {
    // Nothing appended: nothing to anchor at close.
    EventStore store = EventStore::open(s.location, s.options(0, 0ms, true));
  }
  CHECK(s.file->anchors().size() == before);
}

TEST_CASE("a failing sink is reported and retried, and no append waits for it or fails") {
  Setup s;
  std::atomic<int> failures_left{3};
  std::atomic<int> reported{0};
  std::vector<Anchor> delivered;
  std::mutex mutex;
  StoreOptions o = s.options(2, 0ms, true);
  o.anchoring.retry = 10ms;
  o.anchoring.sink = std::make_shared<CallbackAnchorSink>([&](const Anchor& a) {
    if (failures_left.fetch_sub(1) > 0) throw std::runtime_error("the anchor service is down");
    std::lock_guard lock(mutex);
    delivered.push_back(a);
  });
  o.anchoring.on_error = [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::runtime_error& error) {
      if (std::string(error.what()) == "the anchor service is down") ++reported;
    }
  };
  {
    EventStore store = EventStore::open(s.location, o);
    append_one_by_one(store, 4);  // each succeeds though the first anchors fail
    CHECK(store.head().position == 4);
    CHECK(eventually([&] {
      std::lock_guard lock(mutex);
      return !delivered.empty();
    }));
  }
  CHECK(reported == 3);
  std::lock_guard lock(mutex);
  REQUIRE(!delivered.empty());
  CHECK(delivered.back().position == 4);
  CHECK(check_anchors(delivered, s.pub).ok());
}

TEST_CASE("open refuses a store behind or unlike its newest anchor, naming the anchor") {
  Setup s;
  {
    EventStore store = EventStore::open(s.location, s.options(0, 0ms, true));
    store.append("s-1", ExpectedVersion::any(), make_events(10));
  }
  REQUIRE(s.file->last()->position == 10);
  TempStore shorter;  // an older backup: 8 events of another log
  shorter.store.append("s-1", ExpectedVersion::any(), make_events(8));
  CHECK_THROWS_WITH_AS(EventStore::open(shorter.path, s.options(0, 0ms)),
                       doctest::Contains("ends at position 8, behind the anchor of position 10"),
                       AnchorError);
  TempStore other;  // a rewritten log, longer than the anchored one
  other.store.append("s-1", ExpectedVersion::any(), make_events(12));
  CHECK_THROWS_WITH_AS(EventStore::open(other.path, s.options(0, 0ms)),
                       doctest::Contains("its event at position 10 is not the one signed by"),
                       AnchorError);
  // Told not to check, it opens (and anchors nothing that contradicts the file: anchor_head
  // refuses, reported to on_error).
  StoreOptions unchecked = s.options(1, 0ms);
  unchecked.anchoring.check_at_open = false;
  std::atomic<int> refused{0};
  unchecked.anchoring.on_error = [&](std::exception_ptr) { ++refused; };
  const std::size_t before = s.file->anchors().size();
  {
    EventStore store = EventStore::open(other.path, unchecked);
    store.append("s-1", ExpectedVersion::any(), make_events(1));
    CHECK(eventually([&] { return refused > 0; }));
  }
  CHECK(s.file->anchors().size() == before);
  // The anchored store itself opens.
  CHECK_NOTHROW(EventStore::open(s.location, s.options(0, 0ms)));
}

TEST_CASE("open with accept_rollback records the loss once and anchors it at once") {
  Setup s;
  {
    EventStore store = EventStore::open(s.location, s.options(0, 0ms, true));
    store.append("s-1", ExpectedVersion::any(), make_events(10));
  }
  const Anchor lost = *s.file->last();
  TempStore restored;  // a backup put back: another, shorter log
  restored.store.append("s-1", ExpectedVersion::any(), make_events(8));
  CHECK_THROWS_WITH_AS(EventStore::open(restored.path, s.options(1000, 0ms)),
                       doctest::Contains("AnchoringOptions::accept_rollback"), AnchorError);
  StoreOptions accepting = s.options(1000, 0ms);
  accepting.anchoring.accept_rollback = "restored the backup of 2026-12-01";
  {
    EventStore store = EventStore::open(restored.path, accepting);
    const std::vector<AcceptedRollback> a = accepted_rollbacks(store);
    REQUIRE(a.size() == 1);
    CHECK(a[0].position == 9);
    CHECK(a[0].anchor == lost.hash());
    CHECK(a[0].reason == "restored the backup of 2026-12-01");
    // Anchored at once, not after 1,000 events: the acceptance is signed.
    CHECK(eventually([&] { return s.file->last()->position == 9; }));
    CHECK(s.file->last()->previous == lost.hash());
    CHECK(verify_anchored(store, s.file->anchors(), s.pub).ok());
  }
  // Opened again, with or without the option, nothing more is recorded.
  {
    EventStore store = EventStore::open(restored.path, accepting);
    CHECK(store.head().position == 9);
  }
  CHECK_NOTHROW(EventStore::open(restored.path, s.options(1000, 0ms)));
  CHECK(s.first_error().empty());
}

TEST_CASE("an acceptance whose anchor could not be made still opens, and is anchored later") {
  Setup s;
  {
    EventStore store = EventStore::open(s.location, s.options(0, 0ms, true));
    store.append("s-1", ExpectedVersion::any(), make_events(4));
  }
  TempStore restored;
  restored.store.append("s-1", ExpectedVersion::any(), make_events(2));
  StoreOptions once = s.options(0, 0ms);  // no anchoring thread: nothing anchors the acceptance
  once.anchoring.at_close = false;
  once.anchoring.accept_rollback = "lost the disk";
  CHECK_NOTHROW(EventStore::open(restored.path, once));
  CHECK(s.file->last()->position == 4);
  // The next open finds the acceptance in the log and goes on; its anchor then covers it.
  {
    EventStore store = EventStore::open(restored.path, s.options(0, 0ms, true));
    CHECK(accepted_rollbacks(store).size() == 1);
  }
  CHECK(s.file->last()->position == 3);
  CHECK(s.first_error().empty());
}

TEST_CASE("open refuses a store whose newest anchor another key signed") {
  Setup s;
  {
    EventStore store = EventStore::open(s.location, s.options(0, 0ms, true));
    store.append("s-1", ExpectedVersion::any(), make_events(3));
  }
  StoreOptions o = s.options(0, 0ms);
  o.anchoring.key = std::make_shared<const AnchorSigningKey>(
      AnchorSigningKey::from_pem_file(make_ed25519_keys(s.dir.file(""), "other").private_key));
  CHECK_THROWS_WITH_AS(EventStore::open(s.location, o),
                       doctest::Contains("is not signed by the anchoring key"), AnchorError);
}

TEST_CASE("threads appending while the store anchors leave one unbroken chain of anchors") {
  Setup s;
  {
    EventStore store = EventStore::open(s.location, s.options(7, 5ms, true));
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&store, t] {
        for (int i = 0; i < 25; ++i) {
          store.append("t" + std::to_string(t) + "-1", ExpectedVersion::any(), make_events(1));
        }
      });
    }
    for (std::thread& th : threads) th.join();
  }
  const std::vector<Anchor> anchors = s.file->anchors();
  REQUIRE(!anchors.empty());
  CHECK(anchors.back().position == 100);
  CHECK(check_anchors(anchors, s.pub).ok());
  const EventStore store = EventStore::open(s.location, s.options(0, 0ms));
  CHECK(verify_anchored(store, anchors, s.pub).ok());
}
