// The factum command line, end to end: export and import.
#include "cli_fixture.hpp"

namespace factum::test {
namespace {

std::vector<RecordedEvent> all_events(const std::filesystem::path& file) {
  StoreOptions options;
  options.read_only = true;
  return EventStore::open(file, options).read_all().to_vector();
}

// The files of `dir` whose name starts with `prefix`.
std::vector<std::string> files_starting(const std::filesystem::path& dir,
                                        const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  return out;
}

TEST_CASE("export writes one JSON object per event in position order, with a summary on stderr") {
  SampleStore s;
  const CliResult r = run_cli({"export", s.file(), "--format", "jsonl"});
  REQUIRE(r.code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 8);
  for (std::size_t i = 0; i < lines.size(); ++i) CHECK(Json::parse(lines[i])["position"] == i + 1);
  const Json charged = Json::parse(lines[6]);
  CHECK(charged["payload"] == "AQID");  // bytes 01 02 03
  CHECK(charged["metadata"]["causation_id"] == sid(6));
  CHECK(Json::parse(lines[7])["metadata"]["compensates"] == sid(7));
  CHECK(Json::parse(lines[7])["payload"] == "");
  CHECK(Json::parse(lines[7])["hash"] == to_hex(s.head.hash));
  CHECK(contains(r.err, "exported 8 events, positions 1 to 8; last hash " + to_hex(s.head.hash)));
}

TEST_CASE("export --from --to writes that range of positions") {
  SampleStore s;
  const CliResult r = run_cli({"export", s.file(), "--from", "3", "--to", "5", "-q"});
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(Json::parse(lines[0])["position"] == 3);
  CHECK(Json::parse(lines[2])["position"] == 5);
}

TEST_CASE("import of an export keeps every id, position, time and hash, and verifies") {
  SampleStore s;
  const auto exported = s.dir.file("sample.jsonl");
  REQUIRE(run_cli({"export", s.file(), "-o", exported.string()}).code == 0);
  const auto copy = s.dir.file("copy.db");
  const CliResult r =
      run_cli({"import", copy.string(), exported.string(), "--head", to_hex(s.head.hash)});
  CHECK(r.code == 0);
  CHECK(contains(r.err, "imported 8 events"));
  CHECK(contains(r.err, "verified"));
  CHECK(all_events(copy) == all_events(s.path));
  CHECK(run_cli({"verify", copy.string(), "--head", to_hex(s.head.hash)}).code == 0);
  CHECK(files_starting(s.dir.path(), "copy.db.import").empty());
}

TEST_CASE("import reads the export from stdin") {
  SampleStore s;
  const auto exported = s.dir.file("sample.jsonl");
  REQUIRE(run_cli({"export", s.file(), "-o", exported.string()}).code == 0);
  const auto copy = s.dir.file("copy.db");
  CHECK(run_cli({"import", copy.string(), "-q"}, exported).code == 0);
  CHECK(all_events(copy) == all_events(s.path));
}

TEST_CASE("import refuses a file that exists, and leaves it alone") {
  SampleStore s;
  const auto exported = s.dir.file("sample.jsonl");
  REQUIRE(run_cli({"export", s.file(), "-o", exported.string()}).code == 0);
  const std::string before = file_bytes(s.path);
  const CliResult r = run_cli({"import", s.file(), exported.string()});
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "exists"));
  CHECK(file_bytes(s.path) == before);
}

TEST_CASE("import of an altered export exits 3 naming the line, and creates nothing") {
  SampleStore s;
  auto lines = lines_of(run_cli({"export", s.file()}).out);
  Json third = Json::parse(lines[2]);
  third["payload"] = "eyJjZW50cyI6OTAwMH0=";  // {"cents":9000}
  lines[2] = third.dump();
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  write_file(s.dir.file("altered.jsonl"), text);
  const CliResult r =
      run_cli({"import", s.dir.file("copy.db").string(), s.dir.file("altered.jsonl").string()});
  CHECK(r.code == 3);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "line 3"));
  CHECK(contains(r.err, "position 3"));
  CHECK(files_starting(s.dir.path(), "copy.db").empty());
}

TEST_CASE("import of a line that is not an event exits 1 naming the line") {
  SampleStore s;
  auto lines = lines_of(run_cli({"export", s.file()}).out);
  write_file(s.dir.file("bad.jsonl"), lines[0] + "\nnot json\n");
  CliResult r =
      run_cli({"import", s.dir.file("copy.db").string(), s.dir.file("bad.jsonl").string()});
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "line 2"));
  Json first = Json::parse(lines[0]);
  first.erase("hash");
  write_file(s.dir.file("nohash.jsonl"), first.dump() + "\n");
  r = run_cli({"import", s.dir.file("copy.db").string(), s.dir.file("nohash.jsonl").string()});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "line 1: field 'hash' is missing"));
  CHECK(files_starting(s.dir.path(), "copy.db").empty());
}

TEST_CASE("import of a partial export into a new store is refused") {
  SampleStore s;
  write_file(s.dir.file("tail.jsonl"), run_cli({"export", s.file(), "--from", "4"}).out);
  const CliResult r =
      run_cli({"import", s.dir.file("copy.db").string(), s.dir.file("tail.jsonl").string()});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "line 1"));
  CHECK(contains(r.err, "the next must be 1"));
}

TEST_CASE("import --head catches a cut-off export") {
  SampleStore s;
  write_file(s.dir.file("cut.jsonl"), run_cli({"export", s.file(), "--to", "6"}).out);
  const auto copy = s.dir.file("copy.db");
  const CliResult r = run_cli(
      {"import", copy.string(), s.dir.file("cut.jsonl").string(), "--head", to_hex(s.head.hash)});
  CHECK(r.code == 3);
  CHECK(contains(r.err, "cut off"));
  CHECK_FALSE(std::filesystem::exists(copy));
}

}  // namespace
}  // namespace factum::test
