// The factum command line, end to end: verify on intact and damaged stores, other commands
// meeting damage, and audit.
#include "cli_fixture.hpp"

namespace factum::test {
namespace {

TEST_CASE("verify exits 0 on an intact store and names its head") {
  SampleStore s;
  const CliResult r = run_cli({"verify", s.file()});
  CHECK(r.code == 0);
  CHECK(r.err.empty());  // no progress bar: stderr is not a terminal
  CHECK(contains(r.out, "ok: 8 events"));
  CHECK(contains(r.out, to_hex(s.head.hash)));
}

TEST_CASE("verify --head passes with an earlier head and fails with a hash not in the chain") {
  SampleStore s;
  CHECK(run_cli({"verify", s.file(), "--head", to_hex(s.head.hash)}).code == 0);
  const CliResult r = run_cli({"verify", s.file(), "--head", std::string(64, 'a'), "--json"});
  CHECK(r.code == 3);
  const Json j = Json::parse(r.out);
  CHECK(j["ok"] == false);
  CHECK(j["problem"] == "head_mismatch");
}

TEST_CASE("verify names the first altered event with exit code 3") {
  SampleStore s;
  s.tamper("UPDATE events SET payload = CAST('{\"cents\":9000}' AS BLOB) WHERE position = 3;");
  const CliResult r = run_cli({"verify", s.file()});
  CHECK(r.code == 3);
  CHECK(lines_of(r.out).size() == 1);
  CHECK(contains(r.out, "damaged at position 3 (hash_mismatch)"));
  const Json j = Json::parse(run_cli({"verify", s.file(), "--json"}).out);
  CHECK(j["position"] == 3);
  CHECK(j["events_checked"] == 2);
}

TEST_CASE("verify names a deleted event as a position gap") {
  SampleStore s;
  s.tamper("DELETE FROM events WHERE position = 5;");
  const Json j = Json::parse(run_cli({"verify", s.file(), "--json"}).out);
  CHECK(j["problem"] == "position_gap");
  CHECK(j["position"] == 5);
}

TEST_CASE("verify names a cut-off tail as truncated") {
  SampleStore s;
  s.tamper("DELETE FROM events WHERE position >= 7;");
  const CliResult r = run_cli({"verify", s.file(), "--json"});
  CHECK(r.code == 3);
  CHECK(Json::parse(r.out)["problem"] == "truncated");
}

TEST_CASE("verify names a malformed row") {
  SampleStore s;
  s.tamper("UPDATE events SET hash = X'0102' WHERE position = 4;");
  const Json j = Json::parse(run_cli({"verify", s.file(), "--json"}).out);
  CHECK(j["problem"] == "malformed_row");
  CHECK(j["position"] == 4);
}

TEST_CASE("reading a corrupt row is a one-line error with exit code 3") {
  SampleStore s;
  s.tamper("UPDATE events SET event_id = X'01' WHERE position = 2;");
  const CliResult read = run_cli({"read", s.file(), "account-1"});
  CHECK(read.code == 3);
  CHECK(one_line_error(read));
  CHECK(contains(read.err, "position 2"));
  const CliResult exported = run_cli({"export", s.file()});
  CHECK(exported.code == 3);
  CHECK(one_line_error(exported));
}

TEST_CASE("export stops at an altered event with exit code 3 and leaves no file") {
  SampleStore s;
  s.tamper("UPDATE events SET type = 'bank.Forged' WHERE position = 6;");
  const std::filesystem::path out = s.dir.file("out.jsonl");
  const CliResult r = run_cli({"export", s.file(), "-o", out.string()});
  CHECK(r.code == 3);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "position 6"));
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("audit shows the event, what it caused and its correlation group") {
  SampleStore s;
  const CliResult r = run_cli({"audit", s.file(), "--event", sid(1)});
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "event " + sid(1)));
  CHECK(contains(r.out, "bank.AccountOpened (schema 1)"));
  CHECK(contains(r.out, "channel=web, ip=10.0.0.1"));
  CHECK(contains(r.out, "(matches)"));
  CHECK(contains(r.out, "caused: 2 events"));
  CHECK(contains(r.out, sid(5)));  // caused through event 2
  CHECK(contains(r.out, "correlation group " + sid(1) + ": 3 events"));

  const Json j = Json::parse(run_cli({"audit", s.file(), "--event", sid(1), "--json"}).out);
  CHECK(j["event"]["id"] == sid(1));
  CHECK(j["hash_ok"] == true);
  REQUIRE(j["caused"]["total"] == 2);
  CHECK(j["caused"]["events"][0]["id"] == sid(2));
  CHECK(j["caused"]["events"][0]["depth"] == 1);
  CHECK(j["caused"]["events"][1]["id"] == sid(5));
  CHECK(j["caused"]["events"][1]["depth"] == 2);
  CHECK(j["correlation"]["total"] == 3);
  CHECK(j["compensations"]["total"] == 0);
}

