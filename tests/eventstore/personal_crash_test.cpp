// A forget across crashes: the key's deletion and the factum.SubjectForgotten fact commit
// together or not at all. Each crash is a forked child killed by SIGKILL: inside the forget's
// transaction (after the key's row was changed, before the commit), and at unplanned moments of
// a run of forgets (the commit, the checkpoint that purges the WAL). Both backends.
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "factum/eventstore/event_registry.hpp"
#include "factum/eventstore/personal.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace std::chrono_literals;
using factum::test::in_killed_child;
using factum::test::temp_store_location;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

struct Joined {
  static constexpr std::string_view event_type = "test.Joined";
  Personal<std::string> name;
  template <class A>
  void serialize(A& ar, unsigned) {
    ar& name;
  }
};

struct Setup {
  TempDir dir;
  std::filesystem::path kek = dir.file("kek.bin");
  std::filesystem::path location = temp_store_location(dir);

  Setup() { std::ofstream(kek, std::ios::binary) << std::string(32, 'k'); }
  StoreOptions options() const {
    StoreOptions o = TempStore::fast_options();
    o.personal_data.key_provider = std::make_shared<FileKeyProvider>(kek);
    return o;
  }
  // `count` subjects user:0.. each with a value in the log.
  void join(int count) const {
    EventStore store = EventStore::open(location, options());
    EventRegistry registry;
    registry.add<Joined>().use_keyring(store.keyring());
    for (int i = 0; i < count; ++i) {
      const std::string id = std::to_string(i);
      store.append("user-" + id, ExpectedVersion::no_stream(), registry,
                   Joined{{"user:" + id, "Name " + id}});
    }
  }
  // Checks that every subject's key is gone exactly when the log holds its fact; returns how
  // many were forgotten.
  std::size_t check_consistent(int count) const {
    EventStore store = EventStore::open(location, options());
    std::set<std::string> facts;
    for (const RecordedEvent& e : store.read_stream(std::string(kSubjectsStream))) {
      const std::optional<std::string> s = forgotten_subject(e);
      REQUIRE(s);
      facts.insert(*s);
    }
    std::map<std::string, SubjectInfo::State> keys;
    for (const SubjectInfo& i : list_subjects(store)) keys[i.subject] = i.state;
    REQUIRE(keys.size() == static_cast<std::size_t>(count));
    for (const auto& [subject, state] : keys) {
      CAPTURE(subject);
      CHECK((state == SubjectInfo::State::forgotten) == (facts.count(subject) == 1));
    }
    CHECK(store.verify().ok());
    return facts.size();
  }
};

}  // namespace

TEST_CASE("a SIGKILL inside a forget's transaction leaves the key and no fact") {
  Setup s;
  s.join(2);
  in_killed_child([&] {
    EventStore store = EventStore::open(s.location, s.options());
    const boost::signals2::scoped_connection c =
        store.on_appending().connect([](AppendTransaction&) { raise(SIGKILL); });
    store.forget("user:1");  // the key's row is already changed when the slot runs
  });
  CHECK(s.check_consistent(2) == 0);
  EventStore store = EventStore::open(s.location, s.options());
  CHECK(store.keyring()->subject("user:1")->state == SubjectInfo::State::active);
  EventRegistry registry;
  registry.add<Joined>().use_keyring(store.keyring());
  for (const RecordedEvent& e : store.read_stream("user-1")) {
    CHECK(registry.decode<Joined>(e).name.value() == "Name 1");
  }
}

TEST_CASE("SIGKILLs at unplanned moments of a run of forgets never part a key from its fact") {
  Setup s;
  constexpr int kSubjects = 300;
  s.join(kSubjects);
  std::size_t forgotten = 0;
  for (int round = 0; round < 8 && forgotten < kSubjects; ++round) {
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(ready[0]);
      try {
        EventStore store = EventStore::open(s.location, s.options());
        if (write(ready[1], "r", 1) != 1) _exit(1);  // the kill's clock starts now
        // Forgets in order, from the first one not yet forgotten.
        for (int i = static_cast<int>(forgotten); i < kSubjects; ++i) {
          store.forget("user:" + std::to_string(i));
        }
      } catch (...) {
        _exit(1);
      }
      _exit(0);
    }
    close(ready[1]);
    pollfd p{ready[0], POLLIN, 0};
    CHECK(poll(&p, 1, 30000) == 1);  // bounded: a child that never opens fails the test
    close(ready[0]);
    std::this_thread::sleep_for(std::chrono::milliseconds(3 << round));  // 3 ms to 384 ms
    kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 1));
    CAPTURE(round);
    const std::size_t now = s.check_consistent(kSubjects);
    CHECK(now >= forgotten);
    forgotten = now;
  }
  MESSAGE("forgotten after the kills: " << forgotten << " of " << kSubjects);
}
