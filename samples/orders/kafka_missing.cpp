// samples/orders/kafka_missing.cpp — kafka_outbox.hpp in a build without the Kafka bridge
// (pkg-config found no librdkafka): --kafka and --kafka-mock are refused with one line, before
// the store is opened.
#include <string>

#include "orders/errors.hpp"
#include "orders/kafka_outbox.hpp"

namespace orders {

namespace {

[[noreturn]] void missing(std::string_view option) {
  throw Error(std::string(option) +
              ": this factum-orders was built without the Kafka bridge (librdkafka was not found "
              "by pkg-config when it was configured; see docs/kafka.md)");
}

}  // namespace

bool kafka_available() noexcept { return false; }

void require_kafka(std::string_view option) { missing(option); }

KafkaPublication publish_to_kafka(factum::EventStore&, const KafkaTarget&) { missing("--kafka"); }

void run_kafka_mock_demo(factum::EventStore&, std::ostream&) { missing("--kafka-mock"); }

}  // namespace orders
