// Durability across crashes: a writing process (support/writer_child.cpp) is killed with
// SIGKILL at random moments, over and over, on one store file. After every kill the store
// opens, verifies, holds every append the writer was told had returned, and holds each other
// batch either whole or not at all.
//
// Most kills come at a random moment after the writer has acknowledged its first append, so
// they hit it at work however slowly it starts (sanitizers, a loaded machine); the others come
// at a random moment early in its life: while it starts, opens (and recovers) the store or
// makes its first appends.
//
// Run twice: on a SQLite file, and on a schema of the PostgreSQL test server (the "pg/" cases),
// where the kill cuts the writer's connections instead.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::await_cue;
using factum::test::drain_cues;
using factum::test::slurp;
using factum::test::temp_store_location;
using factum::test::TempDir;

namespace {

// A running `writer_child crash`, with stdout and stderr in files, sending its cues on fd 3:
// "R" when its store is open, "A" when it has acknowledged an append.
using CrashWriter = factum::test::CuedChild;

CrashWriter spawn_crash_writer(const std::string& store, int threads, std::uint64_t seed,
                               const std::filesystem::path& out, const std::filesystem::path& err) {
  return factum::test::spawn_cued_child(
      {FACTUM_WRITER_CHILD, "crash", store, std::to_string(threads), std::to_string(seed), "3"},
      {.out = out, .err = err});
}

#ifdef FACTUM_TEST_HAVE_POSTGRES
// The application_name of the sessions of the writer of `round` on PostgreSQL.
std::string writer_session_name(int round) {
  return "factum_crash_" + std::to_string(::getpid()) + "_" + std::to_string(round);
}
#endif

// Where the writer of `round` opens the store: `store`; on PostgreSQL, its URI naming the
// writer's sessions (writer_session_name), by which await_writer_gone finds them.
std::string writer_location(const std::filesystem::path& store, [[maybe_unused]] int round) {
#ifdef FACTUM_TEST_HAVE_POSTGRES
  if (factum::test::testing_postgres()) {
    return factum::test::pg_with_application_name(store.string(), writer_session_name(round));
  }
#endif
  return store.string();
}

// Called once the writer of `round` is killed and reaped. On SQLite its writing ended with it.
// On PostgreSQL its sessions outlive it until the server notices the cut connection, and one may
// still be committing a batch the writer was never told of: checked before they end, the store
// could lack that batch now and hold it in the next round. So this waits for them to end.
void await_writer_gone([[maybe_unused]] int round) {
#ifdef FACTUM_TEST_HAVE_POSTGRES
  if (!factum::test::testing_postgres()) return;
  REQUIRE_MESSAGE(
      factum::test::pg_await_sessions_gone(
          writer_session_name(round), std::chrono::steady_clock::now() + std::chrono::seconds(30)),
      "the killed writer's server sessions did not end within 30 s");
#endif
}

// A batch the writer announced (BEGIN) and, if `acked`, saw appended (ACK).
struct Batch {
  std::string stream;
  std::vector<std::string> ids;
  bool acked = false;
  AppendResult result;   // from the ACK line
  bool present = false;  // found in the store after the kill
};

// Parses the writer's report. A last line cut short by the kill is ignored: BEGIN is written
// before append is called, so the events of a half-written BEGIN line were never appended.
std::vector<Batch> parse_report(const std::string& text) {
  std::vector<Batch> batches;
  std::map<std::string, std::size_t> by_first_id;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline: cut short
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "BEGIN") {
      Batch b;
      words >> b.stream;
      for (std::string id; words >> id;) b.ids.push_back(id);
      REQUIRE(!b.ids.empty());
      by_first_id[b.ids.front()] = batches.size();
      batches.push_back(std::move(b));
    } else {
      REQUIRE(kind == "ACK");
      std::string first;
      AppendResult r;
      words >> first >> r.first_position >> r.last_position >> r.stream_version;
      REQUIRE(by_first_id.count(first) == 1);
      Batch& b = batches[by_first_id[first]];
      b.acked = true;
      b.result = r;
    }
  }
  return batches;
}

struct Totals {
  std::size_t acked = 0;             // batches acknowledged
  std::size_t in_flight_landed = 0;  // batches killed in flight whose events are all stored
  std::size_t in_flight_lost = 0;    // batches killed in flight with none of their events
  std::size_t rounds_with_acks = 0;
  std::size_t early_before_open = 0;  // early kills that came before the store was open
  std::size_t early_after_open = 0;   // early kills that came after it
};

// Checks one killed round's batches against the store and records their presence.
void check_round(const std::vector<RecordedEvent>& events, std::vector<Batch>& batches,
                 Totals& totals) {
  std::map<std::string, const RecordedEvent*> by_id;
  for (const RecordedEvent& e : events) by_id.emplace(e.id.to_string(), &e);
  for (Batch& b : batches) {
    std::size_t found = 0;
    for (const std::string& id : b.ids) found += by_id.count(id);
    CAPTURE(b.ids.front());
    CHECK_MESSAGE((found == 0 || found == b.ids.size()), "a batch is stored in part");
    if (b.acked) CHECK_MESSAGE(found == b.ids.size(), "an acknowledged batch is missing");
    b.present = found == b.ids.size();
    if (b.acked) ++totals.acked;
    if (!b.acked) ++(b.present ? totals.in_flight_landed : totals.in_flight_lost);
    if (!b.present) continue;
    // The batch's events are contiguous, in order, in its stream.
    const RecordedEvent& first = *by_id.at(b.ids.front());
    for (std::size_t i = 0; i < b.ids.size(); ++i) {
      const RecordedEvent& e = *by_id.at(b.ids[i]);
      CHECK(e.stream_id == b.stream);
      CHECK(e.position == first.position + i);
      CHECK(e.stream_version == first.stream_version + i);
    }
    if (b.acked) {
      CHECK(b.result == AppendResult{first.stream_version + b.ids.size() - 1, first.position,
                                     first.position + b.ids.size() - 1});
    }
  }
}

