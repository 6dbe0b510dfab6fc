// The factum command line, end to end: info, stats, streams, read, tail, help, usage errors,
// bad files, and that reading commands leave the file unchanged.
#include <signal.h>

#include <thread>

#include "cli_fixture.hpp"

namespace factum::test {
namespace {

TEST_CASE("info prints the format, counts, head and file size") {
  SampleStore s;
  const CliResult r = run_cli({"info", s.file()});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(contains(r.out, "format         2"));
  CHECK(contains(r.out, "events         8"));
  CHECK(contains(r.out, "streams        3"));
  CHECK(contains(r.out, "categories     2"));
  CHECK(contains(r.out, "head position  8"));
  CHECK(contains(r.out, "head hash      " + to_hex(s.head.hash)));
  CHECK(contains(r.out, "file size"));
}

TEST_CASE("info --json gives the same facts as one JSON object") {
  SampleStore s;
  const CliResult r = run_cli({"info", s.file(), "--json"});
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["format"] == 2);
  CHECK(j["events"] == 8);
  CHECK(j["streams"] == 3);
  CHECK(j["categories"] == 2);
  CHECK(j["head"]["position"] == 8);
  CHECK(j["head"]["hash"] == to_hex(s.head.hash));
  CHECK(j["file_size"].get<std::uint64_t>() > 0);
}

TEST_CASE("a missing file is a one-line error with exit code 1") {
  TempDir dir;
  const CliResult r = run_cli({"info", dir.file("missing.db").string()});
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "no such file"));
  CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

TEST_CASE("a file that is not a factum store is a one-line error with exit code 1") {
  TempDir dir;
  write_file(dir.file("notes.txt"), "hello, not a database\n");
  for (const char* command : {"info", "verify", "streams", "export"}) {
    const CliResult r = run_cli({command, dir.file("notes.txt").string()});
    CHECK(r.code == 1);
    CHECK(one_line_error(r));
    CHECK(contains(r.err, "not a factum store"));
  }
  CHECK(file_bytes(dir.file("notes.txt")) == "hello, not a database\n");
}

TEST_CASE("an empty file is refused read-only and left empty") {
  TempDir dir;
  write_file(dir.file("empty.db"), "");
  const CliResult r = run_cli({"info", dir.file("empty.db").string()});
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(std::filesystem::file_size(dir.file("empty.db")) == 0);
}

TEST_CASE("streams lists every stream with its category and last version") {
  SampleStore s;
  const CliResult r = run_cli({"streams", s.file()});
  REQUIRE(r.code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 4);
  CHECK(contains(lines[0], "STREAM"));
  CHECK(contains(lines[1], "account-1"));
  CHECK(contains(lines[2], "account-2"));
  CHECK(contains(lines[3], "order-7"));
}

TEST_CASE("streams --category lists only that category, as JSON lines with --json") {
  SampleStore s;
  const CliResult r = run_cli({"streams", s.file(), "--category", "account", "--json"});
  REQUIRE(r.code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 2);
  const Json first = Json::parse(lines[0]);
  CHECK(first["stream"] == "account-1");
  CHECK(first["category"] == "account");
  CHECK(first["version"] == 3);
  CHECK(first["last_position"] == 3);
  CHECK(Json::parse(lines[1])["stream"] == "account-2");
}

TEST_CASE("read prints a stream's events oldest first") {
  SampleStore s;
  const CliResult r = run_cli({"read", s.file(), "account-1"});
  REQUIRE(r.code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 4);
  CHECK(contains(lines[0], "POSITION"));
  CHECK(contains(lines[1], sid(1)));
  CHECK(contains(lines[1], R"({"owner":"Ada"})"));
  CHECK(contains(lines[3], sid(3)));
}

TEST_CASE("read --backward --from prints newest first from that version") {
  SampleStore s;
  const CliResult r =
      run_cli({"read", s.file(), "account-1", "--backward", "--from", "2", "--json"});
  REQUIRE(r.code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 2);
  CHECK(Json::parse(lines[0])["id"] == sid(2));
  CHECK(Json::parse(lines[1])["id"] == sid(1));
}

TEST_CASE("read --json prints every field of each event, payload as base64") {
  SampleStore s;
  const CliResult r =
      run_cli({"read", s.file(), "account-1", "--from", "1", "--limit", "1", "--json"});
  REQUIRE(r.code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 1);
  const Json e = Json::parse(lines[0]);
  CHECK(e["position"] == 1);
  CHECK(e["stream"] == "account-1");
  CHECK(e["version"] == 1);
  CHECK(e["type"] == "bank.AccountOpened");
  CHECK(e["payload"] == "eyJvd25lciI6IkFkYSJ9");
  CHECK(e["metadata"]["actor"] == "teller-7");
  CHECK(e["metadata"]["values"]["ip"] == "10.0.0.1");
  CHECK(e["metadata"]["correlation_id"].is_null());
  CHECK(e["recorded_at"].get<std::string>().back() == 'Z');
}

