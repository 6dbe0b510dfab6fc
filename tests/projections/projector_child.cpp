// A projecting process for the projections crash test (crash_test.cpp). It runs the projection
// "tally", whose read model in the store's file makes a lost or doubled event visible:
//
//   crash_counts(stream PRIMARY KEY, n, sum)  per stream: events applied, sum of their positions
//   crash_applied(position PRIMARY KEY, id)   each applied position once (INSERT OR IGNORE)
//   crash_tally(k = 0, applies, disorder, last)
//     applies: every apply call counted (a double apply makes it exceed the applied rows);
//     last: the last position applied; disorder: applies whose position was not above `last`.
//
// Stores are opened with Durability::full and a busy timeout of 30 s.
//
//   projector_child project <store> <async|inline> <version> <rebuild 0|1> <append threads>
//                           <batch size> <seed> <cue fd>
//     Opens the store, adds "tally" at <version> (every version is the same fold) to a
//     ProjectionEngine in that mode (with that batch size, polling other processes' commits
//     every 10 ms), asks for a rebuild when <rebuild> is 1, writes "S" to <cue fd>, then
//     appends from <append threads> threads batches of 1..4 events, 0-2 ms apart, to streams
//     tally-0..tally-4 (sizes and streams drawn from <seed>) until killed (or a minute
//     passes). The first apply call writes "P" to <cue fd>; the first append to return, "A".
//   projector_child append <store> <seed> <cue fd>
//     Appends like one appending thread of project mode, without any projection; writes "S"
//     once the store is open, "A" once an append returned.
//   projector_child catchup <store> <async|inline> <version> <appends>
//     Adds "tally" at <version>, appends <appends> single events, waits until its serving
//     read model, built by <version>, reached the head, and exits 0 (1 when it failed or did
//     not within a minute).
//
// Exit status: 0 done, 1 an exception or failure (its message on stderr), 2 bad arguments,
// 3 not killed within a minute.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <factum/factum.hpp>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace factum;

std::atomic<int> g_cue_fd{-1};
std::atomic<bool> g_applied{false};
std::atomic<bool> g_appended{false};

// Writes the one-byte cue `c` to the parent's pipe (when there is one).
void send_cue(char c) {
  const int fd = g_cue_fd.load();
  if (fd < 0) return;
  ssize_t n = 0;
  while ((n = ::write(fd, &c, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) throw std::runtime_error("projector_child: cannot write to the cue fd");
}

class Tally : public Projection {
 public:
  explicit Tally(std::uint32_t version) : version_(version) {}
  std::string name() const override { return "tally"; }
  std::uint32_t version() const override { return version_; }
  void reset(ProjectionContext& ctx) override {
    Sql& sql = ctx.sql();
    sql.execute("CREATE TABLE " + ctx.table("crash_counts") +
                " (stream TEXT PRIMARY KEY, n INTEGER NOT NULL, sum INTEGER NOT NULL)");
    sql.execute("CREATE TABLE " + ctx.table("crash_applied") +
                " (position INTEGER PRIMARY KEY, id TEXT NOT NULL)");
    sql.execute("CREATE TABLE " + ctx.table("crash_tally") +
                " (k INTEGER PRIMARY KEY CHECK (k = 0), applies INTEGER NOT NULL, "
                "disorder INTEGER NOT NULL, last INTEGER NOT NULL)");
    sql.execute("INSERT INTO " + ctx.table("crash_tally") + " VALUES (0, 0, 0, 0)");
  }
  void apply(const RecordedEvent& e, ProjectionContext& ctx) override {
    if (!g_applied.exchange(true)) send_cue('P');
    if (ctx.key().position != e.position || ctx.key().id != e.id) {
      throw std::logic_error("projector_child: the context's key is not the event's");
    }
    const auto position = static_cast<std::int64_t>(e.position);
    Sql& sql = ctx.sql();
    sql.execute("INSERT INTO " + ctx.table("crash_counts") +
                    " (stream, n, sum) VALUES (?1, 1, ?2) ON CONFLICT (stream) DO UPDATE SET "
                    "n = n + 1, sum = sum + excluded.sum",
                {e.stream_id, position});
    sql.execute(
        "INSERT OR IGNORE INTO " + ctx.table("crash_applied") + " (position, id) VALUES (?1, ?2)",
        {position, e.id.to_string()});
    sql.execute("UPDATE " + ctx.table("crash_tally") +
                    " SET applies = applies + 1, disorder = disorder + (?1 <= last), last = ?1",
                {position});
  }

 private:
  std::uint32_t version_;
};

ProjectionMode parse_mode(const std::string& s) {
  if (s == "async") return ProjectionMode::async;
  if (s == "inline") return ProjectionMode::inline_append;
  throw std::invalid_argument("projector_child: mode must be async or inline, not " + s);
}

EventStore open_store(const std::string& path) {
  StoreOptions options;
  options.durability = Durability::full;
  options.busy_timeout = std::chrono::seconds(30);
  return EventStore::open(path, options);
}

// Appends batches of 1..4 events, 0-2 ms apart, until the process is killed (or a minute passes, so
// a child whose parent died does not run forever).
void append_loop(EventStore& store, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string stream = "tally-" + std::to_string(rng() % 5);
    std::vector<EventData> batch(1 + rng() % 4);
    for (EventData& e : batch) {
      e.type = "tally.Added";
      e.payload = to_bytes(std::to_string(rng()));
    }
    store.append(stream, ExpectedVersion::any(), batch);
    if (!g_appended.exchange(true)) send_cue('A');
    // A pause of 0-2 ms: a process appending back to back starves other processes of the
    // write lock (SQLite's busy handler polls; nothing queues), past any busy timeout.
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
  }
}

void run_appenders(EventStore& store, int threads, std::uint64_t seed) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&store, seed, t] {
      try {
        append_loop(store, seed * 1000 + static_cast<std::uint64_t>(t));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "projector_child: append: %s\n", e.what());
        std::_Exit(1);
      }
    });
  }
  for (std::thread& w : workers) w.join();
}

