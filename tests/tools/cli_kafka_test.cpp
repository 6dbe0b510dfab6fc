// `factum relay`, `factum ingest` and `factum anchor --to kafka://` end to end: the factum binary,
// a child process, talks to a librdkafka mock cluster that lives in this test process (reached
// through its bootstrap servers), which also reads the topics back and produces ingest input
// (labels "tools", "kafka").
#include <signal.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "cli_fixture.hpp"
#include "factum/kafka/headers.hpp"
#include "factum/projections/checkpoint_store.hpp"
#include "mock_cluster.hpp"
#include "support/anchor_keys.hpp"

using namespace factum;
using namespace factum::test;

namespace {

constexpr const char* kTopic = "bank";

std::vector<std::string> relay_args(const SampleStore& s, const MockCluster& cluster,
                                    std::vector<std::string> more = {}) {
  std::vector<std::string> args{"relay",   s.file(), "--brokers", cluster.bootstrap_servers(),
                                "--topic", kTopic,   "--name",    "out"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::vector<std::string> ingest_args(const std::filesystem::path& db, const MockCluster& cluster,
                                     std::vector<std::string> more = {}) {
  std::vector<std::string> args{"ingest",  db.string(), "--brokers", cluster.bootstrap_servers(),
                                "--topic", kTopic,      "--name",    "in"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::vector<RecordToProduce> records(int count) {
  std::vector<RecordToProduce> out;
  for (int i = 0; i < count; ++i) {
    RecordToProduce r;
    r.key = "k";
    r.key += std::to_string(i % 3);
    r.value = "v";
    r.value += std::to_string(i);
    out.push_back(std::move(r));
  }
  return out;
}

// A fresh, empty store file.
std::filesystem::path empty_store(const TempDir& dir) {
  const std::filesystem::path path = dir.file("target.db");
  EventStore::open(path, TempStore::fast_options());
  return path;
}

// A store of `count` events over `streams` streams (event i in stream "s-<i % streams>"),
// appended 100 at a time.
std::filesystem::path large_store(const TempDir& dir, int count, int streams) {
  const std::filesystem::path path = dir.file("large.db");
  EventStore store = EventStore::open(path, TempStore::fast_options());
  for (int first = 0; first < count; first += 100) {
    std::map<std::string, std::vector<EventData>> by_stream;
    for (int i = first; i < std::min(count, first + 100); ++i) {
      by_stream["s-" + std::to_string(i % streams)].push_back(
          make_event("test.Happened", "payload-" + std::to_string(i)));
    }
    for (auto& [stream, events] : by_stream) store.append(stream, ExpectedVersion::any(), events);
  }
  return path;
}

}  // namespace

TEST_CASE("relay --once publishes every event of the log and prints the final status") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 2);
  SampleStore s;
  const CliResult r = run_cli(relay_args(s, cluster, {"--once", "--json"}));
  CHECK(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["published"] == 8);
  CHECK(j["checkpoint"] == 8);
  CHECK(j["head"] == 8);
  CHECK(j["lag"] == 0);
  const auto got = consume_all(cluster.bootstrap_servers(), kTopic, 2, 8);
  CHECK(got.size() == 8);
}

TEST_CASE("relay --transactional-id publishes in committed transactions, seen by read_committed") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 2);
  SampleStore s;
  const CliResult r =
      run_cli(relay_args(s, cluster, {"--transactional-id", "bank-out-1", "--once", "--json"}));
  CHECK(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["published"] == 8);
  CHECK(j["checkpoint"] == 8);
  CHECK(consume_all(cluster.bootstrap_servers(), kTopic, 2, 8).size() == 8);  // read_committed
  CHECK(run_cli(relay_args(s, cluster,
                           {"--transactional-id", "x", "-X", "transactional.id=y", "--once"}))
            .code == 1);
}

TEST_CASE("relay --once again publishes nothing: its checkpoint is in the store") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  SampleStore s;
  REQUIRE(run_cli(relay_args(s, cluster, {"--once"})).code == 0);
  const CliResult again = run_cli(relay_args(s, cluster, {"--once"}));
  CHECK(again.code == 0);
  CHECK(contains(again.out, "relay 'out' published 0 events to topic 'bank'; checkpoint 8"));
  CHECK(consume_all(cluster.bootstrap_servers(), kTopic, 1, 8).size() == 8);
}

