// Personal data (personal.hpp): values encrypted per subject, forgotten by deleting the subject's
// key, with the hash chain still verifying; what a forget leaves in the files; keys made once
// under races; a KEK rotated without touching an event. Both backends (the file checks: SQLite).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>
#include <vector>

#include "factum/eventstore/event_registry.hpp"
#include "factum/eventstore/personal.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace std::chrono_literals;
using factum::test::eventually;
using factum::test::temp_store_location;
using factum::test::TempDir;
using factum::test::TempStore;

namespace {

struct Address {
  std::string street;
  std::string city;
  template <class A>
  void serialize(A& ar, unsigned) {
    ar& street& city;
  }
  friend bool operator==(const Address&, const Address&) = default;
};

struct UserRegistered {
  static constexpr std::string_view event_type = "test.UserRegistered";
  std::string user_id;
  Personal<std::string> name;
  Personal<Address> address;
  template <class A>
  void serialize(A& ar, unsigned) {
    ar& user_id& name& address;
  }
};

// A payment between two people: values of two subjects in one event.
struct MoneySent {
  static constexpr std::string_view event_type = "test.MoneySent";
  Personal<std::string> from;
  Personal<std::string> to;
  std::int64_t cents = 0;
  template <class A>
  void serialize(A& ar, unsigned) {
    ar& from& to& cents;
  }
};

using Events = std::variant<UserRegistered, MoneySent>;

std::filesystem::path write_kek(const TempDir& dir, const std::string& name, char fill) {
  const std::filesystem::path p = dir.file(name);
  std::ofstream(p, std::ios::binary) << std::string(32, fill);
  return p;
}

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A store with a key provider, and a registry that uses its keyring.
struct Personal_ {
  TempDir dir;
  std::filesystem::path kek = write_kek(dir, "kek.bin", 'k');
  std::filesystem::path location = temp_store_location(dir);
  EventStore store = EventStore::open(location, options());
  EventRegistry registry;

  Personal_() {
    registry.add<UserRegistered>().add<MoneySent>();
    registry.use_keyring(store.keyring());
  }
  StoreOptions options(std::chrono::milliseconds cache_for = 1000ms) const {
    StoreOptions o = TempStore::fast_options();
    o.personal_data.key_provider = std::make_shared<FileKeyProvider>(kek);
    o.personal_data.cache_for = cache_for;
    return o;
  }
  void register_user(const std::string& id, const std::string& name) {
    store.append("user-" + id, ExpectedVersion::no_stream(), registry,
                 UserRegistered{id, {"user:" + id, name}, {"user:" + id, {"1 Main St", "Oslo"}}});
  }
  std::vector<Decoded<Events>> all() const {
    std::vector<Decoded<Events>> out;
    for (const auto& d : registry.typed<Events>(store.read_all(), UnknownEvents::skip)) {
      out.push_back(d);
    }
    return out;
  }
};

}  // namespace

TEST_CASE("personal values round-trip encrypted: the stored payload holds no plaintext") {
  Personal_ p;
  p.register_user("7", "Ada Lovelace");
  const auto events = p.all();
  REQUIRE(events.size() == 1);
  const auto& u = std::get<UserRegistered>(events[0].event);
  CHECK(u.user_id == "7");
  CHECK(u.name.has_value());
  CHECK(u.name.value() == "Ada Lovelace");
  CHECK(u.name.subject() == "user:7");
  CHECK(u.address.value() == Address{"1 Main St", "Oslo"});
  const std::string stored(reinterpret_cast<const char*>(events[0].envelope.payload.data()),
                           events[0].envelope.payload.size());
  CHECK(stored.find("Ada") == std::string::npos);
  CHECK(stored.find("Oslo") == std::string::npos);
  CHECK(stored.find("user:7") != std::string::npos);  // the subject id is plain
  // Each value has its own nonce: the same plaintext twice is stored differently.
  p.register_user("8", "Ada Lovelace");
  const auto again = p.all();
  CHECK(again[0].envelope.payload != again[1].envelope.payload);
}

