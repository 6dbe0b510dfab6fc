// bench/kafka_bench.cpp — the Kafka bridge (docs/kafka.md) against raw librdkafka, on one
// librdkafka mock cluster in this process (no network, no broker: what is measured is the
// bridge's own cost, not a broker's).
//
//   relay   a store of --events events (--payload bytes each) published by factum::kafka::Relay
//           (publish_available, what run() does: batches overlap),
//           against a raw idempotent producer (enable.idempotence=true, acks=all) sending the
//           same records (same key, value and headers) from memory and waiting for every
//           delivery report. Target: relay/raw >= 0.70. Also shown, not a target: the relay's
//           publish_once in a loop (one batch at a time, waiting for each batch's reports), and
//           the raw producer waiting for every delivery report after each --relay-batch records,
//           as publish_once does. Both sides leave out their first batch
//           (a new idempotent producer spends up to a second getting its producer id): the
//           store holds --relay-batch warm-up events before the --events timed ones.
//   ingest  factum::kafka::Ingest of a topic of --events records (key and value, no factum
//           headers: a foreign producer's topic), against the ceiling raw consume + append: a
//           raw consumer reading the same records, plus a plain factum append loop of 100-event
//           appends of the same payloads into a fresh store. Ceiling time = the sum of both.
//           Target: ingest/ceiling >= 0.50.
// Each side runs --reps times (alternating the order); the best run counts.
//
//   kafka_bench [--events N] [--payload BYTES] [--partitions N] [--reps N] [--relay-batch N]
//               [--durability full|normal] [--dir DIR] [--json] [--strict]
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "factum/eventstore/event_store.hpp"
#include "factum/kafka/headers.hpp"
#include "factum/kafka/ingest.hpp"
#include "factum/kafka/relay.hpp"
#include "support.hpp"

namespace {

namespace fs = std::filesystem;

constexpr double kRelayTarget = 0.70;
constexpr double kIngestTarget = 0.50;
constexpr std::size_t kAppendBatch = 100;
constexpr int kStreams = 50;

struct Config {
  std::uint64_t events = 40000;
  std::size_t payload = 200;
  int partitions = 4;
  int reps = 2;
  std::size_t relay_batch = 1000;
  factum::Durability durability = factum::Durability::full;
  fs::path dir = fs::temp_directory_path();
  bool json = false;
  bool strict = false;
};

Config parse(int argc, char** argv) {
  Config c;
  std::string dir;
  CLI::App app("measures the Kafka bridge (Relay, Ingest) against raw librdkafka on a mock cluster",
               "kafka_bench");
  bench::cli_defaults(app);
  bench::add_positive(
      app, "--events", c.events,
      "events relayed and records ingested (40000; the mock cluster keeps about 5 MB "
      "per partition, so far more than 20000 per partition loses the oldest)");
  bench::add_positive(app, "--payload", c.payload, "payload bytes per event (200)", "BYTES");
  bench::add_positive(app, "--partitions", c.partitions, "partitions of each topic (4)");
  bench::add_positive(app, "--reps", c.reps, "runs of each side, best counts (2)");
  bench::add_positive(app, "--relay-batch", c.relay_batch,
                      "RelayOptions::batch_size (default 1000, the relay's default)");
  bench::add_durability(app, c.durability, "the stores' durability (default full)");
  app.add_option("--dir", dir, "where the temporary directory goes (default $TMPDIR or /tmp)")
      ->type_name("DIR");
  app.add_flag("--json", c.json, "print the results as JSON");
  app.add_flag("--strict", c.strict, "exit with status 1 when a target is missed");
  bench::parse_or_exit(app, argc, argv);
  if (!dir.empty()) c.dir = dir;
  return c;
}

// ---------------------------------------------------------------------------------------------
// Raw librdkafka

void fail(const std::string& what) { throw std::runtime_error("kafka_bench: " + what); }

void set(rd_kafka_conf_t* conf, const char* name, const std::string& value) {
  std::array<char, 512> error{};
  if (rd_kafka_conf_set(conf, name, value.c_str(), error.data(), error.size()) !=
      RD_KAFKA_CONF_OK) {
    fail(std::string(name) + ": " + error.data());
  }
}

struct ClientDeleter {
  void operator()(rd_kafka_t* rk) const noexcept { rd_kafka_destroy(rk); }
};
using Client = std::unique_ptr<rd_kafka_t, ClientDeleter>;

Client new_client(rd_kafka_type_t type, rd_kafka_conf_t* conf) {
  std::array<char, 512> error{};
  rd_kafka_t* rk = rd_kafka_new(type, conf, error.data(), error.size());
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    fail(std::string("rd_kafka_new: ") + error.data());
  }
  return Client(rk);
}

