// Several processes appending to one store: the file's write lock (on PostgreSQL, the log's
// ordering lock) and the version check inside the transaction keep versions and positions exact.
// The writers are separate programs (support/writer_child.cpp), started with posix_spawn. Run
// twice: on a SQLite file, and on a schema of the PostgreSQL test server (the "pg/" cases), the
// store's location from temp_store_location.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

using namespace factum;
using factum::test::slurp;
using factum::test::temp_store_location;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

// A child process running writer_child with stdin from `stdin_fd`, stdout and stderr in files.
struct Child {
  pid_t pid = -1;
  std::filesystem::path out;
  std::filesystem::path err;
};

Child spawn_writer(const std::vector<std::string>& args, int stdin_fd,
                   const std::filesystem::path& out, const std::filesystem::path& err) {
  std::vector<std::string> all{FACTUM_WRITER_CHILD};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stdin_fd, STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Child child{-1, out, err};
  const int rc = posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE_MESSAGE(rc == 0, "posix_spawn failed: ", rc);
  return child;
}

// Waits for the child to exit; kills it (the test then fails) when it takes over a minute.
int wait_exit(const Child& child) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  int status = 0;
  while (::waitpid(child.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, &status, 0);
      FAIL("writer_child did not finish within a minute");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

// A pipe whose write end the children do not inherit: closing it starts them all at once.
struct StartSignal {
  StartSignal() { REQUIRE(::pipe2(fds, O_CLOEXEC) == 0); }
  ~StartSignal() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  int read_end() const { return fds[0]; }
  void fire() {
    ::close(fds[1]);
    fds[1] = -1;
  }
  int fds[2] = {-1, -1};
};

struct Ack {
  std::string stream;
  StreamVersion version = 0;
  Position position = 0;
  std::string id;
};

struct RaceReport {
  std::vector<Ack> acks;
  std::uint64_t conflicts = 0;
};

RaceReport parse_race_output(const std::string& text) {
  RaceReport report;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    if (word == "ACK") {
      Ack a;
      in >> a.stream >> a.version >> a.position >> a.id;
      report.acks.push_back(a);
    } else if (word == "CONFLICTS") {
      in >> report.conflicts;
    }
  }
  return report;
}

// Starts `writers` race children on `path` at once, each appending `count` events from `threads`
// threads, and returns what each acknowledged. (The threads of a child share its stdout; each ACK
// line is one write(2), which POSIX makes atomic against the others on a regular file.)
std::vector<RaceReport> run_race(const TempDir& dir, const std::filesystem::path& path, int writers,
                                 int count, int streams, int threads = 1) {
  StartSignal start;
  std::vector<Child> children;
  for (int w = 0; w < writers; ++w) {
    const std::string tag = std::to_string(w);
    std::vector<std::string> args{"race", path.string(), tag, std::to_string(count),
                                  std::to_string(streams)};
    if (threads != 1) args.push_back(std::to_string(threads));
    children.push_back(
        spawn_writer(args, start.read_end(), dir.file("out-" + tag), dir.file("err-" + tag)));
  }
  start.fire();
  std::vector<int> statuses;
  for (const Child& c : children) statuses.push_back(wait_exit(c));
  std::vector<RaceReport> reports;
  for (std::size_t w = 0; w < children.size(); ++w) {
    CAPTURE(w);
    INFO("writer_child stderr: ", slurp(children[w].err));
    REQUIRE(WIFEXITED(statuses[w]));
    REQUIRE(WEXITSTATUS(statuses[w]) == 0);
    reports.push_back(parse_race_output(slurp(children[w].out)));
  }
  return reports;
}

