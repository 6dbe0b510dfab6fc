// The factum command line, end to end: projections and checkpoint reset.
#include "cli_fixture.hpp"

namespace factum::test {
namespace {

// Counts events per stream into a table of the store's file.
class Counts final : public Projection {
 public:
  std::string name() const override { return "counts"; }
  std::uint32_t version() const override { return 2; }
  void reset(ProjectionContext& ctx) override {
    ctx.sql().execute("CREATE TABLE " + ctx.table("counts") +
                      " (stream TEXT PRIMARY KEY, n INTEGER NOT NULL)");
  }
  void apply(const RecordedEvent& e, ProjectionContext& ctx) override {
    ctx.sql().execute(
        "INSERT INTO " + ctx.table("counts") +
            " (stream, n) VALUES (?1, 1) ON CONFLICT (stream) DO UPDATE SET n = n + 1",
        {e.stream_id});
  }
};

// The sample store with the projection "counts" caught up and a subscription checkpoint
// "mailer" at position 5.
struct ProjectedStore : SampleStore {
  ProjectedStore() {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    {
      ProjectionEngine engine(store);
      engine.add(std::make_shared<Counts>());
      REQUIRE(engine.wait_idle(std::chrono::seconds(10)));
    }
    CheckpointStore(store).save("mailer", 5);
  }
  Position checkpoint(const std::string& name) const {
    StoreOptions options;
    options.read_only = true;
    EventStore store = EventStore::open(path, options);
    return CheckpointStore(store).load(name);
  }
};

TEST_CASE("projections shows every recorded projection and checkpoint with its lag") {
  ProjectedStore s;
  const CliResult r = run_cli({"projections", s.file(), "--json"});
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["head"] == 8);
  REQUIRE(j["projections"].size() == 1);
  const Json& p = j["projections"][0];
  CHECK(p["name"] == "counts");
  CHECK(p["version"] == 2);
  CHECK(p["checkpoint"] == 8);
  CHECK(p["lag"] == 0);
  CHECK(p["error"].is_null());
  REQUIRE(j["checkpoints"].size() == 1);
  CHECK(j["checkpoints"][0]["name"] == "mailer");
  CHECK(j["checkpoints"][0]["position"] == 5);
  CHECK(j["checkpoints"][0]["lag"] == 3);

  const CliResult table = run_cli({"projections", s.file()});
  CHECK(table.code == 0);
  CHECK(contains(table.out, "PROJECTION"));
  CHECK(contains(table.out, "counts"));
  CHECK(contains(table.out, "mailer"));
}

TEST_CASE("projections on a store without any says so") {
  SampleStore s;
  const CliResult r = run_cli({"projections", s.file()});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "no projections or checkpoints"));
}

TEST_CASE("checkpoint reset moves a subscription's checkpoint back") {
  ProjectedStore s;
  CliResult r = run_cli({"checkpoint", "reset", s.file(), "mailer", "--to", "2"});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "checkpoint 'mailer' reset from 5 to 2"));
  CHECK(s.checkpoint("mailer") == 2);
  r = run_cli({"checkpoint", "reset", s.file(), "mailer"});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "checkpoint 'mailer' reset from 2 to 0"));
  CHECK(s.checkpoint("mailer") == 0);
}

TEST_CASE("checkpoint reset refuses a projection's checkpoint unless forced") {
  ProjectedStore s;
  CliResult r = run_cli({"checkpoint", "reset", s.file(), "counts"});
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "projection"));
  CHECK(s.checkpoint("counts") == 8);
  r = run_cli({"checkpoint", "reset", s.file(), "counts", "--force"});
  CHECK(r.code == 0);
  CHECK(s.checkpoint("counts") == 0);
}

TEST_CASE("checkpoint reset of an unknown name or past the head is an error") {
  ProjectedStore s;
  CliResult r = run_cli({"checkpoint", "reset", s.file(), "nobody"});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "no checkpoint named 'nobody'"));
  r = run_cli({"checkpoint", "reset", s.file(), "mailer", "--to", "99"});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "past the head"));
  CHECK(s.checkpoint("mailer") == 5);
}

}  // namespace
}  // namespace factum::test