TEST_CASE("relay --category publishes one category only") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  SampleStore s;
  const CliResult r =
      run_cli(relay_args(s, cluster, {"--category", "account", "--once", "--json"}));
  CHECK(r.code == 0);
  CHECK(Json::parse(r.out)["published"] == 5);
  for (const ConsumedRecord& record : consume_all(cluster.bootstrap_servers(), kTopic, 1, 5)) {
    CHECK(record.key.rfind("account-", 0) == 0);
  }
}

TEST_CASE("relay follows the log, printing progress, until SIGTERM ends it with exit 0") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  SampleStore s;
  CliProcess relay(relay_args(s, cluster));
  CHECK(consume_all(cluster.bootstrap_servers(), kTopic, 1, 8).size() == 8);
  relay.signal(SIGTERM);
  const CliResult r = relay.wait();
  CHECK(r.code == 0);
  CHECK(contains(r.err, "relay 'out': published 8, checkpoint 8, lag 0"));
  CHECK(contains(r.out, "relay 'out' published 8 events"));
}

TEST_CASE("ingest --once appends every record to PREFIX + key, with its offsets, and exits") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  produce_all(cluster.bootstrap_servers(), kTopic, records(6));
  TempDir dir;
  const auto db = empty_store(dir);
  const CliResult r =
      run_cli(ingest_args(db, cluster, {"--stream-prefix", "pay-", "--once", "--json"}));
  CHECK(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["records"] == 6);
  CHECK(j["lag"] == 0);
  CHECK(j["offsets"]["0"] == 6);
  EventStore store = EventStore::open(db, TempStore::fast_options());
  CHECK(store.head_position() == 6);
  CHECK(store.stream_version("pay-k0") == 2);
}

TEST_CASE("ingest --once again appends nothing, and the stream prefix defaults to the topic") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 2);
  produce_all(cluster.bootstrap_servers(), kTopic, records(6));
  TempDir dir;
  const auto db = empty_store(dir);
  REQUIRE(run_cli(ingest_args(db, cluster, {"--once"})).code == 0);
  const CliResult again = run_cli(ingest_args(db, cluster, {"--once"}));
  CHECK(again.code == 0);
  CHECK(contains(again.out, "ingest 'in' handled 0 records of topic 'bank'; lag 0"));
  EventStore store = EventStore::open(db, TempStore::fast_options());
  CHECK(store.head_position() == 6);
  CHECK(store.stream_version("bank-k1") == 2);
}

TEST_CASE("ingest follows the topic, printing progress, until SIGTERM ends it with exit 0") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  produce_all(cluster.bootstrap_servers(), kTopic, records(3));
  TempDir dir;
  const auto db = empty_store(dir);
  CliProcess ingest(ingest_args(db, cluster));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  EventStore store = EventStore::open(db, TempStore::fast_options());
  while (store.head_position() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ingest.signal(SIGTERM);
  const CliResult r = ingest.wait();
  CHECK(r.code == 0);
  CHECK(store.head_position() == 3);
  CHECK(contains(r.err, "ingest 'in': appended 3"));
  CHECK(contains(r.out, "ingest 'in' handled 3 records"));
}

TEST_CASE("two ingests with --group share the topic, and every record is stored once") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 4);
  TempDir dir;
  const auto db = empty_store(dir);
  const std::vector<std::string> group{
      "--group", "--json", "-X", "session.timeout.ms=3000", "-X", "heartbeat.interval.ms=300"};
  CliProcess a(ingest_args(db, cluster, group));
  CliProcess b(ingest_args(db, cluster, group));
  // Records keyed k0..k15 (every partition gets some), a round a second: once the group has
  // settled (a few seconds on the mock cluster), each ingest reads its share of them.
  constexpr int kRounds = 12;
  constexpr int kPerRound = 16;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<RecordToProduce> batch;
    for (int i = 0; i < kPerRound; ++i) {
      RecordToProduce r;
      r.key = "k";
      r.key += std::to_string(i);
      r.value = "v";
      r.value += std::to_string(round * kPerRound + i);
      batch.push_back(std::move(r));
    }
    produce_all(cluster.bootstrap_servers(), kTopic, batch);
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EventStore store = EventStore::open(db, TempStore::fast_options());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (store.head_position() < kRounds * kPerRound &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  a.signal(SIGTERM);
  b.signal(SIGTERM);
  const CliResult ra = a.wait();
  const CliResult rb = b.wait();
  REQUIRE(ra.code == 0);
  REQUIRE(rb.code == 0);
  CHECK(store.head_position() == kRounds * kPerRound);  // none lost, none twice
  const Json ja = Json::parse(ra.out);
  const Json jb = Json::parse(rb.out);
  CHECK(ja["records"].get<int>() > 0);  // both did some of the work
  CHECK(jb["records"].get<int>() > 0);
  CHECK(ja["lag"] == 0);
}