TEST_CASE("forget erases a subject's values only, appends the fact, and verify still passes") {
  Personal_ p;
  p.register_user("1", "Ann");
  p.register_user("2", "Bob");
  p.store.append("payment-1", ExpectedVersion::any(), p.registry,
                 MoneySent{{"user:1", "Ann"}, {"user:2", "Bob"}, 500});
  const Head before = p.store.head();
  const ForgetResult f = p.store.forget("user:1");
  CHECK(f.was_known);
  CHECK(f.purged);
  CHECK(f.position == before.position + 1);
  std::optional<RecordedEvent> fact;
  for (const RecordedEvent& e : p.store.read_all(f.position)) fact = e;
  REQUIRE(fact);
  CHECK(fact->stream_id == kSubjectsStream);
  CHECK(fact->type == kSubjectForgottenType);
  CHECK(std::string(reinterpret_cast<const char*>(fact->payload.data()), fact->payload.size()) ==
        "{\"subject\":\"user:1\"}");
  CHECK(forgotten_subject(*fact) == "user:1");
  CHECK(forgotten_subject(*p.store.read_all().begin()) == std::nullopt);

  const auto events = p.all();
  REQUIRE(events.size() == 3);
  const auto& ann = std::get<UserRegistered>(events[0].event);
  CHECK(ann.user_id == "1");  // plain fields stay
  CHECK(ann.name.is_erased());
  CHECK(ann.address.is_erased());
  CHECK_THROWS_AS(ann.name.value(), ErasedValueError);
  CHECK(ann.name.value_or("<erased>") == "<erased>");
  CHECK(std::get<UserRegistered>(events[1].event).name.value() == "Bob");
  const auto& paid = std::get<MoneySent>(events[2].event);
  CHECK(paid.from.is_erased());
  CHECK(paid.to.value() == "Bob");
  CHECK(paid.cents == 500);
  CHECK(p.store.verify().ok());
  CHECK(p.store.verify(before.hash).ok());  // nothing before the fact changed

  // Nothing personal of a forgotten subject is stored again; forgetting again is harmless.
  CHECK_THROWS_WITH_AS(p.store.append("user-1b", ExpectedVersion::any(), p.registry,
                                      MoneySent{{"user:1", "Ann"}, {"user:2", "Bob"}, 1}),
                       doctest::Contains("was forgotten"), InvalidArgument);
  const ForgetResult again = p.store.forget("user:1");
  CHECK_FALSE(again.was_known);
  CHECK(again.position == f.position + 1);
  const std::optional<SubjectInfo> info = p.store.keyring()->subject("user:1");
  REQUIRE(info);
  CHECK(info->state == SubjectInfo::State::forgotten);
  CHECK(info->forgotten_at.has_value());
  CHECK(p.store.keyring()->subject("user:2")->state == SubjectInfo::State::active);
}

TEST_CASE("a store reopened, or another store object, sees the forget and erases the values") {
  Personal_ p;
  p.register_user("1", "Ann");
  EventStore other = EventStore::open(p.location, p.options(50ms));
  EventRegistry registry;
  registry.add<UserRegistered>().add<MoneySent>().use_keyring(other.keyring());
  auto name_of = [&] {
    for (const auto& d : registry.typed<Events>(other.read_all(), UnknownEvents::skip)) {
      return std::get<UserRegistered>(d.event).name;
    }
    return Personal<std::string>();
  };
  CHECK(name_of().value() == "Ann");  // its keyring keeps the key for 50 ms
  p.store.forget("user:1");
  CHECK(eventually([&] { return name_of().is_erased(); }));
}

TEST_CASE("a value decrypts only in its own event and place: moved, it is refused, not erased") {
  Personal_ p;
  const std::shared_ptr<const Keyring> keys = p.store.keyring();
  const EventId a = EventId::generate();
  const EventId b = EventId::generate();
  const std::string sealed = keys->seal("user:1", "Ann", detail::personal_aad(a, 0, "user:1"));
  CHECK(keys->open("user:1", sealed, detail::personal_aad(a, 0, "user:1")) == "Ann");
  CHECK_THROWS_AS(keys->open("user:1", sealed, detail::personal_aad(b, 0, "user:1")), PayloadError);
  CHECK_THROWS_AS(keys->open("user:1", sealed, detail::personal_aad(a, 1, "user:1")), PayloadError);
  std::string altered = sealed;
  altered[altered.size() / 2] ^= 1;
  CHECK_THROWS_AS(keys->open("user:1", altered, detail::personal_aad(a, 0, "user:1")),
                  PayloadError);
  // Under another subject's key it does not decrypt either; a subject without a key is erased.
  keys->seal("user:2", "x", "aad");
  CHECK_THROWS_AS(keys->open("user:2", sealed, detail::personal_aad(a, 0, "user:1")), PayloadError);
  CHECK(keys->open("user:3", sealed, detail::personal_aad(a, 0, "user:3")) == std::nullopt);
}

