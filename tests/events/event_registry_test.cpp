// EventRegistry: typed encode/decode through the store, dispatch, schema evolution with
// upcasters and aliases, checks of the upcaster chains, and hostile or unknown events.
#include <doctest/doctest.h>

#include "events/sample_events.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using namespace factum::test;

namespace {

using BankEvent = std::variant<AccountOpened, MoneyDeposited, MoneyWithdrawn>;

// The real chain v1 -> v2 -> v3.
void register_bank_chain(EventRegistry& r) {
  r.add<AccountOpened>().add<MoneyDeposited>().add<MoneyWithdrawn>();
  r.alias<MoneyDeposited>("bank.Deposit");
  r.upcast<MoneyDepositedV1, MoneyDepositedV2>([](const MoneyDepositedV1& v1) {
    return MoneyDepositedV2{v1.account, std::int64_t{v1.euros} * 100};
  });
  r.upcast<MoneyDepositedV2, MoneyDeposited>([](const MoneyDepositedV2& v2) {
    return MoneyDeposited{v2.account, {v2.amount_minor, Currency::eur}, "(no note before v3)"};
  });
  r.validate();
}

}  // namespace

TEST_CASE("a typed event round-trips through the store") {
  TempStore t;
  EventRegistry registry;
  registry.add<EverythingHappened>();
  const EverythingHappened e = full_everything();
  t.store.append("thing-1", ExpectedVersion::no_stream(), registry, e);
  const RecordedEvent recorded = t.store.read_stream("thing-1").to_vector().at(0);
  CHECK(recorded.type == "test.EverythingHappened");
  CHECK(recorded.schema_version == 1);
  CHECK(registry.decode<EverythingHappened>(recorded) == e);
}

TEST_CASE("encode carries the metadata and a fresh id") {
  EventRegistry registry;
  registry.add<AccountOpened>();
  Metadata m;
  m.actor = "clerk-7";
  const EventData a = registry.encode(AccountOpened{"acc-1", "Ann"}, m);
  const EventData b = registry.encode(AccountOpened{"acc-1", "Ann"}, m);
  CHECK(a.metadata == m);
  CHECK(a.id != b.id);
  CHECK(a.payload == b.payload);
}

TEST_CASE("a typed append of several events is one batch with shared metadata") {
  TempStore t;
  EventRegistry registry;
  register_bank_chain(registry);
  Metadata m;
  m.actor = "teller";
  const auto r = t.store.append("account-1", ExpectedVersion::no_stream(), registry, m,
                                AccountOpened{"account-1", "Ann"},
                                MoneyDeposited{"account-1", {500, Currency::eur}, "cash"});
  CHECK(r == AppendResult{2, 1, 2});
  for (const auto& e : t.store.read_all()) CHECK(e.metadata.actor == "teller");
}

TEST_CASE("typed reads dispatch on the event type with a visitor") {
  TempStore t;
  EventRegistry registry;
  register_bank_chain(registry);
  t.store.append("account-1", ExpectedVersion::no_stream(), registry,
                 AccountOpened{"account-1", "Ann"},
                 MoneyDeposited{"account-1", {500, Currency::eur}, ""},
                 MoneyWithdrawn{"account-1", {200, Currency::eur}});
  std::int64_t balance = 0;
  std::string owner;
  for (const auto& d : registry.typed<BankEvent>(t.store.read_stream("account-1"))) {
    std::visit(overloaded{[&](const AccountOpened& e) { owner = e.owner; },
                          [&](const MoneyDeposited& e) { balance += e.amount.minor_units; },
                          [&](const MoneyWithdrawn& e) { balance -= e.amount.minor_units; }},
               d.event);
    CHECK(d.envelope.stream_id == "account-1");
  }
  CHECK(owner == "Ann");
  CHECK(balance == 300);
}

TEST_CASE("decoding as the wrong type throws UnknownEventTypeError") {
  TempStore t;
  EventRegistry registry;
  register_bank_chain(registry);
  t.store.append("account-1", ExpectedVersion::any(), registry, AccountOpened{"account-1", "Ann"});
  const auto e = t.store.read_all().to_vector().at(0);
  CHECK_THROWS_AS(registry.decode<MoneyWithdrawn>(e), UnknownEventTypeError);
  CHECK_FALSE(registry.try_decode<std::variant<MoneyWithdrawn>>(e).has_value());
  CHECK_THROWS_AS(registry.decode_variant<std::variant<MoneyWithdrawn>>(e), UnknownEventTypeError);
}