int run_project(const std::string& path, ProjectionMode mode, std::uint32_t version, bool rebuild,
                int threads, std::size_t batch_size, std::uint64_t seed, int cue_fd) {
  g_cue_fd = cue_fd;
  EventStore store = open_store(path);
  ProjectionEngine engine(store);
  engine.add(
      std::make_shared<Tally>(version),
      {.mode = mode, .batch_size = batch_size, .poll_interval = std::chrono::milliseconds(10)});
  if (rebuild) engine.rebuild("tally");
  send_cue('S');
  run_appenders(store, threads, seed);
  if (threads == 0) std::this_thread::sleep_for(std::chrono::minutes(1));
  std::fprintf(stderr, "projector_child: not killed within a minute\n");
  std::_Exit(3);
}

int run_append(const std::string& path, std::uint64_t seed, int cue_fd) {
  g_cue_fd = cue_fd;
  EventStore store = open_store(path);
  send_cue('S');
  run_appenders(store, 1, seed);
  std::fprintf(stderr, "projector_child: not killed within a minute\n");
  std::_Exit(3);
}

int run_catchup(const std::string& path, ProjectionMode mode, std::uint32_t version, int appends) {
  EventStore store = open_store(path);
  ProjectionEngine engine(store);
  engine.add(std::make_shared<Tally>(version), {.mode = mode});
  for (int i = 0; i < appends; ++i) {
    EventData e;
    e.type = "tally.Added";
    e.payload = to_bytes(std::to_string(i));
    store.append("tally-" + std::to_string(i % 5), ExpectedVersion::any(), e);
  }
  const bool idle = engine.wait_idle(std::chrono::minutes(1));
  const ProjectionStatus s = engine.status("tally");
  if (s.error) {
    std::fprintf(stderr, "projector_child: tally failed at %llu: %s\n",
                 static_cast<unsigned long long>(s.error->position), s.error->message.c_str());
    return 1;
  }
  if (!idle || s.checkpoint != store.head_position()) {
    std::fprintf(stderr, "projector_child: tally at %llu, head %llu\n",
                 static_cast<unsigned long long>(s.checkpoint),
                 static_cast<unsigned long long>(store.head_position()));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  try {
    if (args.size() == 10 && args[1] == "project") {
      return run_project(args[2], parse_mode(args[3]),
                         static_cast<std::uint32_t>(std::stoul(args[4])), args[5] == "1",
                         std::stoi(args[6]), static_cast<std::size_t>(std::stoull(args[7])),
                         std::stoull(args[8]), std::stoi(args[9]));
    }
    if (args.size() == 5 && args[1] == "append") {
      return run_append(args[2], std::stoull(args[3]), std::stoi(args[4]));
    }
    if (args.size() == 6 && args[1] == "catchup") {
      return run_catchup(args[2], parse_mode(args[3]),
                         static_cast<std::uint32_t>(std::stoul(args[4])), std::stoi(args[5]));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "projector_child: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: projector_child project <store> <async|inline> <version> <rebuild 0|1> "
               "<append threads> <batch size> <seed> <cue fd>\n"
               "       projector_child append <store> <seed> <cue fd>\n"
               "       projector_child catchup <store> <async|inline> <version> <appends>\n");
  return 2;
}
