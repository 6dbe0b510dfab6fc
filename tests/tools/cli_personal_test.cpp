// `factum forget` and `factum subjects`: erasure of personal data from the command line, with no
// key-encryption key at hand (deleting a key needs no secret); `read` and `tail` showing
// personal values by subject and state; `export --with-keys` and `import` moving keys wrapped.
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
  std::vector<std::string> names() const { return names_in(path); }
  std::vector<std::string> names_in(const std::filesystem::path& db) const {
    EventStore store = EventStore::open(db, options());
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

TEST_CASE("read and tail show personal values by subject: erased once forgotten, never bytes") {
  PersonalStore p;
  CHECK(run_cli({"forget", p.path.string(), "guest:1"}).code == 0);
  const CliResult read = run_cli({"read", p.path.string(), "guest-1"});
  CHECK(read.code == 0);
  CHECK(contains(read.out, "guest:1=<erased>"));
  const CliResult tail = run_cli({"tail", p.path.string()});
  CHECK(contains(tail.out, "guest:1=<erased>"));
  CHECK(contains(tail.out, "guest:2=<encrypted>"));
  const CliResult json = run_cli({"read", p.path.string(), "guest-2", "--json"});
  const Json j = Json::parse(json.out);
  REQUIRE(j.contains("personal"));
  CHECK(j["personal"][0]["subject"] == "guest:2");
  CHECK(j["personal"][0]["state"] == "encrypted");
  CHECK(j["metadata"].dump().find("factum.subjects") != std::string::npos);
}

TEST_CASE(
    "export carries ciphertext and keys travel only with --with-keys (wrapped) while forgets "
    "hold") {
  PersonalStore p;
  CHECK(run_cli({"forget", p.path.string(), "guest:2"}).code == 0);
  const std::filesystem::path plain = p.dir.file("plain.jsonl");
  const std::filesystem::path keyed = p.dir.file("keyed.jsonl");
  CHECK(run_cli({"export", p.path.string(), "-o", plain.string()}).code == 0);
  const CliResult e = run_cli({"export", p.path.string(), "--with-keys", "-o", keyed.string()});
  CHECK(e.code == 0);
  CHECK(contains(e.err, "exported 1 subject keys"));
  const std::string keyed_text = slurp(keyed);
  CHECK(keyed_text.find("Ann") == std::string::npos);  // neither values nor keys in clear
  CHECK(contains(keyed_text, "\"subject_key\""));
  CHECK(contains(keyed_text, "\"keys\":1"));
  CHECK_FALSE(contains(slurp(plain), "subject_key"));

  // Without the keys the copy's values are erased; with them they read, the forgotten stays so.
  const std::filesystem::path copy1 = p.dir.file("copy1.db");
  const std::filesystem::path copy2 = p.dir.file("copy2.db");
  CHECK(run_cli({"import", copy1.string(), plain.string()}).code == 0);
  CHECK(p.names_in(copy1) == std::vector<std::string>{"<erased>", "<erased>"});
  const CliResult i = run_cli({"import", copy2.string(), keyed.string()});
  CHECK(i.code == 0);
  CHECK(contains(i.err, "and 1 subject keys"));
  CHECK(p.names_in(copy2) == std::vector<std::string>{"Ann", "<erased>"});
  const CliResult subjects = run_cli({"subjects", copy2.string(), "--json"});
  CHECK(contains(subjects.out, R"("subject":"guest:2")"));
  CHECK(contains(subjects.out, R"("state":"forgotten")"));

  // A key line removed (or one added) is a damaged export: the trailer counts them.
  std::string cut = keyed_text;
  const std::size_t at = cut.find("{\"subject_key\"");
  REQUIRE(at != std::string::npos);
  cut.erase(at, cut.find('\n', at) - at + 1);
  const std::filesystem::path cut_file = p.dir.file("cut.jsonl");
  std::ofstream(cut_file) << cut;
  const CliResult refused = run_cli({"import", p.dir.file("copy3.db").string(), cut_file.string()});
  CHECK(refused.code == 3);
  CHECK(contains(refused.err, "subject keys"));
  CHECK_FALSE(std::filesystem::exists(p.dir.file("copy3.db")));
}

TEST_CASE("subjects --lint flags e-mail addresses where no forget can erase them") {
  PersonalStore p;
  const CliResult clean = run_cli({"subjects", p.path.string(), "--lint"});
  CHECK(clean.code == 0);
  CHECK(contains(clean.out, "no stream id, actor or metadata value"));
  {
    EventStore store = EventStore::open(p.path, p.options());
    EventData e = make_event();
    e.metadata.actor = "support@example.org";
    e.metadata.values["contact"] = "write to ann.smith@example.com, please";
    e.metadata.values["note"] = "@home, not an address";
    store.append("user-ann@example.com", ExpectedVersion::any(), e);
  }
  const CliResult lint = run_cli({"subjects", p.path.string(), "--lint"});
  CHECK(lint.code == 1);
  CHECK(contains(lint.out, "position 3: stream id 'user-ann@example.com'"));
  CHECK(contains(lint.out, "position 3: actor 'support@example.org'"));
  CHECK(contains(lint.out, "metadata value contact"));
  CHECK_FALSE(contains(lint.out, "metadata value note"));
  CHECK(contains(lint.err, "3 places of the log look like personal data"));
}

}  // namespace
}  // namespace factum::test
