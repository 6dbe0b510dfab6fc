// Exactly once across crashes: processes running the projection "tally"
// (projector_child.cpp), which append to the log while they project, are killed with SIGKILL at
// random moments, over and over, on one store file. After every kill the store opens and
// verifies, the projection's checkpoint is at most the head, and its read model is exactly the
// fold of the log up to the checkpoint: no event below it lost, none applied twice, none
// applied out of order, none above it applied. At the end, projecting to the head gives the
// fold of the whole log.
//
// Rounds cycle through the modes (async, inline_append) and companions: none, a second process
// appending without the projection (so the log also grows behind the projector's back: inline
// gaps, polling), or a second process running the same projection in the other mode (two
// engines racing for the same checkpoint). Most kills come at a random moment after the
// projector has applied an event and appended one; every fifth comes at a random moment after spawn
// (start-up, setup of the read model, catch-up).
//
// The second test case does the same across blue/green rebuilds: projectors that ask for a
// rebuild at their version, then projectors of a new version. There the serving generation and
// the one being rebuilt must each be the fold of the log up to their own checkpoint, the views
// must show the serving one, and no other generation's tables may be left.
//
// The seed is printed; FACTUM_CRASH_SEED=<seed> replays a run's choices (not its timing).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::await_cue;
using factum::test::drain_cues;
using factum::test::slurp;
using factum::test::TempDir;

namespace {

// A running projector_child, with stderr in a file, sending its cues on fd 3: "S" when it has
// started (store open, projection added), "P" at its first apply.
struct Child : factum::test::CuedChild {
  std::filesystem::path err;
};

// Starts projector_child with `args`, where "<cue>" stands for the cue pipe's descriptor.
Child spawn_child(std::vector<std::string> args, const std::filesystem::path& err) {
  args.insert(args.begin(), FACTUM_PROJECTOR_CHILD);
  for (std::string& a : args)
    if (a == "<cue>") a = "3";
  Child child;
  static_cast<factum::test::CuedChild&>(child) = factum::test::spawn_cued_child(args, {.err = err});
  child.err = err;
  return child;
}

// Kills the child with SIGKILL, reaps it, and requires that the kill is what ended it.
void kill_child(Child& child, const std::string& what) {
  REQUIRE(::kill(child.pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(child.pid, &status, 0) == child.pid);
  drain_cues(child);
  INFO(what, " stderr: ", slurp(child.err));
  REQUIRE_MESSAGE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL), what,
                  " ended before it was killed");
}

