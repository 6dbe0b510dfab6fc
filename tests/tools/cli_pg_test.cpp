// The factum command line on PostgreSQL, end to end (label "postgres", cases "pg/..."): the
// migration path of docs/postgres.md (a SQLite store exported, imported into a fresh schema,
// verified, exported again byte for byte, imported back into a SQLite file), every reading
// command on a URI, import's refusals, and URIs' passwords kept out of the output.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "cli_fixture.hpp"
#include "support/anchor_keys.hpp"
#include "support/pg_test.hpp"

namespace factum::test {
namespace {

// Counts events per stream into a read model on the store's server.
class Counts final : public Projection {
 public:
  std::string name() const override { return "counts"; }
  std::uint32_t version() const override { return 1; }
  void reset(ProjectionContext& ctx) override {
    ctx.sql().execute(table_ddl(ctx.sql(), "CREATE TABLE " + ctx.table("counts") +
                                               " (stream TEXT PRIMARY KEY, n INTEGER NOT NULL)"));
  }
  void apply(const RecordedEvent& e, ProjectionContext& ctx) override {
    // The existing row's n qualified: PostgreSQL finds a bare n ambiguous (excluded.n).
    const std::string table = ctx.table("counts");
    ctx.sql().execute("INSERT INTO " + table + " (stream, n) VALUES (?1, 1) ON CONFLICT (stream)" +
                          " DO UPDATE SET n = " + table + ".n + 1",
                      {e.stream_id});
  }
};

// The sample store's export (a file in its folder), as `factum export` wrote it.
struct Exported : SampleStore {
  std::filesystem::path export_file = dir.file("sample.jsonl");
  Exported() {
    const CliResult r = run_cli({"export", file(), "-o", export_file.string(), "-q"});
    INFO(r.err);
    REQUIRE(r.code == 0);
  }
};

// A fresh schema holding the sample store's events, imported with factum import.
struct Imported : Exported {
  std::string uri = pg_test_uri();
  Imported() {
    const CliResult r = run_cli({"import", uri, export_file.string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
  }
};

// The events in the store of `uri`'s schema; nullopt when it holds no store (opened read-only:
// nothing is created).
std::optional<Position> stored_events(const std::string& uri) {
  StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  try {
    return EventStore::open(uri, options).head_position();
  } catch (const StorageError& e) {
    if (e.kind() == StorageError::Kind::not_a_store) return std::nullopt;
    throw;
  }
}

bool holds_store(const std::string& uri) { return stored_events(uri).has_value(); }

// `uri` with the password `secret` (the test server trusts every local connection, so any
// password is accepted and only its spelling in the output is under test).
std::string with_password(const std::string& uri, const std::string& secret) {
  const std::size_t at = uri.find('@');
  REQUIRE(at != std::string::npos);
  return uri.substr(0, at) + ":" + secret + uri.substr(at);
}

TEST_CASE("SQLite to PostgreSQL and back: ids, positions and hashes intact, verified on both") {
  Exported s;
  const std::string uri = pg_test_uri();
  CliResult r = run_cli({"import", uri, s.export_file.string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(contains(
      r.err, "imported 8 events into '" + uri + "'; head 8 " + to_hex(s.head.hash) + "; verified"));

  r = run_cli({"verify", uri});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "ok: 8 events, the hash chain is intact; head 8 " + to_hex(s.head.hash)));
  CHECK(run_cli({"verify", uri, "--head", to_hex(s.head.hash)}).code == 0);

  // Exported again from the server: the same bytes, line for line.
  const auto again = s.dir.file("again.jsonl");
  r = run_cli({"export", uri, "-o", again.string(), "-q"});
  REQUIRE(r.code == 0);
  CHECK(file_bytes(again) == file_bytes(s.export_file));

  // ... and back into a new SQLite file, which verifies and exports the same bytes once more.
  const auto back = s.dir.file("back.db");
  r = run_cli({"import", back.string(), again.string(), "-q"});
  REQUIRE(r.code == 0);
  CHECK(run_cli({"verify", back.string()}).code == 0);
  CHECK(run_cli({"export", back.string(), "-q"}).out == file_bytes(s.export_file));
  StoreOptions read_only;
  read_only.read_only = true;
  const auto original = EventStore::open(s.path, read_only).read_all().to_vector();
  const auto server = EventStore::open(uri, read_only).read_all().to_vector();
  CHECK(server == original);
}

TEST_CASE("a SQLite store anchored to a table on the server, and verified against it") {
  SampleStore s;
  const KeyFiles keys = make_ed25519_keys(s.dir.file(""));
  const std::string uri = pg_test_uri();
  const CliResult r =
      run_cli({"anchor", s.file(), "--key", keys.private_key.string(), "--to", uri});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "anchored position 8"));
  CHECK(run_cli({"verify", s.file(), "--anchors", uri, "--public-key", keys.public_key.string()})
            .code == 0);
  // The tail cut off and its counter wound back: the table's anchor says what the file cannot.
  s.tamper(
      "DELETE FROM events WHERE position >= 7;"
      "UPDATE sqlite_sequence SET seq = 6 WHERE name = 'events';");
  const CliResult v = run_cli(
      {"verify", s.file(), "--anchors", uri, "--public-key", keys.public_key.string(), "--json"});
  CHECK(v.code == 3);
  CHECK(Json::parse(v.out)["problem"] == "behind_anchor");
  CHECK(run_cli({"anchor", s.file(), "--key", keys.private_key.string(), "--to", uri}).code == 1);
}

TEST_CASE("info, stats, streams, read, tail and audit on a URI") {
  Imported s;
  CliResult r = run_cli({"info", s.uri, "--json"});
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  CHECK(j["path"] == s.uri);
  CHECK(j["format"] == 1);
  CHECK(j["events"] == 8);
  CHECK(j["streams"] == 3);
  CHECK(j["categories"] == 2);
  CHECK(j["head"]["hash"] == to_hex(s.head.hash));
  CHECK(j["schema"].get<std::string>().rfind("t_", 0) == 0);  // pg_test_uri's schemas
  CHECK(j["schema_size"].get<std::uint64_t>() > 0);
  CHECK(j["file_size"].is_null());
  CHECK(j["wal_size"].is_null());
  r = run_cli({"info", s.uri});
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "schema size"));
  CHECK_FALSE(contains(r.out, "file size"));

