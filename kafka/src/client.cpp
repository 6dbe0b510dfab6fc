#include "client.hpp"

#include <array>

#include "factum/eventstore/errors.hpp"
#include "factum/kafka/errors.hpp"

namespace factum::kafka::detail {

void set_property(rd_kafka_conf_t& conf, const std::string& name, const std::string& value) {
  std::array<char, 512> error{};
  if (rd_kafka_conf_set(&conf, name.c_str(), value.c_str(), error.data(), error.size()) !=
      RD_KAFKA_CONF_OK) {
    throw InvalidArgument("factum kafka: property '" + name + "': " + error.data());
  }
}

Conf make_conf(const std::map<std::string, std::string>& properties) {
  Conf conf(rd_kafka_conf_new());
  for (const auto& [name, value] : properties) set_property(*conf, name, value);
  return conf;
}

Client make_client(rd_kafka_type_t type, Conf conf, const std::string& what) {
  std::array<char, 512> error{};
  // On success rd_kafka_new takes the configuration; on failure it stays ours.
  Client client(rd_kafka_new(type, conf.get(), error.data(), error.size()));
  if (!client)
    throw KafkaError(what, 0, "factum kafka: cannot create " + what + ": " + error.data());
  static_cast<void>(conf.release());
  return client;
}

}  // namespace factum::kafka::detail