TEST_CASE("without a keyring, personal values are not encoded and decode sealed") {
  Personal_ p;
  p.register_user("1", "Ann");
  EventRegistry plain;
  plain.add<UserRegistered>();
  CHECK_THROWS_WITH_AS(plain.encode(UserRegistered{"2", {"user:2", "Bob"}, {"user:2", {}}}),
                       doctest::Contains("use_keyring"), InvalidArgument);
  const UserRegistered u = plain.decode<UserRegistered>(*p.store.read_all().begin());
  CHECK(u.name.is_sealed());
  CHECK_FALSE(u.name.is_erased());
  CHECK(u.name.subject() == "user:1");
  CHECK_THROWS_AS(u.name.value(), ErasedValueError);
  // A sealed value encodes again as it was stored (an upcast without keys loses nothing).
  p.registry.encode(u);
  // Forgetting needs no key provider: deleting a key needs no secret.
  EventStore no_keys = EventStore::open(p.location, TempStore::fast_options());
  CHECK(no_keys.keyring() == nullptr);
  CHECK(no_keys.forget("user:1").was_known);
  CHECK(list_subjects(no_keys).at(0).state == SubjectInfo::State::forgotten);
  CHECK(eventually([&] {  // p's keyring keeps the key for up to a second
    return p.registry.decode<UserRegistered>(*p.store.read_all().begin()).name.is_erased();
  }));
}

TEST_CASE("subject ids are opaque ids: names, e-mail addresses and spaces are refused") {
  Personal_ p;
  for (const std::string& bad : {std::string(), std::string("ann@example.com"),
                                 std::string("Ann Smith"), std::string(129, 'a')}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(p.store.forget(bad), InvalidArgument);
    CHECK_THROWS_AS(p.store.append("user-9", ExpectedVersion::any(), p.registry,
                                   UserRegistered{"9", {bad, "Ann"}, {"u:9", {}}}),
                    InvalidArgument);
  }
  CHECK(p.store.head_position() == 0);
  CHECK(p.store.keyring()->subjects().empty());
}

TEST_CASE("threads encrypting for one new subject at once share one key") {
  Personal_ p;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        p.store.append("payment-" + std::to_string(t), ExpectedVersion::any(), p.registry,
                       MoneySent{{"user:new", "Ann"}, {"user:new", "Ann"}, i});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  int read = 0;
  for (const auto& d : p.all()) {
    CHECK(std::get<MoneySent>(d.event).from.value() == "Ann");
    ++read;
  }
  CHECK(read == 20);
  CHECK(p.store.keyring()->subjects().size() == 1);
}

TEST_CASE("a wrong KEK is refused at open, and a rotation re-wraps every key without an event") {
  Personal_ p;
  p.register_user("1", "Ann");
  p.register_user("2", "Bob");
  p.store.forget("user:2");
  const Head head = p.store.head();
  const std::filesystem::path kek2 = write_kek(p.dir, "kek2.bin", 'q');
  const std::string old_id = FileKeyProvider(p.kek).id();
  const std::string new_id = FileKeyProvider(kek2).id();
  StoreOptions o = p.options();
  o.personal_data.key_provider = std::make_shared<FileKeyProvider>(kek2);
  // Another KEK than the one that wraps the keys: refused at open, naming both, before any
  // value could be read as garbage or a key made under the wrong KEK.
  CHECK_THROWS_WITH_AS(EventStore::open(p.location, o),
                       doctest::Contains("wraps none of the 1 data keys"), InvalidArgument);
  CHECK_THROWS_WITH_AS(EventStore::open(p.location, o), doctest::Contains(old_id.c_str()),
                       InvalidArgument);
  // The rotation: open with the old KEK as the previous one.
  o.personal_data.previous_key_provider = std::make_shared<FileKeyProvider>(p.kek);
  {
    EventStore rotated = EventStore::open(p.location, o);
    EventRegistry registry;
    registry.add<UserRegistered>().add<MoneySent>().use_keyring(rotated.keyring());
    CHECK(registry.decode<UserRegistered>(*rotated.read_all().begin()).name.value() == "Ann");
    CHECK(rotated.keyring()->subject("user:1")->kek_id == new_id);
    CHECK(rotated.keyring()->rewrap(FileKeyProvider(p.kek)) == 0);  // nothing left under it
    CHECK(rotated.head() == head);
    CHECK(rotated.verify().ok());
  }
  // Now the old KEK is the wrong one.
  CHECK_THROWS_WITH_AS(EventStore::open(p.location, p.options()), doctest::Contains(new_id.c_str()),
                       InvalidArgument);
  // A provider that claims the right id but holds another key is refused too.
  struct Impostor final : KeyProvider {
    std::string claimed;
    FileKeyProvider other;
    Impostor(std::string id, const std::filesystem::path& p) : claimed(std::move(id)), other(p) {}
    std::string id() const override { return claimed; }
    Bytes wrap(std::span<const std::byte> k, std::string_view s) const override {
      return other.wrap(k, s);
    }
    Bytes unwrap(std::span<const std::byte> w, std::string_view s) const override {
      return other.unwrap(w, s);
    }
  };
  StoreOptions impostor = p.options();
  impostor.personal_data.key_provider = std::make_shared<Impostor>(new_id, p.kek);
  CHECK_THROWS_WITH_AS(EventStore::open(p.location, impostor), doctest::Contains("does not unwrap"),
                       InvalidArgument);
}