TEST_CASE(
    "an unregistered type gives UnknownEventTypeError, or is skipped when the reader says so") {
  TempStore t;
  EventRegistry writer;
  register_bank_chain(writer);
  writer.add<EverythingHappened>();
  t.store.append("account-1", ExpectedVersion::any(), writer, AccountOpened{"account-1", "Ann"},
                 EverythingHappened{}, MoneyWithdrawn{"account-1", {1, Currency::eur}});
  EventRegistry reader;
  register_bank_chain(reader);
  try {
    for (const auto& d : reader.typed<BankEvent>(t.store.read_all())) (void)d;
    FAIL("expected UnknownEventTypeError");
  } catch (const UnknownEventTypeError& e) {
    CHECK(e.type() == "test.EverythingHappened");
    CHECK(std::string(e.what()).find("position 2") != std::string::npos);
  }
  std::vector<Position> seen;
  for (const auto& d : reader.typed<BankEvent>(t.store.read_all(), UnknownEvents::skip)) {
    seen.push_back(d.envelope.position);
  }
  CHECK(seen == std::vector<Position>{1, 3});
  CHECK_THROWS_AS(reader.encode(EverythingHappened{}), UnknownEventTypeError);
}

TEST_CASE("history written by version 1 code replays under version 3 code") {
  TempStore t;
  {
    // Old code: the event was called bank.Deposit and held whole euros.
    EventRegistry v1;
    v1.add<MoneyDepositedV1>();
    t.store.append("account-1", ExpectedVersion::any(), v1, MoneyDepositedV1{"account-1", 12});
  }
  {
    // Middle code: renamed to bank.MoneyDeposited, cents.
    EventRegistry v2;
    v2.add<MoneyDepositedV2>();
    t.store.append("account-1", ExpectedVersion::any(), v2, MoneyDepositedV2{"account-1", 345});
  }
  EventRegistry v3;
  register_bank_chain(v3);
  t.store.append("account-1", ExpectedVersion::any(), v3,
                 MoneyDeposited{"account-1", {678, Currency::usd}, "wire"});
  std::vector<MoneyDeposited> replayed;
  for (const auto& d : v3.typed<BankEvent>(t.store.read_stream("account-1"))) {
    replayed.push_back(std::get<MoneyDeposited>(d.event));
  }
  REQUIRE(replayed.size() == 3);
  CHECK(replayed[0] == MoneyDeposited{"account-1", {1200, Currency::eur}, "(no note before v3)"});
  CHECK(replayed[1] == MoneyDeposited{"account-1", {345, Currency::eur}, "(no note before v3)"});
  CHECK(replayed[2] == MoneyDeposited{"account-1", {678, Currency::usd}, "wire"});
  CHECK(v3.canonical_name("bank.Deposit") == "bank.MoneyDeposited");
  CHECK(v3.knows("bank.Deposit"));
}

TEST_CASE("an event of a newer schema version than the code throws UnknownEventTypeError") {
  TempStore t;
  EventRegistry newer;
  newer.add<MoneyDeposited>();  // v3
  t.store.append("account-1", ExpectedVersion::any(), newer, MoneyDeposited{});
  EventRegistry older;
  older.add<MoneyDepositedV2>();
  CHECK_THROWS_WITH_AS(older.decode<MoneyDepositedV2>(t.store.read_all().to_vector().at(0)),
                       doctest::Contains("newer"), UnknownEventTypeError);
}

TEST_CASE("a gap in an upcaster chain is an error at validate, not at replay") {
  EventRegistry r;
  r.add<MoneyDeposited>();  // v3
  r.upcast<MoneyDepositedV1, MoneyDepositedV2>([](const MoneyDepositedV1& v1) {
    return MoneyDepositedV2{v1.account, v1.euros * 100};
  });
  CHECK_THROWS_WITH_AS(r.validate(), doctest::Contains("none from schema version 2"),
                       InvalidArgument);
}

TEST_CASE("an upcaster that does not raise the version is refused at registration") {
  EventRegistry r;
  r.add<MoneyDeposited>();
  auto same = [](const MoneyDeposited& e) { return e; };
  CHECK_THROWS_WITH_AS((r.upcast<MoneyDeposited, MoneyDeposited>(same)),
                       doctest::Contains("cycles"), InvalidArgument);
  CHECK_THROWS_AS(r.upcast_bytes("bank.MoneyDeposited", 3, 2, [](auto) { return std::string(); }),
                  InvalidArgument);
}

TEST_CASE("two upcasters for one step are refused at registration") {
  EventRegistry r;
  r.add<MoneyDeposited>();
  auto step = [](const MoneyDepositedV2& v2) {
    return MoneyDeposited{v2.account, {v2.amount_minor, Currency::eur}, ""};
  };
  r.upcast<MoneyDepositedV2, MoneyDeposited>(step);
  CHECK_THROWS_WITH_AS((r.upcast<MoneyDepositedV2, MoneyDeposited>(step)),
                       doctest::Contains("two upcasters"), InvalidArgument);
}