// The mock cluster, alive as long as this object (one broker).
class MockCluster {
 public:
  MockCluster() : owner_(new_client(RD_KAFKA_PRODUCER, rd_kafka_conf_new())) {
    cluster_ = rd_kafka_mock_cluster_new(owner_.get(), 1);
    if (cluster_ == nullptr) fail("rd_kafka_mock_cluster_new failed");
  }
  ~MockCluster() { rd_kafka_mock_cluster_destroy(cluster_); }
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  std::string bootstraps() const { return rd_kafka_mock_cluster_bootstraps(cluster_); }
  void create_topic(const std::string& topic, int partitions) {
    if (rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, 1) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      fail("cannot create topic " + topic);
    }
  }

 private:
  Client owner_;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
};

// One record as the relay sends it.
struct Record {
  std::string key;
  std::string value;
  std::vector<std::pair<const char*, std::string>> headers;
};

struct Delivered {
  std::uint64_t ok = 0;
  std::uint64_t failed = 0;
};

void count_delivery(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
  auto* d = static_cast<Delivered*>(opaque);
  if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    ++d->ok;
  } else {
    ++d->failed;
  }
}

// Hands one record to the producer, serving delivery reports while its queue is full.
void produce_one(rd_kafka_t* rk, const std::string& topic, const Record& r) {
  for (;;) {
    rd_kafka_headers_t* headers = rd_kafka_headers_new(r.headers.size());
    for (const auto& [name, value] : r.headers) {
      rd_kafka_header_add(headers, name, -1, value.data(), static_cast<ssize_t>(value.size()));
    }
    std::array<rd_kafka_vu_t, 5> vus{};
    vus[0].vtype = RD_KAFKA_VTYPE_TOPIC;
    vus[0].u.cstr = topic.c_str();
    vus[1].vtype = RD_KAFKA_VTYPE_KEY;
    vus[1].u.mem = {const_cast<char*>(r.key.data()), r.key.size()};
    vus[2].vtype = RD_KAFKA_VTYPE_VALUE;
    vus[2].u.mem = {const_cast<char*>(r.value.data()), r.value.size()};
    vus[3].vtype = RD_KAFKA_VTYPE_HEADERS;
    vus[3].u.headers = headers;
    vus[4].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vus[4].u.i = RD_KAFKA_MSG_F_COPY;
    rd_kafka_error_t* error = rd_kafka_produceva(rk, vus.data(), vus.size());
    if (error == nullptr) return;
    const rd_kafka_resp_err_t code = rd_kafka_error_code(error);
    rd_kafka_error_destroy(error);
    rd_kafka_headers_destroy(headers);
    if (code != RD_KAFKA_RESP_ERR__QUEUE_FULL) fail("produce refused a record");
    rd_kafka_poll(rk, 10);
  }
}

// Produces `records` to `topic`, waiting out a full queue, and waits for every delivery report;
// returns the seconds taken by the records after the first `warm` (those are produced and
// flushed first, untimed: a new idempotent producer spends up to a second getting its producer
// id, which the relay's first batch pays too). `idempotent`: enable.idempotence=true and
// acks=all, as the relay's producer. `wait_every` > 0: also waits for every delivery report
// after each `wait_every` records, as the relay does after each batch.
double produce(const std::string& bootstraps, const std::string& topic,
               const std::vector<Record>& records, bool idempotent, std::size_t warm = 0,
               std::size_t wait_every = 0) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", bootstraps);
  if (idempotent) {
    set(conf, "enable.idempotence", "true");
    set(conf, "acks", "all");
  }
  Delivered delivered;
  rd_kafka_conf_set_dr_msg_cb(conf, &count_delivery);
  rd_kafka_conf_set_opaque(conf, &delivered);
  const Client rk = new_client(RD_KAFKA_PRODUCER, conf);
  auto flush = [&rk] {
    if (rd_kafka_flush(rk.get(), 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) fail("flush timed out");
  };
  auto start = bench::Clock::now();
  for (std::size_t i = 0; i < records.size(); ++i) {
    produce_one(rk.get(), topic, records[i]);
    bench::check_interrupt();
    if (i + 1 == warm) {
      flush();
      start = bench::Clock::now();
    } else if (wait_every > 0 && (i + 1 - warm) % wait_every == 0) {
      flush();
    }
  }
  flush();
  const double seconds = bench::seconds_since(start);
  if (delivered.ok != records.size()) fail("a record was not delivered");
  return seconds;
}

