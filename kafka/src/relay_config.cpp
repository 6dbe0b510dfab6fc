#include "relay_config.hpp"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <optional>

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/text.hpp"

namespace factum::kafka::detail {
namespace {

// librdkafka's default topic.metadata.propagation.max.ms: how long a topic the cluster says it
// does not have is waited for before its records fail with "Unknown topic or partition".
constexpr long kPropagationMs = 30000;

// Room for a record's headers: eight names (141 bytes), three ids, three numbers and the type
// (at most 256 bytes), with librdkafka's framing of each, rounded up generously.
constexpr std::size_t kHeaderRoom = 4096;
// librdkafka's largest message.max.bytes.
constexpr std::size_t kMaxMessageMaxBytes = 1000000000;

// The property `name` as a number; nullopt when it is not given. A value that is not a decimal
// number is left to librdkafka, which refuses it.
std::optional<std::size_t> number_property(const RelayOptions& options, const std::string& name) {
  const auto it = options.kafka.find(name);
  if (it == options.kafka.end()) return std::nullopt;
  std::size_t value = 0;
  const char* end = it->second.data() + it->second.size();
  const auto [ptr, error] = std::from_chars(it->second.data(), end, value);
  if (error != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// Refuses a message.max.bytes the store's largest record would not fit in.
void check_record_size(const RelayOptions& options, const StoreOptions& store) {
  const std::string prefix = relay_prefix(options);
  const std::size_t max_record = max_record_bytes(store);
  if (max_record > kMaxMessageMaxBytes) {
    throw InvalidArgument(prefix + ": the store takes events of up to " +
                          std::to_string(max_record) + " bytes (max_payload_size), more than a " +
                          "Kafka record can carry (" + std::to_string(kMaxMessageMaxBytes) +
                          "): open the store with a smaller max_payload_size");
  }
  const auto given = number_property(options, "message.max.bytes");
  if (!given || *given >= max_record) return;
  throw InvalidArgument(prefix + ": the property message.max.bytes is " + std::to_string(*given) +
                        ", but an event of this store may make a record of up to " +
                        std::to_string(max_record) + " bytes (payloads up to " +
                        std::to_string(store.max_payload_size) + ", stream ids up to " +
                        std::to_string(store.max_stream_id_length) +
                        ", and the headers): give at least that, or leave it out (the relay sets "
                        "it)");
}

// Refuses a property the caller set to something else than the relay's guarantee needs.
void require_property(const RelayOptions& options, const std::string& name,
                      std::initializer_list<const char*> allowed) {
  const auto it = options.kafka.find(name);
  if (it == options.kafka.end()) return;
  for (const char* value : allowed) {
    if (it->second == value) return;
  }
  throw InvalidArgument(relay_prefix(options) + ": property '" + name + "' must be '" +
                        *allowed.begin() + "', not '" + printable(it->second) + "'");
}

// Refuses `name` among the properties: the relay sets it (`instead` says what to give).
void refuse_property(const RelayOptions& options, const std::string& name,
                     const std::string& instead) {
  if (options.kafka.count(name) == 0) return;
  throw InvalidArgument(relay_prefix(options) + ": the property '" + name +
                        "' is the relay's to set; " + instead);
}

}  // namespace

std::string relay_prefix(const RelayOptions& options) {
  return "factum: kafka: relay '" + printable(options.name) + "'";
}

std::size_t max_record_bytes(const StoreOptions& store) {
  return store.max_payload_size + store.max_stream_id_length + kHeaderRoom;
}

void check_relay_options(const RelayOptions& options, const StoreOptions& store) {
  if (options.name.empty()) throw InvalidArgument("factum: kafka: a relay needs a name");
  const std::string prefix = relay_prefix(options);
  if (options.topic.empty()) throw InvalidArgument(prefix + " needs a topic");
  if (options.batch_size == 0) throw InvalidArgument(prefix + ": batch_size must be > 0");
  if (options.max_in_flight == 0) throw InvalidArgument(prefix + ": max_in_flight must be > 0");
  if (options.delivery_timeout.count() <= 0) {
    throw InvalidArgument(prefix + ": delivery_timeout must be > 0");
  }
  if (!options.transactional_id.empty() && options.transaction_timeout.count() <= 0) {
    throw InvalidArgument(prefix + ": transaction_timeout must be > 0");
  }
  require_property(options, "enable.idempotence", {"true"});
  require_property(options, "acks", {"all", "-1"});
  require_property(options, "enable.gapless.guarantee", {"true"});
  const std::string timeout =
      "records must not expire one by one (those queued behind an expired one would reach the "
      "topic first): give RelayOptions::delivery_timeout (factum relay: --timeout) instead";
  refuse_property(options, "message.timeout.ms", timeout);
  refuse_property(options, "delivery.timeout.ms", timeout);
  refuse_property(options, "transactional.id",
                  "give the transactional id as RelayOptions::transactional_id (factum relay: "
                  "--transactional-id)");
  check_record_size(options, store);
}

Conf relay_producer_conf(const RelayOptions& options, std::size_t max_record) {
  Conf conf = make_conf(options.kafka);
  if (options.kafka.count("message.max.bytes") == 0) {
    set_property(*conf, "message.max.bytes", std::to_string(max_record));
  }
  set_property(*conf, "enable.idempotence", "true");
  set_property(*conf, "acks", "all");
  set_property(*conf, "enable.gapless.guarantee", "true");
  set_property(*conf, "message.timeout.ms", "0");
  if (options.kafka.count("topic.metadata.propagation.max.ms") == 0) {
    const long half = static_cast<long>(options.delivery_timeout.count() / 2);
    set_property(*conf, "topic.metadata.propagation.max.ms",
                 std::to_string(std::clamp(half, 1L, kPropagationMs)));
  }
  if (!options.transactional_id.empty()) {
    set_property(*conf, "transactional.id", options.transactional_id);
  }
  return conf;
}

}  // namespace factum::kafka::detail