// Positions are 1..n, each stream's versions gap-free, and the log holds exactly the events
// of the batches found present, in this round and every earlier one.
void check_log(const std::vector<RecordedEvent>& events, const std::set<std::string>& present) {
  std::map<std::string, StreamVersion> last_version;
  for (std::size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i].position == i + 1);
    CHECK(events[i].stream_version == ++last_version[events[i].stream_id]);
    CHECK(present.count(events[i].id.to_string()) == 1);
  }
  CHECK(events.size() == present.size());
}

}  // namespace

TEST_CASE("a writer killed at random moments loses no acknowledged append and tears no batch") {
  using namespace std::chrono;
  constexpr int kKills = 64;
  // Every fourth kill is an early one; the others wait for an acknowledged append.
  constexpr int kEarlyEvery = 4;
  constexpr int kLateKills = kKills - (kKills + kEarlyEvery - 1) / kEarlyEvery;
  // How long a writer may take to start, open the store and acknowledge an append: far beyond
  // what a sanitized build on a loaded machine needs; exceeding it means the writer is stuck.
  constexpr auto kAckDeadline = seconds(30);
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  TempDir dir;
  const auto path = temp_store_location(dir);
  std::set<std::string> present;  // ids of every batch found stored
  Totals totals;
  // Time from spawn to the store being open, summed over the late rounds: early kills are drawn
  // from 0 to 1.5 times its mean, so they land in start-up, open and the first appends on a
  // fast machine as on a slow one.
  microseconds open_time_sum{0};
  int open_time_count = 0;
  for (int round = 0; round < kKills; ++round) {
    CAPTURE(round);
    const bool early = round % kEarlyEvery == 0;
    const auto out = dir.file("out-" + std::to_string(round));
    const auto err = dir.file("err-" + std::to_string(round));
    const auto spawned = steady_clock::now();
    CrashWriter child =
        spawn_crash_writer(writer_location(path, round), 1 + round % 3, rng(), out, err);
    bool acked_in_time = false;
    if (early) {
      const microseconds window = open_time_count == 0 ? microseconds(milliseconds(40))
                                                       : open_time_sum * 3 / (2 * open_time_count);
      std::this_thread::sleep_for(microseconds(rng() % (window.count() + 1)));
    } else if (await_cue(child, 'R', spawned + kAckDeadline)) {
      open_time_sum += duration_cast<microseconds>(steady_clock::now() - spawned);
      ++open_time_count;
      acked_in_time = await_cue(child, 'A', spawned + kAckDeadline);
      if (acked_in_time) std::this_thread::sleep_for(milliseconds(rng() % 41));
    }
    REQUIRE(::kill(child.pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(child.pid, &status, 0) == child.pid);
    drain_cues(child);
    INFO("writer_child stderr: ", slurp(err));
    await_writer_gone(round);
    REQUIRE_MESSAGE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL),
                    "the writer ended before it was killed");
    if (!early) {
      REQUIRE_MESSAGE(acked_in_time, "the writer acknowledged no append within ",
                      kAckDeadline.count(), " s (cues received: \"", child.cues, "\")");
    } else {
      ++(child.cues.empty() ? totals.early_before_open : totals.early_after_open);
    }

    std::vector<Batch> batches = parse_report(slurp(out));
    const EventStore store = EventStore::open(path);
    const VerifyResult verified = store.verify();
    REQUIRE_MESSAGE(verified.ok(), verified.message);
    const auto events = store.read_all().to_vector();
    check_round(events, batches, totals);
    for (const Batch& b : batches)
      if (b.present) present.insert(b.ids.begin(), b.ids.end());
    check_log(events, present);
    const bool round_acked =
        std::any_of(batches.begin(), batches.end(), [](const Batch& b) { return b.acked; });
    // The cue "A" follows the ACK line, so a late round's report shows the acknowledgement.
    if (!early) CHECK_MESSAGE(round_acked, "the writer's report lacks the acknowledged append");
    if (round_acked) ++totals.rounds_with_acks;
  }
  MESSAGE(totals.rounds_with_acks, " of ", kKills,
          " writers acknowledged appends before the kill; ", totals.acked,
          " acknowledged batches; killed in flight: ", totals.in_flight_landed, " landed whole, ",
          totals.in_flight_lost, " left no trace; early kills: ", totals.early_before_open,
          " before the store was open, ", totals.early_after_open, " after; mean time to open: ",
          open_time_count == 0 ? 0 : open_time_sum.count() / open_time_count / 1000, " ms");
  // Most kills hit a writer at work (one that had acknowledged appends), not one starting up;
  // the late rounds guarantee that whatever the machine's speed.
  CHECK(totals.rounds_with_acks >= static_cast<std::size_t>(kLateKills));
  // ... and most of those cut an append short.
  CHECK(totals.in_flight_landed + totals.in_flight_lost >= kKills / 4);
}