  r = run_cli({"stats", s.uri, "--json"});
  REQUIRE(r.code == 0);
  j = Json::parse(r.out);
  // Two types with two events each: in name order after the count.
  CHECK(j["types"][0] == Json::parse(R"({"type": "bank.AccountOpened", "events": 2,
                                         "payload_bytes": 30})"));
  CHECK(j["types"][1] == Json::parse(R"({"type": "bank.MoneyDeposited", "events": 2,
                                         "payload_bytes": 25})"));
  CHECK(j["categories"].size() == 2);
  CHECK(j["days"].size() == 1);

  r = run_cli({"streams", s.uri, "--json"});
  REQUIRE(r.code == 0);
  auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(Json::parse(lines[0])["stream"] == "account-1");
  CHECK(Json::parse(lines[2])["last_position"] == 8);
  r = run_cli({"streams", s.uri, "--category", "order"});
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "order-7"));
  CHECK_FALSE(contains(r.out, "account-1"));

  r = run_cli({"read", s.uri, "account-1", "--json"});
  REQUIRE(r.code == 0);
  lines = lines_of(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(Json::parse(lines[1])["id"] == sid(2));
  CHECK(Json::parse(lines[0])["metadata"]["values"]["channel"] == "web");
  r = run_cli({"read", s.uri, "account-9"});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "stream 'account-9' not found in '" + s.uri + "'"));

  r = run_cli({"tail", s.uri, "-n", "2", "--json"});
  REQUIRE(r.code == 0);
  lines = lines_of(r.out);
  REQUIRE(lines.size() == 2);
  CHECK(Json::parse(lines[1])["hash"] == to_hex(s.head.hash));

  // Event 2: caused by 1, it caused 5; its correlation group is 1's.
  r = run_cli({"audit", s.uri, "--event", sid(2), "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  j = Json::parse(r.out);
  CHECK(j["hash_ok"] == true);
  CHECK(j["caused_by"]["id"] == sid(1));
  REQUIRE(j["caused"]["total"] == 1);
  CHECK(j["caused"]["events"][0]["id"] == sid(5));
  CHECK(j["caused"]["events"][0]["depth"] == 1);
  CHECK(j["correlation"]["total"] == 3);  // 1, whose id it is, then 2 and 5
  // Event 8 compensates 7; 7 lists it among its compensations.
  r = run_cli({"audit", s.uri, "--position", "7", "--json"});
  REQUIRE(r.code == 0);
  j = Json::parse(r.out);
  CHECK(j["compensations"]["total"] == 1);
  CHECK(j["compensations"]["events"][0]["id"] == sid(8));
  r = run_cli({"audit", s.uri, "--event", sid(2)});
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "caused: 1 event"));
}