// Reads `count` records of `topic` from the beginning of every partition; returns the seconds
// from the consumer's creation to the last record (its close is not counted, as the Ingest's
// destruction is not), and adds the payload bytes to `bytes`.
double consume(std::uint64_t& bytes, const std::string& bootstraps, const std::string& topic,
               int partitions, std::uint64_t count) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", bootstraps);
  set(conf, "group.id", "kafka-bench-raw");
  set(conf, "enable.auto.commit", "false");
  set(conf, "enable.auto.offset.store", "false");
  const auto start = bench::Clock::now();
  const Client rk = new_client(RD_KAFKA_CONSUMER, conf);
  rd_kafka_poll_set_consumer(rk.get());
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk.get(), list);
  rd_kafka_topic_partition_list_destroy(list);
  std::uint64_t got = 0;
  const auto deadline = bench::Clock::now() + std::chrono::seconds(60);
  while (got < count) {
    if (bench::Clock::now() > deadline) fail("the raw consumer timed out");
    bench::check_interrupt();
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk.get(), 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++got;
      bytes += m->len;
    }
    rd_kafka_message_destroy(m);
  }
  const double seconds = bench::seconds_since(start);
  rd_kafka_consumer_close(rk.get());
  return seconds;
}

// ---------------------------------------------------------------------------------------------
// The data

std::string payload_of(std::uint64_t i, std::size_t size) {
  std::string out(size, 'x');
  const std::string tag = std::to_string(i);
  std::copy(tag.begin(), tag.end(), out.begin());
  return out;
}

factum::Bytes bytes_of(const std::string& s) {
  factum::Bytes out(s.size());
  std::transform(s.begin(), s.end(), out.begin(), [](char c) { return std::byte(c); });
  return out;
}

std::string stream_of(std::uint64_t batch) { return "order-" + std::to_string(batch % kStreams); }

factum::StoreOptions store_options(const Config& c) {
  factum::StoreOptions options;
  options.durability = c.durability;
  return options;
}

// Fills `store` with `count` events, appended kAppendBatch at a time.
void fill(factum::EventStore& store, const Config& c, std::uint64_t count) {
  std::vector<factum::EventData> batch;
  for (std::uint64_t i = 0; i < count; ++i) {
    factum::EventData e;
    e.type = "bench.OrderPlaced";
    e.payload = bytes_of(payload_of(i, c.payload));
    batch.push_back(std::move(e));
    if (batch.size() == kAppendBatch || i + 1 == count) {
      store.append(stream_of(i / kAppendBatch), factum::ExpectedVersion::any(), batch);
      batch.clear();
    }
  }
}

// The relay's records for the events of `store`, built as relay.cpp builds them.
std::vector<Record> relay_records(const factum::EventStore& store) {
  std::vector<Record> out;
  for (const factum::RecordedEvent& e : store.read_all()) {
    Record r;
    r.key = e.stream_id;
    r.value.assign(reinterpret_cast<const char*>(e.payload.data()), e.payload.size());
    r.headers = {{factum::kafka::kEventIdHeader, e.id.to_string()},
                 {factum::kafka::kTypeHeader, e.type},
                 {factum::kafka::kSchemaVersionHeader, std::to_string(e.schema_version)},
                 {factum::kafka::kPositionHeader, std::to_string(e.position)},
                 {factum::kafka::kStreamVersionHeader, std::to_string(e.stream_version)}};
    out.push_back(std::move(r));
  }
  return out;
}

