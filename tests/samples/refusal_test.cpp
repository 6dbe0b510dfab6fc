// tests/samples/refusal_test.cpp — a sample command that ends in refusal leaves every byte of its
// store as it was (issue 28, item 4): an empty file stays empty, a format-1 store stays format 1,
// and a store made by `factum export | factum import` gets no table. A schema is made or upgraded
// only by a write that succeeds (docs/eventstore.md, "Opening writes nothing").
#include <doctest/doctest.h>

#include <factum/factum.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "sample_cli.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

namespace {

using factum::test::ProgramRun;
using factum::test::SampleFolder;

struct Program {
  std::string name;
  std::filesystem::path binary;
  std::vector<std::string> first;                 // a command that makes its store
  std::vector<std::vector<std::string>> refused;  // commands it refuses on that store
};

const std::vector<Program>& programs() {
  static const std::vector<Program> kPrograms{
      {"factum-bank",
       FACTUM_BANK_BIN,
       {"open", "acc-1", "Ann"},
       {{"balance", "acc-9"},
        {"statement", "acc-9"},
        {"withdraw", "acc-9", "5"},
        {"deposit", "acc-9", "5"},
        {"close", "acc-9"},
        {"transfer", "acc-9", "acc-8", "1"},
        {"withdraw", "acc-1", "1000000"}}},
      {"factum-orders",
       FACTUM_ORDERS_BIN,
       {"place", "o-1", "ann", "mug-01:1:1"},
       {{"pay", "o-9"}, {"show", "o-9"}, {"ship", "o-9"}, {"cancel", "o-9"}}},
      {"factum-feed",
       FACTUM_FEED_BIN,
       {"join", "alice"},
       {{"like", "zed", "1"}, {"post", "zed", "hi"}, {"follow", "zed", "alice"}}},
  };
  return kPrograms;
}

// The names of the schema objects of a store file, in order. Opened for writing (which writes
// nothing): the last writable connection to close removes the -wal and -shm files, which a
// read-only one would leave behind.
std::vector<std::string> objects_of(const std::filesystem::path& db) {
  std::vector<std::string> out;
  factum::EventStore::open(db).read_sql([&](factum::Sql& sql) {
    sql.query("SELECT name FROM sqlite_schema ORDER BY name", {},
              [&](const factum::SqlRow& row) { out.push_back(row.text(0)); });
  });
  return out;
}

// Runs each refused command of `program` on `db` and checks that it exited 1 and left the store's
// files as they were.
void check_refused(const SampleFolder& folder, const Program& program, const std::string& db) {
  for (const std::vector<std::string>& args : program.refused) {
    const factum::test::StoreFiles before = factum::test::store_files(folder.file(db));
    std::vector<std::string> argv{"--db", db};
    argv.insert(argv.end(), args.begin(), args.end());
    const ProgramRun r = folder.run(argv);
    INFO(program.name, " ", args.front(), ": ", r.err);
    CHECK(r.code == 1);
    CHECK(factum::test::store_files(folder.file(db)) == before);
    CHECK_FALSE(std::filesystem::exists(folder.file(db + "-journal")));
  }
}

}  // namespace

TEST_CASE("a refused sample command on an empty file leaves it empty") {
  for (const Program& program : programs()) {
    SampleFolder folder(program.name, program.binary);
    std::ofstream(folder.file("empty.db")).flush();
    check_refused(folder, program, "empty.db");
    CHECK(std::filesystem::file_size(folder.file("empty.db")) == 0);
  }
}

TEST_CASE("a refused sample command leaves a format-1 store at format 1") {
  for (const Program& program : programs()) {
    SampleFolder folder(program.name, program.binary);
    std::vector<std::string> first{"--db", "old.db"};
    first.insert(first.end(), program.first.begin(), program.first.end());
    folder.ok(first);
    factum::test::raw_exec(folder.file("old.db"),
                           "DROP TRIGGER events_are_appended; DROP TRIGGER streams_are_added; "
                           "DROP TRIGGER stream_keys_are_positive; PRAGMA user_version = 1");
    check_refused(folder, program, "old.db");
    CHECK(factum::test::raw_int(folder.file("old.db"), "PRAGMA user_version") == 1);
  }
}

TEST_CASE("a refused sample command adds no table to a store made by export and import") {
  for (const Program& program : programs()) {
    SampleFolder folder(program.name, program.binary);
    std::vector<std::string> first{"--db", "made.db"};
    first.insert(first.end(), program.first.begin(), program.first.end());
    folder.ok(first);
    {
      // What `factum export | factum import` makes: the log alone, no read model or snapshot.
      factum::StoreOptions options;
      options.read_only = true;
      const auto events =
          factum::EventStore::open(folder.file("made.db"), options).read_all().to_vector();
      factum::EventStore::open(folder.file("imported.db")).import_events(events);
    }
    const std::vector<std::string> tables = objects_of(folder.file("imported.db"));
    check_refused(folder, program, "imported.db");
    CHECK(objects_of(folder.file("imported.db")) == tables);
  }
}