TEST_CASE("a value sealed before a forget is never stored after it, whichever store forgot") {
  Personal_ p;
  p.register_user("1", "Ann");
  // Encoded while the subject's key is cached (this store keeps it for a second)...
  const EventData early = p.registry.encode(MoneySent{{"user:1", "Ann"}, {"user:2", "Bob"}, 5});
  CHECK(detail::subjects_of(early.metadata) == std::vector<std::string>{"user:1", "user:2"});
  // ...forgotten through another store object (another process would do the same)...
  EventStore other = EventStore::open(p.location, TempStore::fast_options());
  other.forget("user:1");
  const Position head = p.store.head_position();
  // ...the append is refused inside its transaction, though this store's cache still has the key.
  CHECK_THROWS_WITH_AS(p.store.append("pay-1", ExpectedVersion::any(), {&early, 1}),
                       doctest::Contains("'user:1', which was forgotten"), InvalidArgument);
  const EventData late = p.registry.encode(MoneySent{{"user:1", "Ann"}, {"user:2", "Bob"}, 6});
  CHECK_THROWS_AS(p.store.append("pay-1", ExpectedVersion::any(), {&late, 1}), InvalidArgument);
  CHECK(p.store.head_position() == head);
  // An event whose values another store's keyring sealed has no key here: refused as well.
  Personal_ elsewhere;
  const EventData foreign =
      elsewhere.registry.encode(MoneySent{{"user:7", "Cy"}, {"user:8", "Di"}, 1});
  CHECK_THROWS_WITH_AS(p.store.append("pay-2", ExpectedVersion::any(), {&foreign, 1}),
                       doctest::Contains("has no key in this store"), InvalidArgument);
  CHECK(p.store.head_position() == head);
  // A plain subject's values still go in.
  p.store.append("pay-3", ExpectedVersion::any(), p.registry,
                 MoneySent{{"user:2", "Bob"}, {"user:3", "Cy"}, 1});
  CHECK(p.store.verify().ok());
}

TEST_CASE("a value sealed before this store's own forget is refused on a stream it knows") {
  Personal_ p;
  p.register_user("1", "Ann");
  // Two appends to pay-1: the writer knows the stream and the key table (on PostgreSQL its next
  // append there takes the one-round-trip way, whose guard checks the keys).
  p.store.append("pay-1", ExpectedVersion::any(), p.registry,
                 MoneySent{{"user:1", "Ann"}, {"user:2", "Bob"}, 1});
  p.store.append("pay-1", ExpectedVersion::any(), p.registry,
                 MoneySent{{"user:2", "Bob"}, {"user:3", "Cy"}, 2});
  const EventData early = p.registry.encode(MoneySent{{"user:1", "Ann"}, {"user:2", "Bob"}, 3});
  p.store.forget("user:1");  // through this store's own writer: what it remembers stays exact
  const Position head = p.store.head_position();
  CHECK_THROWS_WITH_AS(p.store.append("pay-1", ExpectedVersion::exact(2), {&early, 1}),
                       doctest::Contains("'user:1', which was forgotten"), InvalidArgument);
  CHECK(p.store.head_position() == head);
  // The same stream takes the values of a subject with a key, at the version left.
  const AppendResult r = p.store.append("pay-1", ExpectedVersion::exact(2), p.registry,
                                        MoneySent{{"user:2", "Bob"}, {"user:3", "Cy"}, 4});
  CHECK(r.last_position == head + 1);
  CHECK(p.store.verify().ok());
}