TEST_CASE("relay and ingest refuse a missing store with one line, and need their options") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  TempDir dir;
  const std::string missing = dir.file("missing.db").string();
  const CliResult relay = run_cli({"relay", missing, "--brokers", cluster.bootstrap_servers(),
                                   "--topic", kTopic, "--name", "out", "--once"});
  CHECK(relay.code == 1);
  CHECK(one_line_error(relay));
  CHECK_FALSE(std::filesystem::exists(missing));
  const CliResult ingest = run_cli({"ingest", missing, "--brokers", cluster.bootstrap_servers(),
                                    "--topic", kTopic, "--name", "in", "--once"});
  CHECK(ingest.code == 1);
  CHECK(one_line_error(ingest));
  SampleStore s;
  CHECK(run_cli({"relay", s.file(), "--topic", kTopic, "--name", "out"}).code == 2);
  CHECK(run_cli({"ingest", s.file(), "--brokers", "x:1", "--name", "in"}).code == 2);
  CHECK(run_cli({"relay", s.file(), "--brokers", "x:1", "--topic", kTopic}).code == 2);
  CHECK(run_cli(relay_args(s, cluster, {"-X", "novalue"})).code == 2);
}

TEST_CASE("relay --once with the broker down fails after --timeout with one line, exit 1") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  SampleStore s;
  cluster.set_down();
  const CliResult r = run_cli(relay_args(s, cluster, {"--once", "--timeout", "1"}));
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "position 1"));
  CHECK(contains(r.err, "no broker confirmed it within 1 s"));
  cluster.set_up();
}

TEST_CASE("relay with the broker gone ends promptly on SIGTERM, exit 0, checkpoint kept") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  SampleStore s;
  cluster.set_down();
  CliProcess relay(relay_args(s, cluster, {"--timeout", "120"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the events are in flight
  relay.signal(SIGTERM);
  const CliResult r = relay.wait(std::chrono::seconds(15));
  CHECK(r.code == 0);
  CHECK(contains(r.out, "relay 'out' published 0 events to topic 'bank'; checkpoint 0"));
  cluster.set_up();
}

TEST_CASE("relay refuses -X message.timeout.ms: --timeout is the relay's deadline") {
  MockCluster cluster;
  SampleStore s;
  const CliResult r = run_cli(relay_args(s, cluster, {"-X", "message.timeout.ms=5000", "--once"}));
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "--timeout"));
}

TEST_CASE("a librdkafka property the client refuses is a one-line error, exit 1") {
  MockCluster cluster;
  SampleStore s;
  const CliResult r = run_cli(relay_args(s, cluster, {"-X", "no.such.property=1", "--once"}));
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "no.such.property"));
  CHECK(r.err.rfind("factum: kafka: ", 0) == 0);  // the library's prefix, not said twice
}

TEST_CASE("a property name with control characters is shown escaped in the error") {
  MockCluster cluster;
  SampleStore s;
  const CliResult r = run_cli(relay_args(s, cluster, {"-X", "no.such\x1b[31m\x07=1", "--once"}));
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "no.such\\x1b[31m\\x07"));
  CHECK_FALSE(contains(r.err, "\x1b"));
}