// The append waits for tail's first line (the last event of the history): a fixed sleep before
// it failed when tail started late on a loaded machine (it then read the appended event as
// history and waited for another until --timeout).
TEST_CASE("tail --follow prints what another process appends on the server") {
  Imported s;
  CliProcess tail({"tail", s.uri, "-n", "1", "--follow", "--limit", "1", "--json", "--interval",
                   "20", "--timeout", "15"});
  wait_for_output(tail);
  EventStore store = EventStore::open(s.uri, TempStore::fast_options());
  store.append("account-3", ExpectedVersion::no_stream(),
               std::vector<EventData>{make_event("bank.AccountOpened", R"({"owner":"Cy"})")});
  const CliResult r = tail.wait();
  INFO(r.err);
  CHECK(r.code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 2);
  CHECK(Json::parse(lines[0])["position"] == 8);
  CHECK(Json::parse(lines[1])["position"] == 9);
  CHECK(Json::parse(lines[1])["stream"] == "account-3");
}

TEST_CASE("projections and checkpoint reset on a URI") {
  Imported s;
  CliResult r = run_cli({"projections", s.uri});
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "no projections or checkpoints recorded in '" + s.uri + "' (head 8)"));
  {
    EventStore store = EventStore::open(s.uri, TempStore::fast_options());
    {
      ProjectionEngine engine(store);
      engine.add(std::make_shared<Counts>());
      REQUIRE(engine.wait_idle(std::chrono::seconds(20)));
    }
    CheckpointStore(store).save("mailer", 5);
  }
  r = run_cli({"projections", s.uri, "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["head"] == 8);
  REQUIRE(j["projections"].size() == 1);
  CHECK(j["projections"][0]["name"] == "counts");
  CHECK(j["projections"][0]["checkpoint"] == 8);
  CHECK(j["projections"][0]["state"] == "running");
  REQUIRE(j["checkpoints"].size() == 1);
  CHECK(j["checkpoints"][0]["name"] == "mailer");
  CHECK(j["checkpoints"][0]["lag"] == 3);

  r = run_cli({"checkpoint", "reset", s.uri, "mailer", "--to", "2"});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "checkpoint 'mailer' reset from 5 to 2"));
  StoreOptions read_only;
  read_only.read_only = true;
  EventStore reopened = EventStore::open(s.uri, read_only);
  CHECK(CheckpointStore(reopened).load("mailer") == 2);
  r = run_cli({"checkpoint", "reset", s.uri, "counts"});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "is a projection's checkpoint"));
}