TEST_CASE("audit shows an event's cause and its compensations") {
  SampleStore s;
  const Json j = Json::parse(run_cli({"audit", s.file(), "--event", sid(7), "--json"}).out);
  CHECK(j["caused_by"]["id"] == sid(6));
  CHECK(j["correlation"]["id"] == sid(100));
  CHECK(j["correlation"]["total"] == 3);
  REQUIRE(j["compensations"]["total"] == 1);
  CHECK(j["compensations"]["events"][0]["id"] == sid(8));
  const Json reversal = Json::parse(run_cli({"audit", s.file(), "-p", "8", "--json"}).out);
  CHECK(reversal["event"]["id"] == sid(8));
  CHECK(reversal["compensates"]["id"] == sid(7));
}

TEST_CASE("audit of an unknown event is a one-line error with exit code 1") {
  SampleStore s;
  const CliResult r = run_cli({"audit", s.file(), "--event", sid(999)});
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "not found"));
  CHECK(run_cli({"audit", s.file(), "--position", "99"}).code == 1);
}

TEST_CASE("audit of an altered event says so with exit code 3") {
  SampleStore s;
  s.tamper("UPDATE events SET actor = 'mallory' WHERE position = 2;");
  const CliResult r = run_cli({"audit", s.file(), "--event", sid(2)});
  CHECK(r.code == 3);
  CHECK(contains(r.out, "DOES NOT MATCH"));
}

TEST_CASE("audit checks the related events it shows: an altered one is named, exit code 3") {
  SampleStore s;
  s.tamper("UPDATE events SET actor = 'mallory' WHERE position = 8;");  // 7's compensation
  const CliResult r = run_cli({"audit", s.file(), "--event", sid(7)});
  CHECK(r.code == 3);
  CHECK(contains(r.out, "(matches)"));  // the audited event itself is intact
  CHECK(contains(r.out, "DOES NOT MATCH"));
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "related to " + sid(7)));
  const CliResult json = run_cli({"audit", s.file(), "--event", sid(7), "--json"});
  CHECK(json.code == 3);
  const Json j = Json::parse(json.out);
  CHECK(j["hash_ok"] == true);
  CHECK(j["related_ok"] == false);
  CHECK(j["compensations"]["events"][0]["hash_ok"] == false);
  CHECK(j["caused_by"]["hash_ok"] == true);

  s.tamper("UPDATE events SET actor = 'mallory' WHERE position = 6;");  // 7's cause
  const Json cause = Json::parse(run_cli({"audit", s.file(), "-p", "7", "--json"}).out);
  CHECK(cause["caused_by"]["hash_ok"] == false);
  // An audit whose related events are all intact still exits 0.
  CHECK(run_cli({"audit", s.file(), "--event", sid(1)}).code == 0);
}

}  // namespace
}  // namespace factum::test