// librdkafka is loaded when the bridge is first used (factum/kafka/librdkafka.hpp): without it,
// relay and ingest are refused with one line that names the library, the store is left as it
// was, and every other command works.
TEST_CASE("without librdkafka, relay and ingest are one-line refusals and the rest works") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  SampleStore s;
  const std::string before = run_cli({"export", s.file(), "-q"}).out;
  REQUIRE_FALSE(before.empty());
  CliOptions no_rdkafka;
  const std::string missing = s.dir.file("no-such-librdkafka.so.1").string();
  no_rdkafka.env = {"FACTUM_LIBRDKAFKA=" + missing};
  const CliResult relay = run_cli(relay_args(s, cluster, {"--once"}), no_rdkafka);
  CHECK(relay.code == 1);
  CHECK(one_line_error(relay));
  CHECK(contains(relay.err, "cannot load librdkafka ('" + missing + "')"));
  const CliResult ingest = run_cli(ingest_args(s.file(), cluster, {"--once"}), no_rdkafka);
  CHECK(ingest.code == 1);
  CHECK(one_line_error(ingest));
  CHECK(contains(ingest.err, "cannot load librdkafka"));
  const CliResult verify = run_cli({"verify", s.file()}, no_rdkafka);
  INFO(verify.err);
  CHECK(verify.code == 0);
  CHECK(run_cli({"export", s.file(), "-q"}).out == before);
  // With librdkafka found again, the same relay publishes.
  CHECK(run_cli(relay_args(s, cluster, {"--once"})).code == 0);
}

TEST_CASE("after a SIGKILL mid-way, relay --once resumes from the checkpoint: none lost") {
  constexpr int kEvents = 6000;
  constexpr int kPartitions = 3;
  MockCluster cluster;
  cluster.create_topic(kTopic, kPartitions);
  cluster.set_rtt(100);  // with 10 records a request, the 6000 take seconds: time to kill it
  TempDir dir;
  const auto db = large_store(dir, kEvents, 7);
  EventStore store = EventStore::open(db, TempStore::fast_options());
  const Position head = store.head_position();
  REQUIRE(head == kEvents);
  const CheckpointStore checkpoints(store);  // creates the table before the relay runs
  const auto checkpoint = [&] { return checkpoints.load("kafka-relay:out"); };
  const std::vector<std::string> args{
      "relay",  db.string(), "--brokers", cluster.bootstrap_servers(), "--topic", kTopic,
      "--name", "out",       "-X",        "batch.num.messages=10"};

  // Killed once a first batch is confirmed and before the last one.
  CliProcess relay(args);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (checkpoint() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  relay.signal(SIGKILL);
  CHECK(relay.wait().code == 128 + SIGKILL);
  const Position at_kill = checkpoint();  // the process is gone: it no longer moves
  REQUIRE(at_kill > 0);
  REQUIRE(at_kill < head);

  cluster.set_rtt(0);
  std::vector<std::string> once = args;
  once.insert(once.end(), {"--once", "--json"});
  const CliResult r = run_cli(once);
  REQUIRE(r.code == 0);
  CHECK(Json::parse(r.out)["checkpoint"] == head);
  CHECK(checkpoint() == head);

  const auto records = consume_all(cluster.bootstrap_servers(), kTopic, kPartitions, kEvents);
  std::set<std::string> ids;
  for (const RecordedEvent& e : store.read_all()) ids.insert(e.id.to_string());
  std::set<std::string> seen;
  std::map<std::string, std::uint64_t> last_version;  // per stream, of first appearances
  std::size_t repeats = 0;
  for (const ConsumedRecord& record : records) {
    const std::string& id = record.headers.at(kafka::kEventIdHeader);
    const std::uint64_t position = std::stoull(record.headers.at(kafka::kPositionHeader));
    if (!seen.insert(id).second) {
      ++repeats;
      CHECK(position > at_kill);  // only the unconfirmed tail is published twice
      continue;
    }
    const std::uint64_t version = std::stoull(record.headers.at(kafka::kStreamVersionHeader));
    CHECK(version == last_version[record.key] + 1);
    last_version[record.key] = version;
  }
  CHECK(seen == ids);  // every event, none lost
  MESSAGE("checkpoint at kill " << at_kill << ", records " << records.size() << ", repeats "
                                << repeats);
}

TEST_CASE("ingest with the broker gone ends promptly on SIGTERM, exit 0") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 2);
  produce_all(cluster.bootstrap_servers(), kTopic, records(6));
  TempDir dir;
  const auto db = empty_store(dir);
  CliProcess ingest(ingest_args(db, cluster));
  EventStore store = EventStore::open(db, TempStore::fast_options());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (store.head_position() < 6 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(store.head_position() == 6);
  cluster.set_down();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ingest.signal(SIGTERM);
  const CliResult r = ingest.wait(std::chrono::seconds(15));
  CHECK(r.code == 0);
  CHECK(contains(r.out, "ingest 'in' handled 6 records"));
  cluster.set_up();
}

