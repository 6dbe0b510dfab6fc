// Anchoring across crashes: a process SIGKILLed between its commits and their anchor leaves a
// gap the next anchor covers; a WAL lost after acknowledged, anchored commits leaves a file that
// open refuses and verify names behind_anchor. Each crash is a forked child killed by SIGKILL
// (no destructor, no close, no checkpoint, no closing anchor).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "factum/eventstore/anchor.hpp"
#include "support/anchor_keys.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace std::chrono_literals;
using factum::test::in_killed_child;
using factum::test::make_ed25519_keys;
using factum::test::make_events;
using factum::test::temp_store_location;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

struct Setup {
  TempDir dir;
  test::KeyFiles keys = make_ed25519_keys(dir.file(""));
  std::filesystem::path anchors = dir.file("anchors.jsonl");
  AnchorPublicKey pub = AnchorPublicKey::from_pem_file(keys.public_key);
  std::filesystem::path location = temp_store_location(dir);

  StoreOptions options(std::uint64_t every_events, bool at_close) const {
    StoreOptions o = TempStore::fast_options();
    o.anchoring.key =
        std::make_shared<const AnchorSigningKey>(AnchorSigningKey::from_pem_file(keys.private_key));
    o.anchoring.sink = std::make_shared<AnchorFile>(anchors);
    o.anchoring.every_events = every_events;
    o.anchoring.every = 0ms;
    o.anchoring.at_close = at_close;
    return o;
  }
  std::vector<Anchor> anchored() const { return AnchorFile(anchors).anchors(); }
};

}  // namespace

TEST_CASE("a SIGKILL between commits and their anchor leaves a gap the next anchor covers") {
  Setup s;
  {
    EventStore store = EventStore::open(s.location, s.options(1000, true));
    store.append("s-1", ExpectedVersion::any(), make_events(2));
  }
  REQUIRE(s.anchored().back().position == 2);
  in_killed_child([&] {
    EventStore store = EventStore::open(s.location, s.options(1000, true));
    store.append("s-1", ExpectedVersion::any(), make_events(4));  // acknowledged, not anchored
    raise(SIGKILL);
  });
  CHECK(s.anchored().back().position == 2);
  {
    EventStore store = EventStore::open(s.location, s.options(1000, true));  // opens: 2 is held
    CHECK(store.head().position == 6);
    store.append("s-1", ExpectedVersion::any(), make_events(1));
  }
  const std::vector<Anchor> anchors = s.anchored();
  REQUIRE(anchors.size() == 2);
  CHECK(anchors.back().position == 7);  // covers the killed process's events too
  const EventStore store = EventStore::open(s.location, TempStore::fast_options());
  CHECK(verify_anchored(store, anchors, s.pub).ok());
}

TEST_SUITE_BEGIN("sqlite-only");

TEST_CASE("a WAL lost after anchored commits: open refuses the file, verify says behind_anchor") {
  Setup s;
  {
    EventStore store = EventStore::open(s.location, TempStore::fast_options());
    store.append("s-1", ExpectedVersion::any(), make_events(2));
  }  // closed: both events are in the main file
  in_killed_child([&] {
    EventStore store = EventStore::open(s.location, s.options(1, false));
    for (int i = 0; i < 3; ++i) store.append("s-1", ExpectedVersion::any(), make_events(1));
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (s.anchored().empty() || s.anchored().back().position != 5) {
      if (std::chrono::steady_clock::now() > deadline) _exit(3);
      std::this_thread::sleep_for(5ms);
    }
    raise(SIGKILL);  // the store is never closed: its WAL is never checkpointed
  });
  const std::string wal = s.location.string() + "-wal";
  REQUIRE(std::filesystem::exists(wal));
  REQUIRE(std::filesystem::file_size(wal) > 0);
  std::filesystem::remove(wal);
  std::filesystem::remove(s.location.string() + "-shm");
  CHECK_THROWS_WITH_AS(EventStore::open(s.location, s.options(1, false)),
                       doctest::Contains("ends at position 2, behind the anchor of position 5"),
                       AnchorError);
  const EventStore store = EventStore::open(s.location, TempStore::fast_options());
  CHECK(store.verify().ok());  // the chain alone sees a whole log of 2 events
  const VerifyResult r = verify_anchored(store, s.anchored(), s.pub);
  CHECK(r.problem == VerifyResult::Problem::behind_anchor);
  CHECK(r.position == 3);
}

TEST_SUITE_END();
