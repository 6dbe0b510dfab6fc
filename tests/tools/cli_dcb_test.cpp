// `factum read DB --query Q` and `factum tags DB`: consistency by query from the command line
// (docs/dcb.md): the events a query matches, in log order, and the tags of the index.
#include "cli_fixture.hpp"
#include "factum/eventstore/tags.hpp"

namespace factum::test {
namespace {

EventData tagged(const std::string& type, std::vector<std::string> tags) {
  EventData e = make_event(type);
  set_tags(e.metadata, std::move(tags));
  return e;
}

// 1 alice joined, 2 bob joined, 3 plain, 4 alice renamed (vip).
std::filesystem::path tagged_store(const TempDir& dir) {
  const std::filesystem::path path = dir.file("tags.db");
  EventStore store = EventStore::open(path, TempStore::fast_options());
  store.append("user-1", ExpectedVersion::any(), tagged("feed.UserJoined", {"handle:alice"}));
  store.append("user-2", ExpectedVersion::any(), tagged("feed.UserJoined", {"handle:bob"}));
  store.append("misc-1", ExpectedVersion::any(), make_event("misc.Noted"));
  store.append("user-1", ExpectedVersion::any(),
               tagged("feed.UserRenamed", {"handle:alice", "vip"}));
  return path;
}

std::vector<std::int64_t> json_positions(const std::string& out) {
  std::vector<std::int64_t> positions;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    positions.push_back(Json::parse(line)["position"].get<std::int64_t>());
  }
  return positions;
}

TEST_CASE("read --query prints the events a query matches, in log order") {
  TempDir dir;
  const std::string db = tagged_store(dir).string();
  const CliResult one = run_cli({"read", db, "--query", "type=feed.UserJoined tag=handle:alice"});
  CHECK(one.code == 0);
  CHECK(contains(one.out, "user-1"));
  CHECK_FALSE(contains(one.out, "user-2"));
  const CliResult any =
      run_cli({"read", db, "--query", "tag=handle:alice | tag=handle:bob", "--json"});
  CHECK(json_positions(any.out) == std::vector<std::int64_t>{1, 2, 4});
  CHECK(contains(any.out, "factum.tags"));
  const CliResult from =
      run_cli({"read", db, "--query", "tag=handle:alice", "--from", "2", "--json"});
  CHECK(json_positions(from.out) == std::vector<std::int64_t>{4});
  const CliResult limit = run_cli({"read", db, "-q", "tag=handle:alice", "-n", "1", "--json"});
  CHECK(json_positions(limit.out) == std::vector<std::int64_t>{1});
  // Usage errors: exit 2, naming what is wrong.
  const CliResult bad = run_cli({"read", db, "--query", "name=alice"});
  CHECK(bad.code == 2);
  CHECK(contains(bad.err, "'name=alice' is not type=TYPE or tag=TAG"));
  CHECK(run_cli({"read", db, "--query", "tag=a,b"}).code == 2);
  CHECK(run_cli({"read", db, "user-1", "--query", "tag=vip"}).code == 2);
  CHECK(run_cli({"read", db}).code == 2);
}

TEST_CASE("tags lists each tag with its count and first and last positions") {
  TempDir dir;
  const std::string db = tagged_store(dir).string();
  const CliResult t = run_cli({"tags", db});
  CHECK(t.code == 0);
  CHECK(contains(t.out, "handle:alice"));
  const CliResult j = run_cli({"tags", db, "--json", "--prefix", "handle:"});
  CHECK(j.code == 0);
  std::istringstream lines(j.out);
  std::vector<Json> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(Json::parse(line));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["tag"] == "handle:alice");
  CHECK(rows[0]["events"] == 2);
  CHECK(rows[0]["first_position"] == 1);
  CHECK(rows[0]["last_position"] == 4);
  CHECK(rows[1]["tag"] == "handle:bob");
  // A store that never tagged lists nothing.
  const std::filesystem::path plain = dir.file("plain.db");
  EventStore::open(plain, TempStore::fast_options())
      .append("s-1", ExpectedVersion::any(), make_event());
  const CliResult none = run_cli({"tags", plain.string(), "--json"});
  CHECK(none.code == 0);
  CHECK(none.out.empty());
}

}  // namespace
}  // namespace factum::test
