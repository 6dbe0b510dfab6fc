// Snapshots of aggregates that hold personal values (personal.hpp): the values are encrypted in
// the snapshot under their subjects' keys like in events, so a forget erases them in both; a
// snapshot never keeps in plaintext what the log forgot.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include <factum/factum.hpp>

#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::temp_store_location;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

struct Joined {
  static constexpr std::string_view event_type = "test.member.Joined";
  Personal<std::string> name;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& name;
  }
};
struct Visited {
  static constexpr std::string_view event_type = "test.member.Visited";
  template <class Ar>
  void serialize(Ar&, unsigned) {}
};

class Member : public Aggregate<Member, Joined, Visited> {
 public:
  static constexpr std::string_view category = "member";
  static constexpr std::uint32_t snapshot_version = 1;

  void join(const std::string& name) { raise(Joined{{"member:" + id(), name}}); }
  void visit() { raise(Visited{}); }
  void apply(const Joined& e) { name_ = e.name; }
  void apply(const Visited&) { ++visits_; }
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& name_& visits_;
  }
  const Personal<std::string>& name() const { return name_; }
  std::int64_t visits() const { return visits_; }

 private:
  Personal<std::string> name_;
  std::int64_t visits_ = 0;
};

std::string text(const Bytes& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

}  // namespace

TEST_CASE("a snapshot holds personal values encrypted, and a forget erases them there too") {
  TempDir dir;
  const std::filesystem::path kek = dir.file("kek.bin");
  std::ofstream(kek, std::ios::binary) << std::string(32, 'z');
  StoreOptions o = TempStore::fast_options();
  o.personal_data.key_provider = std::make_shared<FileKeyProvider>(kek);
  EventStore store = EventStore::open(temp_store_location(dir), o);
  EventRegistry registry;
  registry.add<Joined>().add<Visited>().use_keyring(store.keyring());
  SnapshotStore snapshots(store);
  RepositoryOptions options;
  options.snapshots = SnapshotPolicy::every_n(1);
  Repository<Member> members(store, registry, snapshots, options);

  members.execute("1", [](Member& m) { m.join("Grace Hopper-Unique"); });
  members.execute("1", [](Member& m) { m.visit(); });
  const std::vector<Snapshot> taken = snapshots.newest("member-1", 100, 10);
  REQUIRE(taken.size() == 2);
  for (const Snapshot& s : taken) CHECK(text(s.state).find("Grace") == std::string::npos);

  const Member loaded = members.load("1");
  CHECK(loaded.name().value() == "Grace Hopper-Unique");
  CHECK(loaded.visits() == 1);
  CHECK(members.snapshots_ignored() == 0);  // it came from the snapshot

  store.forget("member:1");
  const Member after = members.load("1");
  CHECK(after.name().is_erased());
  CHECK(after.visits() == 1);
  CHECK(members.snapshots_ignored() == 0);  // still from the snapshot, whose value is gone
  // A new snapshot of the erased state keeps the erased value as it was (no key to make).
  members.execute("1", [](Member& m) { m.visit(); });
  CHECK(members.load("1").name().is_erased());
  CHECK(members.load("1").visits() == 2);
  CHECK(store.verify().ok());
}
