// Processes forked from one parent: the ids they generate and the appends they make.
// fork() copies the parent's memory, including the per-thread state of the id generator; the
// children must still make distinct ids, and no child's append may be taken for another's.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_event;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

constexpr int kChildren = 4;
constexpr int kAppendsPerChild = 100;
constexpr int kRounds = 20;

// The child's work: kAppendsPerChild appends of one event each to "race-1", each with the
// version just read as its expected version, retried on ConcurrencyError. Returns the count
// of acknowledged appends, or 255 when anything else was thrown.
int append_racing(const std::filesystem::path& path, int child) noexcept {
  try {
    auto store = EventStore::open(path, TempStore::fast_options());
    int acknowledged = 0;
    while (acknowledged < kAppendsPerChild) {
      const StreamVersion version = store.stream_version("race-1");
      const std::string payload = std::to_string(child) + ":" + std::to_string(acknowledged);
      try {
        store.append("race-1", ExpectedVersion::exact(version), make_event("test.Raced", payload));
        ++acknowledged;
      } catch (const ConcurrencyError&) {
        // another child was first: read the version again and retry
      }
    }
    return acknowledged;
  } catch (...) {
    return 255;
  }
}

// Forks `children` processes running `body(index)`; returns their exit codes.
template <typename Body>
std::vector<int> run_forked(int children, const Body& body) {
  std::vector<pid_t> pids;
  for (int i = 0; i < children; ++i) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(body(i));  // never returns into the test runner
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (const pid_t pid : pids) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

}  // namespace

TEST_CASE("processes forked from one parent lose no acknowledged append") {
  for (int round = 0; round < kRounds; ++round) {
    CAPTURE(round);
    TempDir dir;
    const auto path = dir.file("race.db");
    { auto create = EventStore::open(path, TempStore::fast_options()); }
    (void)EventId::generate();  // the parent's generator state is what fork() copies
    const auto codes = run_forked(kChildren, [&](int i) { return append_racing(path, i); });
    for (const int code : codes) CHECK(code == kAppendsPerChild);
    auto store = EventStore::open(path, TempStore::fast_options());
    CHECK(store.stream_version("race-1") == kChildren * kAppendsPerChild);
    std::set<std::string> payloads;
    for (const RecordedEvent& e : store.read_stream("race-1")) {
      payloads.insert(
          std::string(reinterpret_cast<const char*>(e.payload.data()), e.payload.size()));
    }
    CHECK(payloads.size() == static_cast<std::size_t>(kChildren * kAppendsPerChild));
    CHECK(store.verify().ok());
  }
}

// The random part of an id (after the 48-bit millisecond): without a reseed, a forked child
// continues the parent's generator, so its first id has the parent's next random part whether
// or not the millisecond changed in between.
static std::vector<std::uint8_t> random_part(const EventId& id) {
  return {id.bytes().begin() + 6, id.bytes().end()};
}

TEST_CASE("ids generated after fork() differ from the parent's and the siblings'") {
  (void)EventId::generate();  // the parent's generator state is what fork() copies
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  // Each child sends its ids in one write of 1,600 bytes: under PIPE_BUF (4096), so atomic, and
  // each child's ids arrive together, its first id first.
  constexpr int kIds = 100;
  const auto codes = run_forked(3, [&](int) {
    std::vector<std::uint8_t> block;
    for (int i = 0; i < kIds; ++i) {
      const auto bytes = EventId::generate().bytes();
      block.insert(block.end(), bytes.begin(), bytes.end());
    }
    return write(fds[1], block.data(), block.size()) == static_cast<ssize_t>(block.size()) ? 0 : 1;
  });
  close(fds[1]);
  for (const int code : codes) CHECK(code == 0);
  std::vector<EventId> parent;
  for (int i = 0; i < kIds; ++i) parent.push_back(EventId::generate());
  std::vector<EventId> children;
  EventId::Bytes bytes{};
  while (read(fds[0], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size())) {
    children.emplace_back(bytes);
  }
  close(fds[0]);
  REQUIRE(children.size() == 3U * kIds);
  // The first id of each process after the fork: four different random parts.
  const std::set<std::vector<std::uint8_t>> firsts{random_part(parent[0]), random_part(children[0]),
                                                   random_part(children[kIds]),
                                                   random_part(children[2 * kIds])};
  CHECK(firsts.size() == 4);
  std::set<EventId> all(parent.begin(), parent.end());
  all.insert(children.begin(), children.end());
  CHECK(all.size() == 4U * kIds);
}