TEST_CASE("ingest waiting for a cluster out of reach ends promptly on SIGTERM") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  TempDir dir;
  const auto db = empty_store(dir);
  cluster.set_down();
  CliProcess ingest(ingest_args(db, cluster, {"--timeout", "120"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // it waits for the partitions
  ingest.signal(SIGTERM);
  const CliResult r = ingest.wait(std::chrono::seconds(15));
  CHECK(r.code == 0);
  cluster.set_up();
}

TEST_CASE("ingest --once with the broker out of reach fails within about --timeout") {
  MockCluster cluster;
  cluster.create_topic(kTopic, 1);
  TempDir dir;
  const auto db = empty_store(dir);
  cluster.set_down();
  CliOptions options;
  options.deadline = std::chrono::seconds(7);  // --timeout 2: well within, not the 10 s it was
  const CliResult r = run_cli(ingest_args(db, cluster, {"--once", "--timeout", "2"}), options);
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "topic 'bank'"));
  cluster.set_up();
}

// Batches behind one stuck on a slow partition are confirmed and must not make room for more:
// what a crash publishes twice is bounded by what was handed over after the checkpoint.
TEST_CASE(
    "after a SIGKILL, the events in the topic past the checkpoint are at most --max-in-flight") {
  constexpr int kEvents = 2000;
  constexpr int kPartitions = 3;
  constexpr int kMaxInFlight = 50;
  MockCluster cluster(3);
  cluster.create_topic(kTopic, kPartitions);
  for (int p = 0; p < kPartitions; ++p) cluster.set_leader(kTopic, p, p + 1);
  cluster.set_broker_rtt(1, 300);  // partition 0's leader answers slowly
  TempDir dir;
  const auto db = large_store(dir, kEvents, 97);
  EventStore store = EventStore::open(db, TempStore::fast_options());
  const CheckpointStore checkpoints(store);  // creates the table before the relay runs
  CliProcess relay({"relay", db.string(), "--brokers", cluster.bootstrap_servers(), "--topic",
                    kTopic, "--name", "out", "--max-in-flight", std::to_string(kMaxInFlight)});
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  relay.signal(SIGKILL);
  CHECK(relay.wait().code == 128 + SIGKILL);
  const Position at_kill = checkpoints.load("kafka-relay:out");
  cluster.set_broker_rtt(1, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // what was sent lands
  const std::int64_t in_topic = records_in(cluster.bootstrap_servers(), kTopic, kPartitions);
  MESSAGE("checkpoint at kill " << at_kill << ", records in the topic " << in_topic);
  CHECK(in_topic > 0);
  CHECK(in_topic - static_cast<std::int64_t>(at_kill) <= kMaxInFlight);
}

TEST_CASE("anchor --to kafka://BROKERS/TOPIC signs heads onto a topic, and verify reads them") {
  MockCluster cluster;
  cluster.create_topic("anchors", 1);
  SampleStore s;
  const KeyFiles keys = make_ed25519_keys(s.dir.file(""));
  const std::string to = "kafka://" + cluster.bootstrap_servers() + "/anchors";
  const std::vector<std::string> anchor = {"anchor", s.file(), "--key", keys.private_key.string(),
                                           "--to",   to};
  const CliResult r = run_cli(anchor);
  CHECK(r.code == 0);
  CHECK(contains(r.out, "anchored position 8 head " + to_hex(s.head.hash)));
  const std::vector<std::string> verify = {
      "verify", s.file(), "--anchors", to, "--public-key", keys.public_key.string(), "--json"};
  const Json ok = Json::parse(run_cli(verify).out);
  CHECK(ok["ok"] == true);
  CHECK(ok["anchors"] == 1);
  s.tamper(
      "DELETE FROM events WHERE position >= 7;"
      "UPDATE sqlite_sequence SET seq = 6 WHERE name = 'events';");
  const CliResult behind = run_cli(verify);
  CHECK(behind.code == 3);
  CHECK(Json::parse(behind.out)["problem"] == "behind_anchor");
  CHECK(run_cli(anchor).code == 1);  // not anchored again
  const CliResult bad = run_cli({"anchor", s.file(), "--key", keys.private_key.string(), "--to",
                                 "kafka://" + cluster.bootstrap_servers()});
  CHECK(bad.code == 1);
  CHECK(contains(bad.err, "is not kafka://HOST:PORT"));
}
