// The factum command line and anchors: `factum anchor` appends a signed head to a file, and
// `factum verify --anchors --public-key` names a log that lost or rewrote anchored history; the
// independent reader docs/verify_anchors.py gives the same verdict on the same files.
#include "cli_fixture.hpp"
#include "support/anchor_keys.hpp"

namespace factum::test {
namespace {

// A sample store with a key pair and an anchor file beside it.
struct AnchoredSample {
  SampleStore s;
  KeyFiles keys = make_ed25519_keys(s.dir.file(""));
  std::string anchors = s.dir.file("anchors.jsonl").string();

  CliResult anchor() const {
    return run_cli({"anchor", s.file(), "--key", keys.private_key.string(), "--to", anchors});
  }
  CliResult verify(bool json = true) const {
    std::vector<std::string> args = {"verify", s.file(),       "--anchors",
                                     anchors,  "--public-key", keys.public_key.string()};
    if (json) args.push_back("--json");
    return run_cli(args);
  }
  // What docs/verify_anchors.py says: "ok", or the problem's name.
  std::string python_verdict() const {
    const ProgramRun r =
        run_program({"/usr/bin/env", "python3", std::string(FACTUM_DOCS_DIR) + "/verify_anchors.py",
                     s.file(), anchors, keys.public_key.string()},
                    s.dir.file(""));
    if (r.code == 0) return "ok";
    return r.out.substr(0, r.out.find(' '));
  }
};

TEST_CASE("anchor signs the head into the file, and verify --anchors passes") {
  AnchoredSample a;
  const CliResult r = a.anchor();
  CHECK(r.code == 0);
  CHECK(contains(r.out, "anchored position 8 head " + to_hex(a.s.head.hash)));
  const Json line = Json::parse(file_bytes(a.anchors));
  CHECK(line["position"] == 8);
  CHECK(line["head"] == to_hex(a.s.head.hash));
  const CliResult v = a.verify(false);
  CHECK(v.code == 0);
  CHECK(contains(v.out, "ok: 8 events"));
  CHECK(contains(v.out, "1 anchors hold"));
  CHECK(Json::parse(a.verify().out)["anchors"] == 1);
  CHECK(a.python_verdict() == "ok");
}

TEST_CASE("a cut-off tail with its counter wound back verifies alone but is behind_anchor") {
  AnchoredSample a;
  REQUIRE(a.anchor().code == 0);
  a.s.tamper(
      "DELETE FROM events WHERE position >= 7;"
      "UPDATE sqlite_sequence SET seq = 6 WHERE name = 'events';");
  CHECK(run_cli({"verify", a.s.file()}).code == 0);  // the chain alone cannot tell
  const CliResult r = a.verify();
  CHECK(r.code == 3);
  const Json j = Json::parse(r.out);
  CHECK(j["problem"] == "behind_anchor");
  CHECK(j["position"] == 7);
  CHECK(a.python_verdict() == "behind_anchor");
  // And the store is not anchored again: the file keeps its one anchor.
  const std::string before = file_bytes(a.anchors);
  const CliResult again = a.anchor();
  CHECK(again.code == 1);
  CHECK(contains(again.err, "ends at position 6, behind the anchor of position 8"));
  CHECK(file_bytes(a.anchors) == before);
}

TEST_CASE("anchor --accept-rollback records a known loss, and verify passes and names it") {
  AnchoredSample a;
  REQUIRE(a.anchor().code == 0);
  a.s.tamper(
      "DELETE FROM events WHERE position >= 7;"
      "UPDATE sqlite_sequence SET seq = 6 WHERE name = 'events';");
  REQUIRE(a.anchor().code == 1);
  const std::vector<std::string> accept = {
      "anchor",  a.s.file(),         "--key", a.keys.private_key.string(), "--to",
      a.anchors, "--accept-rollback"};
  std::vector<std::string> bad = accept;
  bad.push_back("");
  CHECK(run_cli(bad).code == 2);
  std::vector<std::string> args = accept;
  args.push_back("the disk lost its last writes");
  const CliResult r = run_cli(args);
  CHECK(r.code == 0);
  CHECK(contains(r.out, "accepted the loss of the anchor of position 8 (event at position 7)"));
  CHECK(contains(r.out, "anchored position 7 head"));
  const CliResult v = a.verify(false);
  CHECK(v.code == 0);
  CHECK(contains(v.out, "2 anchors hold"));
  CHECK(contains(v.out,
                 "accepted rollback at position 7: the log (then at position 6) no longer held "
                 "the anchor of position 8; reason: the disk lost its last writes"));
  const Json j = Json::parse(a.verify().out);
  CHECK(j["accepted_rollbacks"].size() == 1);
  CHECK(j["accepted_rollbacks"][0]["reason"] == "the disk lost its last writes");
  CHECK(a.python_verdict() == "ok");
  // Nothing left to accept: refused, nothing written.
  const std::string before = file_bytes(a.anchors);
  const CliResult again = run_cli(args);
  CHECK(again.code == 1);
  CHECK(contains(again.err, "no rollback to accept"));
  CHECK(file_bytes(a.anchors) == before);
  // The acceptance event removed behind the library's back: the anchor that went back no longer
  // has its reason, in C++ and in Python.
  a.s.tamper(
      "DELETE FROM events WHERE position >= 7;"
      "UPDATE sqlite_sequence SET seq = 6 WHERE name = 'events';");
  CHECK(Json::parse(a.verify().out)["problem"] == "bad_anchor");
  CHECK(a.python_verdict() == "bad_anchor");
}

TEST_CASE("an altered anchor file is bad_anchor, in C++ and in Python") {
  AnchoredSample a;
  REQUIRE(a.anchor().code == 0);
  std::string text = file_bytes(a.anchors);
  const std::size_t at = text.find("\"position\":8");
  REQUIRE(at != std::string::npos);
  text.replace(at, 12, "\"position\":6");  // claims less than was anchored
  write_file(a.anchors, text);
  const CliResult r = a.verify(false);
  CHECK(r.code == 3);
  CHECK(contains(r.out, "bad anchors (bad_anchor): anchor 1 (position 6): its signature"));
  CHECK(a.python_verdict() == "bad_anchor");
  // Lines the signature's values would still fit, in forms factum refuses: Python refuses them too.
  const std::string good = file_bytes(a.anchors);
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"position\":6", "\"position\":6.0"},
           {"\"anchor\":1", "\"anchor\":true"},
           {"\"position\":6", "\"position\":6,\"position\":6"},
           {"\"head\":\"", "\"head\":\" "}}) {
    std::string line = good;
    line.replace(line.find(from), from.size(), to);
    write_file(a.anchors, line);
    CHECK(Json::parse(a.verify().out)["problem"] == "bad_anchor");
    CHECK(a.python_verdict() == "bad_anchor");
  }
  write_file(a.anchors, "not json\n");
  CHECK(Json::parse(a.verify().out)["problem"] == "bad_anchor");
  CHECK(a.python_verdict() == "bad_anchor");
}

TEST_CASE("verify --anchors needs --public-key, and a key of another kind is refused") {
  AnchoredSample a;
  REQUIRE(a.anchor().code == 0);
  CHECK(run_cli({"verify", a.s.file(), "--anchors", a.anchors}).code == 2);
  const KeyFiles p256 = make_p256_keys(a.s.dir.file(""));
  const CliResult r = run_cli(
      {"verify", a.s.file(), "--anchors", a.anchors, "--public-key", p256.public_key.string()});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "not an Ed25519 key"));
  const CliResult k =
      run_cli({"anchor", a.s.file(), "--key", p256.private_key.string(), "--to", a.anchors});
  CHECK(k.code == 1);
  CHECK(contains(k.err, "not an Ed25519 key"));
}

}  // namespace
}  // namespace factum::test