TEST_CASE("read of an unknown stream is a one-line error with exit code 1") {
  SampleStore s;
  const CliResult r = run_cli({"read", s.file(), "account-99"});
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "stream 'account-99' not found"));
}

TEST_CASE("tail prints the newest events of the log") {
  SampleStore s;
  const CliResult r = run_cli({"tail", s.file(), "-n", "2", "--json"});
  REQUIRE(r.code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 2);
  CHECK(Json::parse(lines[0])["position"] == 7);
  CHECK(Json::parse(lines[1])["position"] == 8);
}

TEST_CASE("tail --follow prints events another process appends, until --limit") {
  SampleStore s;
  CliProcess tail({"tail", s.file(), "-n", "1", "--follow", "--limit", "2", "--timeout", "15",
                   "--interval", "20", "--json"});
  wait_for_output(tail);
  {
    EventStore store = EventStore::open(s.path, TempStore::fast_options());
    store.append("account-2", ExpectedVersion::any(), make_events(2, "late"));
  }
  const CliResult r = tail.wait();
  CHECK(r.code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(Json::parse(lines[0])["position"] == 8);
  CHECK(Json::parse(lines[1])["position"] == 9);
  CHECK(Json::parse(lines[2])["payload"] == "bGF0ZTE=");  // "late1"
}

TEST_CASE("tail --follow ends with exit code 0 on SIGTERM") {
  SampleStore s;
  CliProcess tail({"tail", s.file(), "--follow", "--interval", "20"});
  wait_for_output(tail);
  tail.signal(SIGTERM);
  const CliResult r = tail.wait(std::chrono::seconds(10));
  CHECK(r.code == 0);
  CHECK(lines_of(r.out).size() == 9);  // the header and the eight events
}

TEST_CASE("stats counts events per type, per category and per day") {
  SampleStore s;
  const CliResult r = run_cli({"stats", s.file(), "--json"});
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  REQUIRE(j["types"].size() == 6);
  CHECK(j["types"][0]["type"] == "bank.AccountOpened");  // the most frequent first
  CHECK(j["types"][0]["events"] == 2);
  REQUIRE(j["categories"].size() == 2);
  CHECK(j["categories"][0] == Json{{"category", "account"}, {"streams", 2}, {"events", 5}});
  CHECK(j["categories"][1] == Json{{"category", "order"}, {"streams", 1}, {"events", 3}});
  REQUIRE(j["days"].size() == 1);
  CHECK(j["days"][0]["events"] == 8);
  const CliResult table = run_cli({"stats", s.file()});
  CHECK(table.code == 0);
  CHECK(contains(table.out, "bank.MoneyDeposited"));
  CHECK(contains(table.out, "DAY (UTC)"));
}

TEST_CASE("reading commands leave the store file byte for byte unchanged") {
  SampleStore s;
  const std::string before = file_bytes(s.path);
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"info"},
                                             {"stats"},
                                             {"streams"},
                                             {"read", "account-1"},
                                             {"tail"},
                                             {"verify"},
                                             {"audit", "--event", sid(2)},
                                             {"export"},
                                             {"projections"}}) {
    args.insert(args.begin() + 1, s.file());
    CAPTURE(args[0]);
    CHECK(run_cli(args).code == 0);
    CHECK(file_bytes(s.path) == before);
  }
}

TEST_CASE("every command answers --help with its usage") {
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{},
                                             {"info"},
                                             {"stats"},
                                             {"streams"},
                                             {"read"},
                                             {"tail"},
                                             {"verify"},
                                             {"audit"},
                                             {"export"},
                                             {"import"},
                                             {"projections"},
                                             {"checkpoint"},
                                             {"checkpoint", "reset"}}) {
    args.push_back("--help");
    CAPTURE(args[0]);
    const CliResult r = run_cli(args);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "Usage: factum"));
  }
}

TEST_CASE("a wrong command line exits with code 2") {
  SampleStore s;
  CHECK(run_cli({}).code == 2);
  CHECK(run_cli({"frobnicate", s.file()}).code == 2);
  CHECK(run_cli({"read", s.file()}).code == 2);   // no STREAM
  CHECK(run_cli({"audit", s.file()}).code == 2);  // neither --event nor --position
  CHECK(run_cli({"audit", s.file(), "--event", "not-a-uuid"}).code == 2);
  CHECK(run_cli({"verify", s.file(), "--head", "abc"}).code == 2);
  CHECK(run_cli({"export", s.file(), "--format", "csv"}).code == 2);
}

}  // namespace
}  // namespace factum::test
