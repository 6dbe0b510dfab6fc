// The factum command line never prints text from a store or a command line raw (issue 28, item
// 19): every message, table, field and JSON line goes through factum::printable (or JSON's own
// escapes), so ESC, BEL, OSC, line breaks, the C1 controls (CSI U+009B) and the bidirectional
// controls (U+202E) cannot drive the terminal or reorder what it shows, and an error stays on
// one line.
#include "cli_fixture.hpp"

namespace factum::test {
namespace {

constexpr const char* kEsc = "\x1b";
constexpr const char* kBel = "\x07";
constexpr const char* kCsi = "\xc2\x9b";          // U+009B, the C1 control sequence introducer
constexpr const char* kRtl = "\xe2\x80\xae";      // U+202E RIGHT-TO-LEFT OVERRIDE
constexpr const char* kIsolate = "\xe2\x81\xa6";  // U+2066 LEFT-TO-RIGHT ISOLATE

// Whether `text` holds a byte or sequence that drives a terminal or reorders it: a C0 control
// other than the line feed ending a line, DEL, a C1 control or a bidirectional control.
bool has_raw_control(const std::string& text) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) return true;
  }
  return contains(text, kCsi) || contains(text, kRtl) || contains(text, kIsolate) ||
         contains(text, "\xc2\x85");
}

// A store whose stream ids, type, actor and metadata carry a CSI, a right-to-left override and
// an isolate (the API accepts them; C0 controls it refuses in stream ids and types, so ESC and
// BEL go in the actor and a metadata value).
struct HostileStore {
  TempDir dir;
  std::filesystem::path path = dir.file("hostile.db");
  std::string stream = std::string("acc") + kCsi + "31m-" + kRtl + "1";
  EventId first = EventId::generate();

  HostileStore() {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    EventData e = make_event(std::string("bank.") + kRtl + "Deposited" + kIsolate, "{}");
    e.id = first;
    e.metadata.actor = std::string("teller") + kEsc + "]0;owned" + kBel;
    e.metadata.values = {{std::string("k") + kCsi, std::string("v") + kEsc + "[2J"}};
    EventData caused = make_event(std::string("bank.") + kRtl + "Deposited", "{}");
    caused.metadata.causation_id = first;
    store.append(stream, ExpectedVersion::any(), std::vector<EventData>{e, caused});
    CheckpointStore(store).save(std::string("mail") + kCsi + "er", 1);
  }
  std::string file() const { return path.string(); }
};

TEST_CASE("streams and tail tables show C1 and bidirectional controls in stream ids as escapes") {
  HostileStore h;
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"streams", h.file()}, {"tail", h.file()}}) {
    CAPTURE(args[0]);
    const CliResult r = run_cli(args);
    REQUIRE(r.code == 0);
    CHECK_FALSE(has_raw_control(r.out));
    CHECK(contains(r.out, "acc\\u009b31m-\\u202e1"));
  }
}

TEST_CASE("read and tail tables show bidirectional controls in types as escapes") {
  HostileStore h;
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"read", h.file(), h.stream}, {"tail", h.file()}}) {
    CAPTURE(args[0]);
    const CliResult r = run_cli(args);
    REQUIRE(r.code == 0);
    CHECK_FALSE(has_raw_control(r.out));
    CHECK(contains(r.out, "bank.\\u202eDeposited\\u2066"));
  }
}

TEST_CASE("audit shows the event's fields and its related events with every control escaped") {
  HostileStore h;
  const CliResult r = run_cli({"audit", h.file(), "--event", h.first.to_string()});
  REQUIRE(r.code == 0);
  CHECK_FALSE(has_raw_control(r.out));
  CHECK(contains(r.out, "teller\\x1b]0;owned\\x07"));
  CHECK(contains(r.out, "k\\u009b=v\\x1b[2J"));
  CHECK(contains(r.out, "bank.\\u202eDeposited\\u2066"));
  CHECK(contains(r.out, "acc\\u009b31m-\\u202e1"));  // in the "caused" table
}

TEST_CASE("stats, info and projections escape the text they print") {
  HostileStore h;
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"stats", h.file()}, {"info", h.file()}, {"projections", h.file()}}) {
    CAPTURE(args[0]);
    const CliResult r = run_cli(args);
    REQUIRE(r.code == 0);
    CHECK_FALSE(has_raw_control(r.out));
  }
  CHECK(contains(run_cli({"projections", h.file()}).out, "mail\\u009ber"));
}

