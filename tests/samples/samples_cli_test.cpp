// tests/samples/samples_cli_test.cpp — what the three sample programs (factum-bank,
// factum-orders, factum-feed) promise together: each keeps to a store of its own. Given
// another program's store, or one holding events of types it does not write, it refuses at
// once, with one line and exit code 1, before it writes a byte.
#include <doctest/doctest.h>

#include <factum/factum.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "sample_cli.hpp"
#include "support/temp_dir.hpp"

namespace {

using factum::test::SampleFolder;

struct Program {
  std::string name;
  std::filesystem::path binary;
  std::string store;                           // its default store file
  std::vector<std::string> first;              // a command that makes its store
  std::vector<std::vector<std::string>> uses;  // commands to try on another's store
};

const std::vector<Program>& programs() {
  static const std::vector<Program> kPrograms{
      {"factum-bank",
       FACTUM_BANK_BIN,
       "bank.db",
       {"open", "acc-1", "Ann"},
       {{"open", "acc-2", "Bob"},
        {"deposit", "acc-1", "5"},
        {"accounts"},
        {"balance", "acc-1"},
        {"audit"},
        {"replay-with-new-logic"},
        {"demo", "--fresh", "--accounts", "2"}}},
      {"factum-orders",
       FACTUM_ORDERS_BIN,
       "orders.db",
       {"place", "o-1", "ann", "mug-01:1:1"},
       {{"place", "o-2", "ann", "mug-01:1:1"},
        {"pay", "o-1"},
        {"board"},
        {"search", "ann"},
        {"outbox", "--redeliver"},
        {"show", "o-1"},
        {"demo", "--fresh", "--orders", "1"}}},
      {"factum-feed",
       FACTUM_FEED_BIN,
       "feed.db",
       {"join", "alice"},
       {{"join", "bob"},
        {"post", "alice", "hi"},
        {"feed", "alice"},
        {"stats"},
        {"demo", "--fresh", "--users", "2", "--days", "1"}}},
  };
  return kPrograms;
}

// Runs `args` of `program` and checks that it refused `db` at once, naming it, and left it as
// it was.
void check_refused_store(const SampleFolder& folder, const Program& program, const std::string& db,
                         const std::vector<std::string>& args) {
  const factum::test::StoreFiles before = factum::test::store_files(folder.file(db));
  std::vector<std::string> argv{"--db", db};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto start = std::chrono::steady_clock::now();
  const factum::test::ProgramRun r = folder.run_other(program.binary, argv);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  INFO(program.name, " --db ", db, " ", args.front());
  factum::test::check_one_line_error(r, program.name, 1,
                                     "'" + db + "' is not a " + program.name + " store: it holds ");
  CHECK(took.count() < 2.0);  // at once: no wait for read models that never catch up
  CHECK(factum::test::store_files(folder.file(db)) == before);
  CHECK_FALSE(std::filesystem::exists(folder.file(db + "-wal")));
}

// Makes the store of `owner` with its first command, then tries every other program on it.
void check_others_refuse_store_of(const std::string& owner_name) {
  const auto& all = programs();
  const Program& owner =
      *std::find_if(all.begin(), all.end(), [&](const Program& p) { return p.name == owner_name; });
  SampleFolder folder(owner.name, owner.binary);
  folder.ok(owner.first);
  for (const Program& other : all) {
    if (other.name == owner.name) continue;
    for (const auto& args : other.uses) check_refused_store(folder, other, owner.store, args);
  }
}

}  // namespace

TEST_CASE("factum-orders and factum-feed refuse a factum-bank store at once and write nothing") {
  check_others_refuse_store_of("factum-bank");
}

TEST_CASE("factum-bank and factum-feed refuse a factum-orders store at once and write nothing") {
  check_others_refuse_store_of("factum-orders");
}

TEST_CASE("factum-bank and factum-orders refuse a factum-feed store at once and write nothing") {
  check_others_refuse_store_of("factum-feed");
}

TEST_CASE("the message names what the foreign store holds") {
  SampleFolder folder("factum-bank", FACTUM_BANK_BIN);
  folder.ok({"open", "acc-1", "Ann"});
  const factum::test::ProgramRun r =
      folder.run_other(FACTUM_ORDERS_BIN, {"--db", "bank.db", "board"});
  CHECK(r.err ==
        "factum-orders: 'bank.db' is not a factum-orders store: it holds account streams (events "
        "such as bank.AccountOpened); give factum-orders a store of its own with --db\n");
}

TEST_CASE("a store with events of a foreign type in a sample's own streams is refused too") {
  struct Case {
    std::string program;
    std::filesystem::path binary;
    std::string stream;
    std::vector<std::string> args;
  };
  for (const Case& c :
       std::vector<Case>{{"factum-bank", FACTUM_BANK_BIN, "account-acc-1", {"balance", "acc-1"}},
                         {"factum-orders", FACTUM_ORDERS_BIN, "order-o-1", {"board"}},
                         {"factum-feed", FACTUM_FEED_BIN, "user-alice", {"feed", "alice"}}}) {
    SampleFolder folder(c.program, c.binary);
    factum::EventStore::open(folder.file("mixed.db"))
        .append(c.stream, factum::ExpectedVersion::any(),
                factum::test::make_event("test.Happened"));
    const Program program{c.program, c.binary, "", {}, {}};
    check_refused_store(folder, program, "mixed.db", c.args);
  }
}

TEST_CASE("an empty store belongs to any sample") {
  for (const Program& program : programs()) {
    SampleFolder folder(program.name, program.binary);
    factum::EventStore::open(folder.file(program.store));  // a store without events
    CHECK(!folder.ok(program.first).empty());
  }
}