// Runs a child to its end (killing it after `limit`), and requires exit status 0.
void run_to_end(Child& child, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  pid_t got = 0;
  while ((got = ::waitpid(child.pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (got == 0) {
    ::kill(child.pid, SIGKILL);
    got = ::waitpid(child.pid, &status, 0);
  }
  REQUIRE(got == child.pid);
  drain_cues(child);
  INFO("projector_child stderr: ", slurp(child.err));
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0),
                  "projector_child catchup failed (status ", status, ")");
}

using Counts = std::map<std::string, std::pair<std::int64_t, std::int64_t>>;  // stream: n, sum

// One generation of the read model, read from its physical tables.
struct Model {
  Counts counts;
  std::vector<std::pair<Position, std::string>> applied;  // position, id
  std::int64_t applies = -1, disorder = -1, last = -1;
};

// Reads the generation whose tables end in `suffix` ("" for the views); nullopt when a table
// (or view) is missing.
std::optional<Model> read_model(Sql& sql, const std::string& suffix) {
  for (const char* t : {"crash_counts", "crash_applied", "crash_tally"}) {
    if (!sql.query_integer("SELECT 1 FROM sqlite_master WHERE name = ?1", {t + suffix})) {
      return std::nullopt;
    }
  }
  Model m;
  sql.query("SELECT stream, n, sum FROM crash_counts" + suffix, {}, [&](const SqlRow& r) {
    m.counts[r.text(0)] = {r.integer(1), r.integer(2)};
  });
  sql.query("SELECT position, id FROM crash_applied" + suffix + " ORDER BY position", {},
            [&](const SqlRow& r) {
              m.applied.emplace_back(static_cast<Position>(r.integer(0)), r.text(1));
            });
  sql.query("SELECT applies, disorder, last FROM crash_tally" + suffix, {}, [&](const SqlRow& r) {
    m.applies = r.integer(0);
    m.disorder = r.integer(1);
    m.last = r.integer(2);
  });
  return m;
}

std::string str(std::uint64_t v) { return std::to_string(v); }
std::string str(std::int64_t v) { return std::to_string(v); }

// Compares `m` with the fold of the log up to `checkpoint`, exactly; adds each difference to
// `problems`, prefixed with `what`.
void compare(const Model& m, const std::vector<RecordedEvent>& events, Position checkpoint,
             const std::string& what, std::vector<std::string>& problems) {
  const auto expect = [&](bool ok, const std::string& problem) {
    if (!ok) problems.push_back(what + ": " + problem);
  };
  expect(checkpoint <= events.size(),
         "the checkpoint " + str(checkpoint) + " is past the head " + str(events.size()));
  // Per stream: the events up to the checkpoint, and the sum of their positions.
  Counts fold;
  for (const RecordedEvent& e : events) {
    if (e.position > checkpoint) break;
    auto& [n, sum] = fold[e.stream_id];
    n += 1;
    sum += static_cast<std::int64_t>(e.position);
  }
  for (const auto& [stream, want] : fold) {
    const auto it = m.counts.find(stream);
    const auto got =
        it == m.counts.end() ? std::pair<std::int64_t, std::int64_t>{0, 0} : it->second;
    expect(got == want, stream + ": n " + str(got.first) + " sum " + str(got.second) +
                            ", the log's fold: n " + str(want.first) + " sum " + str(want.second));
  }
  for (const auto& [stream, got] : m.counts) {
    expect(fold.count(stream) == 1, stream + ": n " + str(got.first) + ", not in the fold");
  }
  // Every apply call is counted: `applies` equals the events up to the checkpoint only if none
  // was applied twice; they came in position order; the last one is the checkpoint.
  expect(m.applies == static_cast<std::int64_t>(checkpoint),
         str(m.applies) + " apply calls for " + str(checkpoint) + " events");
  expect(m.disorder == 0, str(m.disorder) + " apply calls out of position order");
  expect(m.last == static_cast<std::int64_t>(checkpoint), "last applied " + str(m.last));
  // Each event up to the checkpoint applied (with its own id), none above it.
  expect(m.applied.size() == checkpoint, str(m.applied.size()) + " positions applied");
  for (std::size_t i = 0; i < m.applied.size(); ++i) {
    const Position p = m.applied[i].first;
    if (p != i + 1 || p > events.size() || m.applied[i].second != events[p - 1].id.to_string()) {
      expect(false,
             "applied row " + str(i) + " is position " + str(p) + " id " + m.applied[i].second);
      break;
    }
  }
}

// What the file holds of the projection and the log.
struct Observed {
  Position head = 0;
  bool set_up = false;  // the projection is recorded (its setup committed)
  std::uint32_t version = 0;
  std::uint64_t generation = 0;  // serving
  Position checkpoint = 0;       // serving
  std::uint32_t rebuild_version = 0;
  std::uint64_t rebuild_generation = 0;  // 0: no rebuild in progress
  Position rebuild_checkpoint = 0;
};

// Checks the store, and every generation of the projection's read model (the serving one and
// a rebuild's) against the fold of the log up to its checkpoint, exactly; and that the views
// serve the serving generation and no other generation's tables are left.
Observed check_store(const std::filesystem::path& path) {
  Observed o;
  const EventStore store = EventStore::open(path);
  const VerifyResult verified = store.verify();
  REQUIRE_MESSAGE(verified.ok(), verified.message);
  const std::vector<RecordedEvent> events = store.read_all().to_vector();
  o.head = events.size();
  std::size_t misplaced = 0;
  for (std::size_t i = 0; i < events.size(); ++i) misplaced += events[i].position != i + 1;
  REQUIRE_MESSAGE(misplaced == 0, misplaced, " events are not at positions 1..head");
  CHECK(store.head_position() == o.head);

  std::vector<std::string> problems;
  std::optional<Model> serving, via_views, rebuild;
  std::set<std::string> tables, registered;
  // One read transaction: checkpoints and read models as of one commit.
  store.read_sql([&](Sql& sql) {
    if (!sql.query_integer("SELECT 1 FROM sqlite_master WHERE name = 'factum_projections'")) {
      return;
    }
    sql.query(
        "SELECT version, generation, rebuild_version, rebuild_generation FROM factum_projections "
        "WHERE name = 'tally'",
        {}, [&](const SqlRow& r) {
          o.set_up = true;
          o.version = static_cast<std::uint32_t>(r.integer(0));
          o.generation = static_cast<std::uint64_t>(r.integer(1));
          o.rebuild_version = static_cast<std::uint32_t>(r.integer(2));
          o.rebuild_generation = static_cast<std::uint64_t>(r.integer(3));
        });
    if (!o.set_up) return;
    const auto checkpoint = [&](const char* name) {
      const auto p = sql.query_integer("SELECT position FROM factum_checkpoints WHERE name = ?1",
                                       {std::string(name)});
      if (!p) problems.push_back(std::string("no checkpoint ") + name);
      return static_cast<Position>(p.value_or(0));
    };
    o.checkpoint = checkpoint("tally");
    serving = read_model(sql, "__g" + str(o.generation));
    via_views = read_model(sql, "");
    if (o.rebuild_generation != 0) {
      o.rebuild_checkpoint = checkpoint("tally#rebuild");
      rebuild = read_model(sql, "__g" + str(o.rebuild_generation));
    } else if (sql.query_integer("SELECT 1 FROM factum_checkpoints WHERE name = 'tally#rebuild'")) {
      problems.push_back("a checkpoint tally#rebuild without a rebuild");
    }
    sql.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'crash%'", {},
              [&](const SqlRow& r) { tables.insert(r.text(0)); });
    sql.query(
        "SELECT generation, logical FROM factum_projection_tables WHERE projection = 'tally'", {},
        [&](const SqlRow& r) {
          registered.insert(r.text(1) + "__g" + str(static_cast<std::uint64_t>(r.integer(0))));
        });
  });
  if (!o.set_up) {
    // Killed before the projection's setup committed: nothing of it may exist.
    CHECK(ProjectionEngine::recorded(store).empty());
    return o;
  }

  // What the engine records agrees, and shows no failure and nothing skipped.
  const auto recorded = ProjectionEngine::recorded(store);
  REQUIRE(recorded.size() == 1);
  const ProjectionStatus& s = recorded.front();
  const auto expect = [&](bool ok, const std::string& problem) {
    if (!ok) problems.push_back(problem);
  };
  expect(s.name == "tally" && s.version == o.version && s.generation == o.generation &&
             s.checkpoint == o.checkpoint && s.rebuild_checkpoint == o.rebuild_checkpoint,
         "recorded: version " + str(std::uint64_t{s.version}) + " generation " + str(s.generation) +
             " checkpoint " + str(s.checkpoint) + " rebuild checkpoint " +
             str(s.rebuild_checkpoint));
  expect(s.skipped == 0, "recorded " + str(s.skipped) + " skipped events");
  if (s.error) {
    problems.push_back("recorded failure at " + str(s.error->position) + " (" +
                       s.error->event_type + "): " + s.error->message);
  }
  expect((o.rebuild_generation == 0) == (o.rebuild_version == 0) &&
             (o.rebuild_generation == 0 || o.rebuild_generation > o.generation),
         "rebuild version " + str(std::uint64_t{o.rebuild_version}) + " generation " +
             str(o.rebuild_generation) + ", serving generation " + str(o.generation));

  // Each generation is the fold of the log up to its checkpoint; the views show the serving one.
  if (serving) {
    compare(*serving, events, o.checkpoint, "generation " + str(o.generation), problems);
  } else {
    problems.push_back("the serving generation " + str(o.generation) + " has no tables");
  }
  expect(serving && via_views && via_views->counts == serving->counts &&
             via_views->applied == serving->applied && via_views->applies == serving->applies,
         "the views do not show the serving generation " + str(o.generation));
  if (o.rebuild_generation != 0) {
    if (rebuild) {
      compare(*rebuild, events, o.rebuild_checkpoint,
              "rebuild generation " + str(o.rebuild_generation), problems);
    } else {
      problems.push_back("the rebuild generation " + str(o.rebuild_generation) + " has no tables");
    }
  }
  // The tables are those of the serving generation and the rebuild's: none left behind.
  std::set<std::string> want;
  for (const std::uint64_t g : {o.generation, o.rebuild_generation}) {
    if (g == 0) continue;
    for (const char* t : {"crash_applied", "crash_counts", "crash_tally"})
      want.insert(t + ("__g" + str(g)));
  }
  const auto join = [](const std::set<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += " " + n;
    return out;
  };
  expect(tables == want, "tables:" + join(tables) + "; expected:" + join(want));
  expect(registered == want, "registered tables:" + join(registered));

  std::string report;
  for (const std::string& p : problems) report += "\n  " + p;
  REQUIRE_MESSAGE(problems.empty(), "head ", o.head, ", serving generation ", o.generation, " at ",
                  o.checkpoint, ", rebuild generation ", o.rebuild_generation, " at ",
                  o.rebuild_checkpoint, ": the read model is not the fold of the log:", report);
  return o;
}

