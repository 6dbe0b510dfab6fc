// The program both consumer projects build: it uses factum the way a service would.
//
// Opens a store in a fresh temporary file, appends one event, reads it back field by field,
// verifies the hash chain, reopens the file and checks again. Exits 0 when everything matches
// and 1 (with a message on stderr naming what differs) otherwise.
#include <chrono>
#include <cstdlib>
#include <factum/factum.hpp>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>
#ifdef FACTUM_CONSUMER_KAFKA
#include <factum/kafka/relay.hpp>
#endif

namespace {

namespace fs = std::filesystem;

int failures = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  std::cerr << "factum consumer: mismatch: " << what << '\n';
  ++failures;
}

fs::path make_temp_dir() {
  std::random_device random;
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  fs::path dir = fs::temp_directory_path() /
                 ("factum-consumer-" + std::to_string(now) + "-" + std::to_string(random()));
  fs::create_directories(dir);
  return dir;
}

factum::EventData make_event() {
  factum::EventData event;
  event.type = "consumer.Deposited";
  event.schema_version = 2;
  event.payload = factum::to_bytes("{\"amount\":42}");
  event.metadata.actor = "consumer-test";
  event.metadata.values["source"] = "tests/consumers";
  return event;
}

void check_event(const factum::RecordedEvent& got, const factum::EventData& sent) {
  check(got.position == 1, "position is 1");
  check(got.stream_id == "account-1", "stream id is account-1");
  check(got.category() == "account", "category is account");
  check(got.stream_version == 1, "stream version is 1");
  check(got.id == sent.id, "event id round-trips");
  check(got.type == sent.type, "type round-trips");
  check(got.schema_version == sent.schema_version, "schema version round-trips");
  check(got.payload == sent.payload, "payload round-trips");
  check(got.metadata == sent.metadata, "metadata round-trips");
}

void check_store(const factum::EventStore& store, const factum::EventData& sent) {
  const std::vector<factum::RecordedEvent> events = store.read_stream("account-1").to_vector();
  check(events.size() == 1, "one event read back, got " + std::to_string(events.size()));
  if (events.size() == 1) check_event(events.front(), sent);
  const factum::Head head = store.head();
  check(head.position == 1, "head position is 1");
  check(events.size() == 1 && head.hash == events.front().hash, "head hash is the event's hash");
  const factum::VerifyResult verified = store.verify(head.hash);
  check(verified.ok(), "hash chain verifies: " + verified.message);
  check(verified.events_checked == 1, "verify walked one event");
}

void run(const fs::path& file) {
  const factum::EventData sent = make_event();
  {
    factum::EventStore store = factum::EventStore::open(file);
    const factum::AppendResult result =
        store.append("account-1", factum::ExpectedVersion::no_stream(), sent);
    check(result.stream_version == 1 && result.first_position == 1 && result.last_position == 1,
          "append result is version 1 at position 1");
    check_store(store, sent);
  }
  factum::StoreOptions read_only;
  read_only.read_only = true;
  check_store(factum::EventStore::open(file, read_only), sent);
}

#ifdef FACTUM_CONSUMER_KAFKA
// factum::kafka from the package: a relay keeps its checkpoint in the store and makes a
// librdkafka producer (no broker is needed until it publishes).
void run_kafka(const fs::path& file) {
  factum::EventStore store = factum::EventStore::open(file);
  factum::kafka::RelayOptions options;
  options.name = "consumer";
  options.topic = "consumer-events";
  options.kafka = {{"bootstrap.servers", "127.0.0.1:9"}, {"log_level", "0"}};
  const factum::kafka::Relay relay(store, options);
  const factum::kafka::RelayStatus status = relay.status();
  check(status.checkpoint == 0 && status.head == 1 && status.lag == 1,
        "a new relay starts before the stored event");
  options.kafka["acks"] = "1";
  try {
    const factum::kafka::Relay weakened(store, options);
    check(false, "a relay with acks=1 is refused");
  } catch (const factum::InvalidArgument&) {
  }
}
#endif

}  // namespace

int main() {
  const fs::path dir = make_temp_dir();
  try {
    run(dir / "consumer.db");
#ifdef FACTUM_CONSUMER_KAFKA
    run_kafka(dir / "consumer.db");
#endif
  } catch (const factum::Error& e) {
    std::cerr << "factum consumer: factum::Error: " << e.what() << '\n';
    ++failures;
  } catch (const std::exception& e) {
    std::cerr << "factum consumer: exception: " << e.what() << '\n';
    ++failures;
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  if (failures != 0) return EXIT_FAILURE;
  std::cout << "factum consumer: ok (factum " << FACTUM_CONSUMER_HOW << ")\n";
  return EXIT_SUCCESS;
}