TEST_CASE("an upcaster past the current version, or of an unknown type, fails validate") {
  EventRegistry r;
  r.add<MoneyDepositedV2>();  // current version 2
  r.upcast_bytes("bank.MoneyDeposited", 1, 3, [](auto) { return std::string(); });
  CHECK_THROWS_WITH_AS(r.validate(), doctest::Contains("past the current version"),
                       InvalidArgument);
  EventRegistry r2;
  r2.upcast_bytes("nobody.Knows", 1, 2, [](auto) { return std::string(); });
  CHECK_THROWS_WITH_AS(r2.validate(), doctest::Contains("not a registered event type"),
                       InvalidArgument);
}

TEST_CASE("one name for two types, or an alias over a type, is refused") {
  EventRegistry r;
  r.add<MoneyDeposited>();
  r.add<MoneyDeposited>();  // the same type again is fine
  CHECK_THROWS_AS(r.add<MoneyDepositedV2>(), InvalidArgument);
  CHECK_THROWS_AS(r.alias<MoneyWithdrawn>("bank.MoneyDeposited"), InvalidArgument);
  r.alias<MoneyDeposited>("bank.Deposit");
  CHECK_THROWS_AS(r.add<MoneyDepositedV1>(), InvalidArgument);  // its name is an alias now
}

TEST_CASE("a payload altered behind the library's back is caught by its hash before decoding") {
  TempStore t;
  EventRegistry registry;
  register_bank_chain(registry);
  t.store.append("account-1", ExpectedVersion::any(), registry, AccountOpened{"account-1", "Ann"},
                 MoneyDeposited{"account-1", {500, Currency::eur}, "x"});
  raw_exec(t.path, kDropTriggers);
  // A forged payload that decodes fine: without the hash check it would be believed.
  const std::string forged =
      encode_payload(MoneyDeposited{"account-1", {999999, Currency::eur}, "x"});
  std::string hex;
  for (unsigned char c : forged) {
    static constexpr char kHex[] = "0123456789abcdef";
    hex += kHex[c >> 4];
    hex += kHex[c & 0xf];
  }
  raw_exec(t.path, "UPDATE events SET payload = X'" + hex + "' WHERE position = 2");
  try {
    for (const auto& d : registry.typed<BankEvent>(t.store.read_all())) (void)d;
    FAIL("expected CorruptEventError");
  } catch (const CorruptEventError& e) {
    CHECK(e.position() == 2);
    CHECK(std::string(e.what()).find("bank.MoneyDeposited") != std::string::npos);
    CHECK(std::string(e.what()).find("hash") != std::string::npos);
  }
}

TEST_CASE(
    "malformed payload bytes with a valid hash raise CorruptEventError naming position and type") {
  TempStore t;
  EventRegistry registry;
  register_bank_chain(registry);
  EventData garbage;
  garbage.type = "bank.MoneyWithdrawn";
  garbage.payload = to_bytes("\x05\xff\xff\xff\xff");
  t.store.append("account-1", ExpectedVersion::any(), registry, AccountOpened{"account-1", "Ann"});
  t.store.append("account-1", ExpectedVersion::any(), garbage);
  try {
    for (const auto& d : registry.typed<BankEvent>(t.store.read_all())) (void)d;
    FAIL("expected CorruptEventError");
  } catch (const CorruptEventError& e) {
    CHECK(e.position() == 2);
    CHECK(std::string(e.what()).find("bank.MoneyWithdrawn") != std::string::npos);
  }
}

TEST_CASE("an event built by hand without its chain links is refused as corrupt") {
  EventRegistry registry;
  registry.add<AccountOpened>();
  const EventData data = registry.encode(AccountOpened{"a", "b"});
  RecordedEvent e;
  e.position = 9;
  e.type = data.type;
  e.schema_version = data.schema_version;
  e.payload = data.payload;
  CHECK_THROWS_AS(registry.decode<AccountOpened>(e), CorruptEventError);
}

TEST_CASE("decoding through an old struct of a registered name is refused") {
  TempStore t;
  EventRegistry registry;
  register_bank_chain(registry);
  t.store.append("account-1", ExpectedVersion::any(), registry,
                 MoneyDeposited{"account-1", {5, Currency::eur}, ""});
  const auto e = t.store.read_all().to_vector().at(0);
  CHECK_THROWS_AS(registry.decode<MoneyDepositedV2>(e), UnknownEventTypeError);
}

namespace {
struct Ping {
  static constexpr std::string_view event_type = "test.Ping";
  template <class Ar>
  void serialize(Ar&, unsigned) {}
};
}  // namespace

TEST_CASE("an event with no fields encodes to an empty payload and back") {
  TempStore t;
  EventRegistry registry;
  registry.add<Ping>();
  const EventData data = registry.encode(Ping{});
  CHECK(data.payload.empty());
  t.store.append("ping-1", ExpectedVersion::any(), data);
  CHECK_NOTHROW(registry.decode<Ping>(t.store.read_all().to_vector().at(0)));
}