TEST_CASE("threads appending a subject's values while it is forgotten: none lands after the fact") {
  Personal_ p;
  p.register_user("1", "Ann");
  std::atomic<bool> stop{false};
  std::atomic<int> refused{0};
  std::atomic<int> stored{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !stop.load() && i < 400; ++i) {
        try {
          p.store.append("pay-" + std::to_string(t), ExpectedVersion::any(), p.registry,
                         MoneySent{{"user:1", "Ann"}, {"user:2", "Bob"}, i});
          ++stored;
        } catch (const InvalidArgument& e) {
          CHECK(std::string(e.what()).find("forgotten") != std::string::npos);
          ++refused;
        }
      }
    });
  }
  CHECK(eventually([&] { return stored.load() >= 6; }));
  const ForgetResult f = p.store.forget("user:1");
  CHECK(eventually([&] { return refused.load() >= 3; }));
  stop = true;
  for (auto& t : threads) t.join();
  // Every stored value of user:1 was written before the forget's fact.
  std::size_t before = 0;
  for (const RecordedEvent& e : p.store.read_all()) {
    const auto subjects = detail::subjects_of(e.metadata);
    if (std::find(subjects.begin(), subjects.end(), "user:1") == subjects.end()) continue;
    CHECK(e.position < f.position);
    ++before;
  }
  CHECK(before == static_cast<std::size_t>(stored.load()) + 1);
  CHECK(p.store.verify().ok());
}

TEST_CASE("an imported log forgets what it forgot, and keys move only when given, wrapped") {
  Personal_ p;
  p.register_user("1", "Ann");
  p.register_user("2", "Bob");
  const std::vector<WrappedKey> keys_before = wrapped_keys(p.store);  // both subjects
  REQUIRE(keys_before.size() == 2);
  p.store.forget("user:2");
  const std::vector<WrappedKey> keys = wrapped_keys(p.store);
  REQUIRE(keys.size() == 1);
  CHECK(keys[0].subject == "user:1");
  CHECK(keys[0].kek_id == FileKeyProvider(p.kek).id());
  std::vector<RecordedEvent> log;
  for (const RecordedEvent& e : p.store.read_all()) log.push_back(e);

  TempDir dir;
  StoreOptions o = p.options();
  EventStore copy = EventStore::open(temp_store_location(dir), o);
  copy.import_events(log);
  EventRegistry registry;
  registry.add<UserRegistered>().add<MoneySent>().use_keyring(copy.keyring());
  auto names = [&] {
    std::vector<Personal<std::string>> out;
    for (const auto& d : registry.typed<Events>(copy.read_all(), UnknownEvents::skip)) {
      out.push_back(std::get<UserRegistered>(d.event).name);
    }
    return out;
  };
  // Without the keys the values are erased; the forgotten subject is forgotten here too.
  CHECK(names().at(0).is_erased());
  CHECK(copy.keyring()->subject("user:2")->state == SubjectInfo::State::forgotten);
  // The keys as the source held them before the forget: the forgotten one is not taken back.
  CHECK(add_wrapped_keys(copy, keys_before) == 1);
  CHECK(add_wrapped_keys(copy, keys_before) == 0);  // again: nothing new
  CHECK(wrapped_keys(copy) == keys);
  CHECK(names().at(0).value() == "Ann");
  CHECK(names().at(1).is_erased());
  CHECK_THROWS_AS(copy.append("user-2b", ExpectedVersion::any(), registry,
                              UserRegistered{"2", {"user:2", "Bob"}, {"user:2", {}}}),
                  InvalidArgument);
  // Another key for a subject the copy holds is refused, adding none.
  std::vector<WrappedKey> clash = keys;
  clash[0].wrapped.push_back(std::byte{1});
  clash.push_back({"user:9", keys[0].kek_id, keys[0].wrapped, keys[0].created_at});
  CHECK_THROWS_WITH_AS(add_wrapped_keys(copy, clash), doctest::Contains("another key"),
                       InvalidArgument);
  CHECK_FALSE(copy.keyring()->subject("user:9").has_value());
  CHECK(copy.verify().ok());
  CHECK(copy.head() == p.store.head());
}

TEST_CASE("a key-encryption key file of the wrong size is refused by name") {
  TempDir dir;
  std::ofstream(dir.file("short.bin"), std::ios::binary) << "too short";
  CHECK_THROWS_WITH_AS(FileKeyProvider(dir.file("short.bin")), doctest::Contains("not 32"),
                       InvalidArgument);
  CHECK_THROWS_AS(FileKeyProvider(dir.file("missing.bin")), InvalidArgument);
}