// libpq is loaded when a store on a URI is first opened (eventstore/src/postgres/libpq.hpp):
// without it, a URI is refused with one line that names the library, and SQLite stores are
// unaffected.
TEST_CASE("without libpq a URI is refused with a clear error, and SQLite stores still work") {
  Imported s;
  CliOptions no_libpq;
  no_libpq.env = {"FACTUM_LIBPQ=" + s.dir.file("no-such-libpq.so.5").string()};
  const CliResult r = run_cli({"verify", s.uri}, no_libpq);
  CHECK(r.code != 0);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "cannot load libpq"));
  CHECK(contains(r.err, "no-such-libpq.so.5"));
  const CliResult local = run_cli({"verify", s.file()}, no_libpq);
  INFO(local.err);
  CHECK(local.code == 0);
  CHECK(run_cli({"verify", s.uri}).code == 0);  // with libpq: the store is intact
}

TEST_CASE("import refuses a schema that holds events, and changes nothing in it") {
  Imported s;
  const auto before = s.dir.file("before.jsonl");
  REQUIRE(run_cli({"export", s.uri, "-o", before.string(), "-q"}).code == 0);
  const CliResult r = run_cli({"import", s.uri, s.export_file.string()});
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "'" + s.uri + "' holds 8 events already"));
  CHECK(contains(r.err, "changed nothing"));
  CHECK(run_cli({"export", s.uri, "-q"}).out == file_bytes(before));
  CHECK(run_cli({"verify", s.uri}).code == 0);
}

TEST_CASE("import of a bad export into a fresh schema writes nothing, not even the tables") {
  Exported s;
  const auto lines = lines_of(file_bytes(s.export_file));
  REQUIRE(lines.size() == 9);
  auto join = [](const std::vector<std::string>& v) {
    std::string text;
    for (const auto& line : v) text += line + "\n";
    return text;
  };

  SUBCASE("cut off: no trailer") {
    const auto cut = s.dir.file("cut.jsonl");
    write_file(cut, join({lines.begin(), lines.end() - 1}));
    const std::string uri = pg_test_uri();
    const CliResult r = run_cli({"import", uri, cut.string()});
    CHECK(r.code == 3);
    CHECK(contains(r.err, "has no trailer"));
    CHECK_FALSE(holds_store(uri));
  }
  SUBCASE("an altered event") {
    std::vector<std::string> altered = lines;
    const std::size_t at = altered[4].find("\"teller-7\"");
    REQUIRE(at != std::string::npos);
    altered[4].replace(at, 10, "\"teller-8\"");
    const auto file = s.dir.file("altered.jsonl");
    write_file(file, join(altered));
    const std::string uri = pg_test_uri();
    const CliResult r = run_cli({"import", uri, file.string()});
    CHECK(r.code == 3);
    CHECK(contains(r.err, "line 5: the event at position 5: its hash does not match"));
    CHECK_FALSE(holds_store(uri));
  }
  SUBCASE("--head names another hash") {
    const std::string uri = pg_test_uri();
    const CliResult r =
        run_cli({"import", uri, s.export_file.string(), "--head", std::string(64, 'a')});
    CHECK(r.code == 3);
    CHECK(contains(r.err, "not the expected head"));
    CHECK_FALSE(holds_store(uri));
  }
  SUBCASE("a schema that does not exist") {
    const std::string uri = pg_test_uri() + "_none";  // the search_path names no schema
    const CliResult r = run_cli({"import", uri, s.export_file.string()});
    CHECK(r.code == 1);
    CHECK(contains(r.err, "names no existing schema"));
  }
}