// Records of a foreign producer: key and value, no headers.
std::vector<Record> ingest_records(const Config& c) {
  std::vector<Record> out;
  for (std::uint64_t i = 0; i < c.events; ++i) {
    out.push_back({"k" + std::to_string(i % 1000), payload_of(i, c.payload), {}});
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The runs

struct Run {
  double seconds = 0;
  std::uint64_t events = 0;
  double rate() const { return seconds > 0 ? static_cast<double>(events) / seconds : 0; }
};

void keep_best(Run& best, const Run& r) {
  if (best.events == 0 || r.seconds < best.seconds) best = r;
}

class Bench {
 public:
  explicit Bench(const Config& c) : c_(c), dir_(c.dir, "factum-kafkabench") {}

  void run() {
    factum::EventStore source = factum::EventStore::open(dir_.fresh("relay"), store_options(c_));
    fill(source, c_, c_.relay_batch + c_.events);  // a warm-up batch, then the timed events
    const std::vector<Record> relayed = relay_records(source);
    const std::vector<Record> foreign = ingest_records(c_);
    const std::string in_topic = topic("in");
    produce(cluster_.bootstraps(), in_topic, foreign, false);
    for (int i = 0; i < c_.reps; ++i) {
      if (i % 2 == 0) {
        keep_best(relay_, run_relay(source, true));
        keep_best(raw_produce_, run_raw_produce(relayed, 0));
      } else {
        keep_best(raw_produce_, run_raw_produce(relayed, 0));
        keep_best(relay_, run_relay(source, true));
      }
      keep_best(relay_once_, run_relay(source, false));
      keep_best(raw_batched_, run_raw_produce(relayed, c_.relay_batch));
      keep_best(ingest_, run_ingest(in_topic));
      keep_best(raw_consume_, run_raw_consume(in_topic));
      keep_best(append_, run_append_loop(foreign));
    }
  }

  int report() const {
    const double relay_ratio = relay_.rate() / raw_produce_.rate();
    const double ceiling_s = raw_consume_.seconds + append_.seconds;
    const double ingest_ratio = ceiling_s / ingest_.seconds;
    const bool pass = relay_ratio >= kRelayTarget && ingest_ratio >= kIngestTarget;
    if (c_.json) {
      print_json(relay_ratio, ingest_ratio, ceiling_s, pass);
    } else {
      print_text(relay_ratio, ingest_ratio, ceiling_s, pass);
    }
    return c_.strict && !pass ? 1 : 0;
  }

 private:
  std::string topic(const char* what) {
    const std::string name = std::string("bench-") + what + "-" + std::to_string(++topics_);
    cluster_.create_topic(name, c_.partitions);
    return name;
  }

  // The relay's first batch is a warm-up, untimed (see produce()).
  // `overlapped`: publish_available (run's path, batches overlapping); else publish_once in a
  // loop (one batch at a time).
  Run run_relay(factum::EventStore& store, bool overlapped) {
    factum::kafka::RelayOptions options;
    options.name = "bench-" + std::to_string(++names_);
    options.topic = topic("relay");
    options.kafka = {{"bootstrap.servers", cluster_.bootstraps()}};
    options.batch_size = c_.relay_batch;
    factum::kafka::Relay relay(store, options);
    if (relay.publish_once() != c_.relay_batch) fail("the relay's warm-up batch fell short");
    std::uint64_t published = 0;
    const auto start = bench::Clock::now();
    if (overlapped) published = relay.publish_available();
    while (std::size_t n = overlapped ? 0 : relay.publish_once()) {
      published += n;
      bench::check_interrupt();
    }
    const double s = bench::seconds_since(start);
    if (published != c_.events) fail("the relay published " + std::to_string(published));
    return {s, published};
  }

  // The same warm-up as the relay's; `wait_every` > 0 waits for every delivery report after
  // each `wait_every` records, as the relay does after each batch.
  Run run_raw_produce(const std::vector<Record>& records, std::size_t wait_every) {
    const double s =
        produce(cluster_.bootstraps(), topic("raw"), records, true, c_.relay_batch, wait_every);
    return {s, records.size() - c_.relay_batch};
  }

  Run run_ingest(const std::string& in_topic) {
    factum::EventStore store = factum::EventStore::open(dir_.fresh("ingest"), store_options(c_));
    factum::kafka::IngestOptions options;
    options.name = "bench";
    options.topic = in_topic;
    options.kafka = {{"bootstrap.servers", cluster_.bootstraps()}};
    options.stream_for_key = [](std::string_view key) { return "in-" + std::string(key); };
    const auto start = bench::Clock::now();
    factum::kafka::Ingest ingest(store, options);
    std::uint64_t handled = 0;
    const auto deadline = bench::Clock::now() + std::chrono::seconds(120);
    while (handled < c_.events) {
      if (bench::Clock::now() > deadline) fail("the ingest timed out");
      handled += ingest.poll_once();
      bench::check_interrupt();
    }
    const double s = bench::seconds_since(start);
    if (store.head_position() != c_.events) fail("the ingest appended the wrong number");
    return {s, handled};
  }

  Run run_raw_consume(const std::string& in_topic) {
    return {consume(bytes_read_, cluster_.bootstraps(), in_topic, c_.partitions, c_.events),
            c_.events};
  }

  // 100-event appends of the same payloads, each batch to one stream.
  Run run_append_loop(const std::vector<Record>& records) {
    factum::EventStore store = factum::EventStore::open(dir_.fresh("append"), store_options(c_));
    const auto start = bench::Clock::now();
    std::vector<factum::EventData> batch;
    for (std::size_t i = 0; i < records.size(); ++i) {
      factum::EventData e;
      e.type = "kafka.Record";
      e.payload = bytes_of(records[i].value);
      batch.push_back(std::move(e));
      if (batch.size() == kAppendBatch || i + 1 == records.size()) {
        store.append("in-" + records[i].key, factum::ExpectedVersion::any(), batch);
        batch.clear();
      }
    }
    return {bench::seconds_since(start), records.size()};
  }

  static std::string side(const char* name, const Run& r) {
    std::ostringstream s;
    s << "\"" << name << "\": {\"seconds\": " << bench::json_number(r.seconds)
      << ", \"events_per_s\": " << bench::json_number(r.rate()) << "}";
    return s.str();
  }

  void print_json(double relay_ratio, double ingest_ratio, double ceiling_s, bool pass) const {
    std::cout << "{\"events\": " << c_.events << ", \"payload\": " << c_.payload
              << ", \"partitions\": " << c_.partitions << ", " << side("relay", relay_) << ", "
              << side("relay_publish_once", relay_once_) << ", "
              << side("raw_produce", raw_produce_) << ", "
              << side("raw_produce_waiting_per_batch", raw_batched_)
              << ", \"relay_ratio\": " << bench::json_number(relay_ratio) << ", "
              << side("ingest", ingest_) << ", " << side("raw_consume", raw_consume_) << ", "
              << side("append_loop", append_)
              << ", \"ingest_ceiling_seconds\": " << bench::json_number(ceiling_s)
              << ", \"ingest_ratio\": " << bench::json_number(ingest_ratio)
              << ", \"pass\": " << (pass ? "true" : "false") << "}\n";
  }

  void print_text(double relay_ratio, double ingest_ratio, double ceiling_s, bool pass) const {
    auto line = [](const char* name, const Run& r) {
      std::printf("  %-44s %10.0f events/s  (%.3f s)\n", name, r.rate(), r.seconds);
    };
    std::printf(
        "kafka_bench: %llu events of %zu bytes, %d partitions, mock cluster, %s, best of %d\n",
        static_cast<unsigned long long>(c_.events), c_.payload, c_.partitions,
        c_.durability == factum::Durability::full ? "Durability::full" : "Durability::normal",
        c_.reps);
    line("relay: Relay::publish_available (run)", relay_);
    line("raw: idempotent producer, same records", raw_produce_);
    std::printf("  relay/raw %.2f; target >= %.2f: %s\n", relay_ratio, kRelayTarget,
                relay_ratio >= kRelayTarget ? "PASS" : "MISS");
    line("relay: Relay::publish_once in a loop", relay_once_);
    std::printf("  %-44s %10.0f events/s  (%.3f s; publish_once/this %.2f)\n",
                "raw, waiting for delivery every batch", raw_batched_.rate(), raw_batched_.seconds,
                relay_once_.rate() / raw_batched_.rate());
    line("ingest: factum::kafka::Ingest", ingest_);
    line("raw consumer, same records", raw_consume_);
    line("factum append loop, 100 events per append", append_);
    std::printf("  %-44s %10.0f events/s  (%.3f s)\n", "ceiling: raw consume + append loop",
                static_cast<double>(c_.events) / ceiling_s, ceiling_s);
    std::printf("  ingest/ceiling %.2f; target >= %.2f: %s\n", ingest_ratio, kIngestTarget,
                ingest_ratio >= kIngestTarget ? "PASS" : "MISS");
    std::printf("  overall: %s\n", pass ? "PASS" : "MISS");
  }

  const Config& c_;
  bench::TempDir dir_;
  MockCluster cluster_;
  int topics_ = 0;
  int names_ = 0;
  std::uint64_t bytes_read_ = 0;
  Run relay_, relay_once_, raw_produce_, raw_batched_, ingest_, raw_consume_, append_;
};

}  // namespace

int main(int argc, char** argv) {
  const Config config = parse(argc, argv);
  bench::catch_interrupts();
  return bench::run_reporting("kafka_bench", [&] {
    Bench b(config);
    b.run();
    return b.report();
  });
}