TEST_CASE("a keyring keeps at most max_cached_keys subjects' keys, however many it reads") {
  TempDir dir;
  const std::filesystem::path kek = write_kek(dir, "kek.bin", 'm');
  StoreOptions o = TempStore::fast_options();
  o.personal_data.key_provider = std::make_shared<FileKeyProvider>(kek);
  o.personal_data.max_cached_keys = 100;
  EventStore store = EventStore::open(temp_store_location(dir), o);
  const FileKeyProvider provider(kek);
  const std::size_t subjects = 250;
  const std::vector<std::byte> key(32, std::byte{9});
  store.write_sql([&](Sql& sql) {  // the table filled directly (docs/erasure.md)
    sql.execute(table_ddl(sql,
                          "CREATE TABLE IF NOT EXISTS factum_subject_keys (subject TEXT PRIMARY "
                          "KEY, kek TEXT NOT NULL, wrapped BLOB, created_us INTEGER NOT NULL, "
                          "forgotten_us INTEGER)"));
    for (std::size_t i = 0; i < subjects; ++i) {
      const std::string s = "s:" + std::to_string(i);
      sql.execute("INSERT INTO factum_subject_keys VALUES (?1, ?2, ?3, 0, NULL)",
                  {s, provider.id(), provider.wrap(key, s)});
    }
  });
  const std::shared_ptr<const Keyring> keys = store.keyring();
  std::size_t most = 0;
  std::size_t refused = 0;
  for (std::size_t i = 0; i < subjects; ++i) {
    // Each key is unwrapped (and kept); the bytes are not a value of it.
    try {
      keys->open("s:" + std::to_string(i), std::string(40, 'x'), "aad");
    } catch (const PayloadError&) {
      ++refused;
    }
    most = std::max(most, keys->cached_keys());
  }
  CHECK(refused == subjects);
  CHECK(most == 100);
  CHECK(keys->cached_keys() < 100);
}

TEST_SUITE_BEGIN("sqlite-only");

TEST_CASE("a child process after fork() never repeats its parent's nonces") {
  Personal_ p;
  const std::shared_ptr<const Keyring> keys = p.store.keyring();
  const std::string aad = detail::personal_aad(EventId::generate(), 0, "user:1");
  keys->seal("user:1", "x", aad);  // the thread's nonce state exists before the fork
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string sealed = keys->seal("user:1", "x", aad);  // the key is cached
    const bool written = write(fds[1], sealed.data(), 13) == 13;
    _exit(written ? 0 : 1);
  }
  close(fds[1]);
  const std::string mine = keys->seal("user:1", "x", aad);
  char theirs[13] = {};
  CHECK(read(fds[0], theirs, 13) == 13);
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  // Version byte, then the 12-byte nonce: the same value under the same key, other nonces.
  CHECK(mine.substr(0, 13) != std::string(theirs, 13));
}

TEST_CASE("after forget, the key's bytes are in neither the file nor its WAL") {
  Personal_ p;
  p.register_user("1", "Ann Quixotic-Unique");
  for (int i = 2; i < 40; ++i) p.register_user(std::to_string(i), "Bob");  // keys beside it
  Bytes wrapped;
  p.store.read_sql([&](Sql& sql) {
    sql.query("SELECT wrapped FROM factum_subject_keys WHERE subject = 'user:1'", {},
              [&](const SqlRow& r) { wrapped = r.blob(0); });
  });
  REQUIRE(wrapped.size() > 32);
  const std::string key_bytes(reinterpret_cast<const char*>(wrapped.data()), wrapped.size());
  const std::string db = p.location.string();
  auto everywhere = [&] { return file_text(db) + file_text(db + "-wal"); };
  CHECK(everywhere().find("Quixotic") == std::string::npos);  // never stored in plaintext
  CHECK(everywhere().find(key_bytes) != std::string::npos);   // the wrapped key is there
  // Debian's SQLite zeroes freed bytes by default (SQLITE_SECURE_DELETE); the key must be gone
  // also from a writer connection set not to (forget sets secure_delete on again itself; with
  // this SQLite the row's rewrite alone already leaves no copy in the page, so only removing
  // the checkpoint makes this test fail).
  p.store.write_sql([](Sql& sql) { sql.execute("PRAGMA secure_delete = OFF"); });
  const ForgetResult f = p.store.forget("user:1");
  CHECK(f.purged);
  CHECK(everywhere().find(key_bytes) == std::string::npos);
  CHECK(p.store.verify().ok());
}

TEST_SUITE_END();