// An export read from stdin cannot be checked before the load: the load is one transaction
// whose end checks the trailer and --head, so a bad export still leaves no events behind.
TEST_CASE("import into a URI reads a named pipe once, as <(cat export.jsonl) gives it") {
  Exported s;
  const auto pipe = s.dir.file("pipe");
  REQUIRE(mkfifo(pipe.c_str(), 0600) == 0);
  std::thread writer([&] {
    const int fd = open(pipe.c_str(), O_WRONLY);  // waits for the import to open it
    const std::string text = file_bytes(s.export_file);
    (void)!write(fd, text.data(), text.size());
    close(fd);
  });
  const std::string uri = pg_test_uri();
  const CliResult r = run_cli({"import", uri, pipe.string()});
  // An import that never opened the pipe leaves the writer waiting: this opens it instead (and
  // keeps it open until the writer is done, so that its write finds a reader).
  const int unblock = open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  writer.join();
  if (unblock >= 0) close(unblock);
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(stored_events(uri) == Position{8});
}

TEST_CASE("import from stdin is all or nothing: a bad export leaves no events") {
  Exported s;
  const auto lines = lines_of(file_bytes(s.export_file));
  REQUIRE(lines.size() == 9);
  std::vector<std::string> input = lines;
  std::string error;
  int code = 0;
  SUBCASE("cut off: no trailer") {
    input.pop_back();
    error = "has no trailer";
    code = 3;
  }
  SUBCASE("an altered event after good ones") {
    const std::size_t at = input[4].find("\"teller-7\"");
    REQUIRE(at != std::string::npos);
    input[4].replace(at, 10, "\"teller-8\"");
    error = "line 5: the event at position 5: its hash does not match";
    code = 3;
  }
  SUBCASE("another log's head") {
    error = "not the expected head";
    code = 3;
  }
  std::string text;
  for (const auto& line : input) text += line + "\n";
  const auto piped = s.dir.file("piped.jsonl");
  write_file(piped, text);
  const std::string uri = pg_test_uri();
  std::vector<std::string> args{"import", uri, "-"};
  if (error == "not the expected head") {
    args.insert(args.end(), {"--head", std::string(64, 'a')});
  }
  const CliResult r = run_cli(args, piped);
  INFO(r.err);
  CHECK(r.code == code);
  CHECK(contains(r.err, error));
  CHECK(contains(r.err, "nothing was imported"));
  CHECK(stored_events(uri).value_or(0) == 0U);
  // The same schema takes the good export afterwards.
  CHECK(run_cli({"import", uri, "-"}, s.export_file).code == 0);
  CHECK(stored_events(uri) == Position{8});
}

TEST_CASE("reading commands on a schema without a store neither run nor create one") {
  const std::string uri = pg_test_uri();
  for (const std::vector<std::string>& args : {std::vector<std::string>{"info", uri},
                                               {"verify", uri},
                                               {"export", uri},
                                               {"stats", uri},
                                               {"projections", uri},
                                               {"checkpoint", "reset", uri, "mailer"}}) {
    const CliResult r = run_cli(args);
    CHECK_MESSAGE(r.code == 1, args[0]);
    CHECK_MESSAGE(contains(r.err, "holds no factum store"), args[0]);
  }
  CHECK_FALSE(holds_store(uri));
}

TEST_CASE("a URI's password never reaches the output") {
  Imported s;
  const std::string uri = with_password(s.uri, "sekret");
  const std::string masked = with_password(s.uri, "***");
  CliResult r = run_cli({"info", uri, "--json"});
  REQUIRE(r.code == 0);
  CHECK(Json::parse(r.out)["path"] == masked);
  r = run_cli({"read", uri, "nope"});
  CHECK(r.code == 1);
  CHECK(contains(r.err, masked));
  r = run_cli({"import", uri, s.export_file.string()});
  CHECK(r.code == 1);
  CHECK(contains(r.err, masked));
  r = run_cli({"info", s.uri + "&password=sekret"});
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "&password=***"));
  for (const auto& args : {std::vector<std::string>{"info", uri},
                           {"verify", uri},
                           {"audit", uri, "--position", "99"},
                           {"projections", uri}}) {
    r = run_cli(args);
    CHECK_FALSE(contains(r.out + r.err, "sekret"));
  }
}

}  // namespace
}  // namespace factum::test