std::uint64_t pick_seed() {
  if (const char* s = std::getenv("FACTUM_CRASH_SEED")) return std::stoull(s);
  return std::random_device{}();
}

// A run of kills: how many rounds, and the projection's version (and whether the projector
// asks for a rebuild at its version) in each.
struct Scenario {
  int rounds = 0;
  std::function<int(int round)> version;
  std::function<bool(int round)> rebuild;
};

// Kills projectors round after round on one store (see the top of the file), checking the
// store after each round; then projects to the head and checks the whole log's fold.
void run_kills(const Scenario& scenario) {
  using namespace std::chrono;
  constexpr int kEarlyEvery = 5;
  // How long a child may take to start and apply an event: far beyond what a sanitized build
  // on a loaded machine needs; exceeding it means the child is stuck.
  constexpr auto kCueDeadline = seconds(30);
  const std::uint64_t seed = pick_seed();
  MESSAGE("seed ", seed, " (FACTUM_CRASH_SEED=", seed, " replays its choices)");
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  TempDir dir;
  const auto path = dir.file("store.db");
  const std::string store_arg = path.string();

  Observed before;
  int rounds_moved = 0;       // rounds in which a checkpoint (serving or rebuild) moved
  int rounds_grown = 0;       // rounds in which the log grew
  int rounds_rebuilding = 0;  // rounds that ended with a rebuild in progress
  int swaps = 0;              // rebuilds swapped in during the rounds
  int early_before_setup = 0;
  int late = 0;          // rounds whose projector was killed after it applied and appended events
  Position max_lag = 0;  // head - serving checkpoint after a kill
  const auto started = steady_clock::now();
  for (int round = 0; round < scenario.rounds; ++round) {
    CAPTURE(round);
    const bool early = round % kEarlyEvery == 0;
    const bool inline_mode = round % 2 == 1;
    const int companion = (round / 2) % 3;  // 0 none, 1 appender, 2 projector in the other mode
    const std::string mode = inline_mode ? "inline" : "async";
    const std::string other = inline_mode ? "async" : "inline";
    const std::string version = std::to_string(scenario.version(round));
    const std::string rebuild = scenario.rebuild(round) ? "1" : "0";
    constexpr std::size_t kBatchSizes[] = {1, 3, 16, 512};
    const std::string batch = std::to_string(kBatchSizes[rng() % 4]);
    const std::string threads = std::to_string(1 + rng() % 2);
    CAPTURE(mode);
    CAPTURE(companion);
    CAPTURE(version);
    CAPTURE(rebuild);
    CAPTURE(batch);
    CAPTURE(threads);
    const auto err = [&](const char* who) {
      return dir.file(std::string(who) + "-" + std::to_string(round) + ".err");
    };

    std::vector<std::pair<Child, std::string>> children;
    children.emplace_back(spawn_child({"project", store_arg, mode, version, rebuild, threads, batch,
                                       std::to_string(rng()), "<cue>"},
                                      err("projector")),
                          "projector");
    if (companion == 1) {
      children.emplace_back(
          spawn_child({"append", store_arg, std::to_string(rng()), "<cue>"}, err("appender")),
          "appender");
    } else if (companion == 2) {
      children.emplace_back(
          spawn_child({"project", store_arg, other, version, "0", std::to_string(rng() % 2),
                       std::to_string(kBatchSizes[rng() % 4]), std::to_string(rng()), "<cue>"},
                      err("second projector")),
          "second projector");
    }
    if (!early) {
      const auto deadline = steady_clock::now() + kCueDeadline;
      for (auto& [child, who] : children) {
        // The projector has applied an event and appended one; the others have started.
        const std::string_view wanted = &child == &children.front().first ? "PA" : "S";
        for (const char cue : wanted) {
          if (await_cue(child, cue, deadline)) continue;
          for (auto& [c, w] : children) ::kill(c.pid, SIGKILL);
          for (auto& [c, w] : children) ::waitpid(c.pid, nullptr, 0);
          FAIL(who, " sent no '", std::string(1, cue), "' within ", kCueDeadline.count(),
               " s (cues: \"", child.cues, "\"); stderr: ", slurp(child.err));
        }
      }
      ++late;
    }
    // Each child dies at its own random moment, 0-50 ms from now.
    std::vector<std::pair<milliseconds, std::size_t>> kills;
    for (std::size_t i = 0; i < children.size(); ++i)
      kills.emplace_back(milliseconds(rng() % 51), i);
    std::sort(kills.begin(), kills.end());
    const auto t0 = steady_clock::now();
    for (const auto& [at, i] : kills) {
      std::this_thread::sleep_until(t0 + at);
      kill_child(children[i].first, children[i].second);
    }

    const Observed now = check_store(path);
    if (!now.set_up) {
      REQUIRE_MESSAGE(early, "a projector that applied events left no projection");
      ++early_before_setup;
    }
    CHECK(now.head >= before.head);
    CHECK(now.version >= before.version);
    CHECK(now.generation >= before.generation);
    CHECK(now.checkpoint >= before.checkpoint);
    if (now.checkpoint != before.checkpoint || now.rebuild_checkpoint != before.rebuild_checkpoint)
      ++rounds_moved;
    if (now.head > before.head) ++rounds_grown;
    if (now.rebuild_generation != 0) ++rounds_rebuilding;
    if (before.set_up && now.generation > before.generation) ++swaps;
    max_lag = std::max(max_lag, now.head - now.checkpoint);
    before = now;
  }
  const auto killing = duration_cast<milliseconds>(steady_clock::now() - started);

  // To the end: a projector runs to the head (finishing any rebuild) and stops (async), then
  // one in inline mode appends and reaches the head again. The read model is then the fold of
  // the whole log, built by the last round's version.
  const int last_version = scenario.version(scenario.rounds - 1);
  for (const auto& [mode, appends] : {std::pair{"async", "0"}, std::pair{"inline", "20"}}) {
    CAPTURE(mode);
    Child last = spawn_child({"catchup", store_arg, mode, std::to_string(last_version), appends},
                             dir.file("catchup.err"));
    run_to_end(last, seconds(120));
    const Observed end = check_store(path);
    CHECK(end.set_up);
    CHECK(end.version == static_cast<std::uint32_t>(last_version));
    CHECK(end.rebuild_generation == 0);
    CHECK(end.checkpoint == end.head);
    CHECK(end.head >= before.head);
    before = end;
  }
  MESSAGE(scenario.rounds, " kills in ", killing.count(), " ms (", late,
          " after the projector applied and appended events): a checkpoint moved in ", rounds_moved,
          " rounds, the log grew in ", rounds_grown, "; ", rounds_rebuilding,
          " rounds ended mid-rebuild, ", swaps, " rebuilds swapped in; ", early_before_setup,
          " early kills came before the projection's setup; largest lag after a kill ", max_lag,
          "; final log ", before.head, " events, generation ", before.generation);
  // The kills hit projectors at work, not only starting ones.
  CHECK(rounds_moved >= 1);
  CHECK(rounds_grown >= late);
}

}  // namespace

TEST_CASE("projectors killed at random moments lose no event and apply none twice") {
  run_kills({.rounds = 24, .version = [](int) { return 1; }, .rebuild = [](int) { return false; }});
}

// Blue/green rebuilds killed at random moments: rebuilds at the same version (the serving
// generation stays current meanwhile), then a version change (it stays as of the rebuild's
// start). Each generation, and the swap, must be exactly once.
TEST_CASE(
    "projectors killed at random moments while rebuilding lose no event and apply none twice") {
  run_kills({.rounds = 18,
             .version = [](int round) { return round < 9 ? 1 : 2; },
             .rebuild = [](int round) { return round == 3; }});
}