// Every acknowledged append is stored where its writer was told, once; nothing else is stored;
// positions and each stream's versions are gap-free; the chain verifies.
void check_race_result(const std::filesystem::path& path, const std::vector<RaceReport>& reports,
                       std::size_t expected_total) {
  EventStore store = EventStore::open(path, TempStore::fast_options());
  CHECK(store.verify().ok());
  const auto events = store.read_all().to_vector();
  REQUIRE(events.size() == expected_total);
  std::map<std::string, const RecordedEvent*> by_id;
  std::map<std::string, StreamVersion> last_version;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const RecordedEvent& e = events[i];
    CHECK(e.position == i + 1);
    CHECK(e.stream_version == ++last_version[e.stream_id]);
    CHECK(by_id.emplace(e.id.to_string(), &e).second);
  }
  std::size_t acked = 0;
  for (const RaceReport& r : reports) {
    for (const Ack& a : r.acks) {
      ++acked;
      const auto it = by_id.find(a.id);
      REQUIRE(it != by_id.end());
      CHECK(it->second->stream_id == a.stream);
      CHECK(it->second->stream_version == a.version);
      CHECK(it->second->position == a.position);
    }
  }
  CHECK(acked == expected_total);
}

}  // namespace

TEST_CASE("4 processes appending with exact expected versions leave one winner per version") {
  constexpr int kWriters = 4;
  constexpr int kCount = 100;
  constexpr int kStreams = 3;
  TempDir dir;
  const auto path = temp_store_location(dir);
  // Held open through the race, so the writers race on appends, not on opening the file.
  const EventStore keeper = EventStore::open(path, TempStore::fast_options());
  const auto reports = run_race(dir, path, kWriters, kCount, kStreams);
  std::uint64_t conflicts = 0;
  for (const RaceReport& r : reports) {
    CHECK(r.acks.size() == static_cast<std::size_t>(kCount));
    conflicts += r.conflicts;
  }
  MESSAGE("version conflicts between the processes: ", conflicts);
  CHECK(conflicts > 0);  // the writers did race
  check_race_result(path, reports, kWriters * kCount);
}

// Threads within each process race as well as the processes: on PostgreSQL, a process's appends
// share its group commit (each under a savepoint, conflicting ones rolled back alone) while the
// processes take turns on the log's ordering lock.
TEST_CASE(
    "4 processes of 16 threads appending with exact expected versions leave no gap, no "
    "duplicate and no lost acknowledged append") {
  constexpr int kWriters = 4;
  constexpr int kThreads = 16;
  constexpr int kCount = kThreads * 8;  // per process: 8 appends per thread
  // Fewer streams than threads, and coprime with their number: each thread moves from stream to
  // stream, and threads of one process as well as of different processes meet on each.
  constexpr int kStreams = 7;
  TempDir dir;
  const auto path = temp_store_location(dir);
  const EventStore keeper = EventStore::open(path, TempStore::fast_options());  // as above
  const auto started = std::chrono::steady_clock::now();
  const auto reports = run_race(dir, path, kWriters, kCount, kStreams, kThreads);
  const auto took = std::chrono::steady_clock::now() - started;
  std::uint64_t conflicts = 0;
  for (const RaceReport& r : reports) {
    CHECK(r.acks.size() == static_cast<std::size_t>(kCount));
    conflicts += r.conflicts;
  }
  MESSAGE("appends: ", kWriters * kCount, " by ", kWriters, " processes x ", kThreads,
          " threads in ", std::chrono::duration_cast<std::chrono::milliseconds>(took).count(),
          " ms; version conflicts: ", conflicts);
  CHECK(conflicts > 0);
  check_race_result(path, reports, kWriters * kCount);
}

TEST_CASE("processes opening one store file at the same moment all open it and append") {
  constexpr int kWriters = 4;
  constexpr int kCount = 5;
  const auto race_rounds = [&](bool create_first) {
    for (int round = 0; round < 5; ++round) {
      CAPTURE(round);
      TempDir dir;
      const auto path = temp_store_location(dir);
      if (create_first) EventStore::open(path, TempStore::fast_options());
      const auto reports = run_race(dir, path, kWriters, kCount, 2);
      check_race_result(path, reports, kWriters * kCount);
    }
  };
  SUBCASE("a new file") { race_rounds(false); }
  SUBCASE("a store that no process has open") { race_rounds(true); }
}
