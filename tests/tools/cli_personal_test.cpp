// `factum forget` and `factum subjects`: erasure of personal data from the command line, with no
// key-encryption key at hand (deleting a key needs no secret).
#include <fstream>

#include "cli_fixture.hpp"
#include "factum/eventstore/event_registry.hpp"
#include "factum/eventstore/personal.hpp"

namespace factum::test {
namespace {

struct Signed {
  static constexpr std::string_view event_type = "test.Signed";
  Personal<std::string> name;
  template <class A>
  void serialize(A& ar, unsigned) {
    ar& name;
  }
};

// A store file with the values of two subjects, and the registry that reads them.
struct PersonalStore {
  TempDir dir;
  std::filesystem::path path = dir.file("personal.db");
  std::filesystem::path kek = dir.file("kek.bin");

  PersonalStore() {
    std::ofstream(kek, std::ios::binary) << std::string(32, 'c');
    EventStore store = EventStore::open(path, options());
    EventRegistry registry;
    registry.add<Signed>().use_keyring(store.keyring());
    store.append("guest-1", ExpectedVersion::any(), registry, Signed{{"guest:1", "Ann"}});
    store.append("guest-2", ExpectedVersion::any(), registry, Signed{{"guest:2", "Bob"}});
  }
  StoreOptions options() const {
    StoreOptions o = TempStore::fast_options();
    o.personal_data.key_provider = std::make_shared<FileKeyProvider>(kek);
    return o;
  }
  // The names as the library reads them now ("<erased>" for an erased one).
  std::vector<std::string> names() const {
    EventStore store = EventStore::open(path, options());
    EventRegistry registry;
    registry.add<Signed>().use_keyring(store.keyring());
    std::vector<std::string> out;
    for (const auto& d :
         registry.typed<std::variant<Signed>>(store.read_all(), UnknownEvents::skip)) {
      out.push_back(std::get<Signed>(d.event).name.value_or("<erased>"));
    }
    return out;
  }
};

TEST_CASE("forget deletes a subject's key from the command line, and subjects lists both states") {
  PersonalStore p;
  const CliResult list = run_cli({"subjects", p.path.string()});
  CHECK(list.code == 0);
  CHECK(contains(list.out, "guest:1"));
  CHECK(contains(list.out, "active"));
  const CliResult f = run_cli({"forget", p.path.string(), "guest:1"});
  CHECK(f.code == 0);
  CHECK(
      contains(f.out, "forgot guest:1: its key is deleted; factum.SubjectForgotten at position 3"));
  CHECK(p.names() == std::vector<std::string>{"<erased>", "Bob"});
  const Json j = Json::parse(
      run_cli({"subjects", p.path.string(), "--json"})
          .out.substr(0, run_cli({"subjects", p.path.string(), "--json"}).out.find('\n')));
  CHECK(j["subject"] == "guest:1");
  CHECK(j["state"] == "forgotten");
  CHECK(j.contains("forgotten_at"));
  CHECK(run_cli({"verify", p.path.string()}).code == 0);
  // A subject id that is a name or an address is refused before anything is written.
  const CliResult bad = run_cli({"forget", p.path.string(), "ann@example.com"});
  CHECK(bad.code == 1);
  CHECK(contains(bad.err, "subject id"));
  const CliResult again = run_cli({"forget", p.path.string(), "guest:1", "--json"});
  CHECK(Json::parse(again.out)["had_key"] == false);
}

}  // namespace
}  // namespace factum::test