TEST_CASE("JSON output and export write hidden code points as \\u escapes, losing nothing") {
  HostileStore h;
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"tail", h.file(), "--json"},
           {"streams", h.file(), "--json"},
           {"audit", h.file(), "--event", h.first.to_string(), "--json"},
           {"export", h.file()}}) {
    CAPTURE(args[0]);
    const CliResult r = run_cli(args);
    REQUIRE(r.code == 0);
    CHECK_FALSE(has_raw_control(r.out));
    CHECK(contains(r.out, "\\u202e"));
  }
  // A pretty-printed report stays a JSON document: its line breaks are not escaped.
  const CliResult report = run_cli({"audit", h.file(), "--event", h.first.to_string(), "--json"});
  CHECK(Json::parse(report.out)["event"]["stream"] == h.stream);
  CHECK(Json::parse(run_cli({"stats", h.file(), "--json"}).out)["types"].size() == 2);
  const CliResult line = run_cli({"streams", h.file(), "--json"});
  CHECK(Json::parse(lines_of(line.out).at(0))["stream"] == h.stream);
  // An export still round-trips: the import holds the same stream id, type and actor.
  const auto exported = h.dir.file("hostile.jsonl");
  REQUIRE(run_cli({"export", h.file(), "-o", exported.string()}).code == 0);
  REQUIRE(run_cli({"import", h.dir.file("copy.db").string(), exported.string()}).code == 0);
  StoreOptions read_only;
  read_only.read_only = true;
  const auto copied = EventStore::open(h.dir.file("copy.db"), read_only).read_all().to_vector();
  const auto original = EventStore::open(h.path, read_only).read_all().to_vector();
  CHECK(copied == original);
}

TEST_CASE("an error naming a store path prints it escaped, on one line") {
  TempDir dir;
  const std::string path =
      dir.file(std::string("evil") + kEsc + "]0;owned" + kBel + "\nsecond" + kRtl + ".db").string();
  for (const char* command : {"info", "verify", "export", "stats"}) {
    CAPTURE(command);
    const CliResult r = run_cli({command, path});
    CHECK(r.code == 1);
    CHECK(one_line_error(r));
    CHECK_FALSE(has_raw_control(r.err));
    CHECK(contains(r.err, "evil\\x1b]0;owned\\x07"));
    CHECK(contains(r.err, "\\u202e.db"));
  }
}

TEST_CASE("import's summary and errors print the store path escaped") {
  SampleStore s;
  const auto exported = s.dir.file("sample.jsonl");
  REQUIRE(run_cli({"export", s.file(), "-o", exported.string()}).code == 0);
  const std::string target =
      s.dir.file(std::string("copy") + kEsc + "[31m" + kRtl + ".db").string();
  CliResult r = run_cli({"import", target, exported.string()});
  CHECK(r.code == 0);
  CHECK(contains(r.err, "imported 8 events"));
  CHECK_FALSE(has_raw_control(r.err));
  r = run_cli({"import", target, exported.string()});  // it exists now
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK_FALSE(has_raw_control(r.err));
}

TEST_CASE("CLI11's usage errors echo the arguments escaped, on one line before the hint") {
  SampleStore s;
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"verify", s.file(), std::string("extra") + kEsc + "[2J\nline" + kCsi},
           {"verify", s.file(), "--head", std::string("ab") + kEsc + "]0;x" + kBel},
           {"audit", s.file(), "--event", std::string("id\n") + kEsc + "[1A" + kRtl},
           {"read", s.file(), "account-1", "--limit", std::string("1") + kEsc + "c"},
           {"tail", s.file(), "--timeout", std::string("2") + kBel},
           {"info", s.file(), std::string("--bogus") + kEsc + "[5m"}}) {
    CAPTURE(args);
    const CliResult r = run_cli(args);
    CHECK(r.code == 2);
    CHECK_FALSE(has_raw_control(r.err));
    const auto lines = lines_of(r.err);
    REQUIRE(lines.size() == 2);
    CHECK(contains(lines[0], "\\x"));  // the control character, escaped
    CHECK(lines[1] == "Run with --help for more information.");
  }
}

}  // namespace
}  // namespace factum::test
