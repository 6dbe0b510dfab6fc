#include "client.hpp"

#include <array>

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/text.hpp"
#include "factum/kafka/errors.hpp"

namespace factum::kafka::detail {

void set_property(rd_kafka_conf_t& conf, const std::string& name, const std::string& value) {
  std::array<char, 512> error{};
  if (librdkafka().rd_kafka_conf_set(&conf, name.c_str(), value.c_str(), error.data(),
                                     error.size()) != RD_KAFKA_CONF_OK) {
    throw InvalidArgument("factum: kafka: property '" + printable(name) +
                          "': " + printable(error.data()));
  }
}

Conf make_conf(const std::map<std::string, std::string>& properties) {
  Conf conf(librdkafka().rd_kafka_conf_new());
  for (const auto& [name, value] : properties) set_property(*conf, name, value);
  return conf;
}

Client make_client(rd_kafka_type_t type, Conf conf, const std::string& what) {
  std::array<char, 512> error{};
  // On success rd_kafka_new takes the configuration; on failure it stays ours.
  Client client(librdkafka().rd_kafka_new(type, conf.get(), error.data(), error.size()));
  if (!client) {
    throw KafkaError(what, 0,
                     "factum: kafka: cannot create " + what + ": " + printable(error.data()));
  }
  static_cast<void>(conf.release());
  return client;
}

namespace {

struct TopicDeleter {
  void operator()(rd_kafka_topic_t* topic) const noexcept {
    librdkafka().rd_kafka_topic_destroy(topic);
  }
};

struct MetadataDeleter {
  void operator()(const rd_kafka_metadata_t* metadata) const noexcept {
    librdkafka().rd_kafka_metadata_destroy(metadata);
  }
};

}  // namespace

rd_kafka_resp_err_t produce(rd_kafka_t& producer, const std::string& topic, std::string_view key,
                            std::string_view value, Headers& headers, void* opaque) {
  const auto memory = [](rd_kafka_vtype_t type, std::string_view bytes) {
    rd_kafka_vu_t vu{};
    vu.vtype = type;
    // RD_KAFKA_MSG_F_COPY: librdkafka copies the bytes and never writes through the pointer.
    vu.u.mem.ptr = const_cast<char*>(bytes.data());
    vu.u.mem.size = bytes.size();
    return vu;
  };
  std::array<rd_kafka_vu_t, 6> vus{};
  vus[0].vtype = RD_KAFKA_VTYPE_TOPIC;
  vus[0].u.cstr = topic.c_str();
  vus[1] = memory(RD_KAFKA_VTYPE_KEY, key);
  vus[2] = memory(RD_KAFKA_VTYPE_VALUE, value);
  vus[3].vtype = RD_KAFKA_VTYPE_HEADERS;
  vus[3].u.headers = headers.get();
  vus[4].vtype = RD_KAFKA_VTYPE_OPAQUE;
  vus[4].u.ptr = opaque;
  vus[5].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  vus[5].u.i = RD_KAFKA_MSG_F_COPY;
  rd_kafka_error_t* error = librdkafka().rd_kafka_produceva(&producer, vus.data(), vus.size());
  if (error == nullptr) {
    static_cast<void>(headers.release());  // the record owns them now
    return RD_KAFKA_RESP_ERR_NO_ERROR;
  }
  const rd_kafka_resp_err_t code = librdkafka().rd_kafka_error_code(error);
  librdkafka().rd_kafka_error_destroy(error);
  return code;
}

rd_kafka_resp_err_t partition_count(rd_kafka_t& client, const std::string& topic, int timeout_ms,
                                    int& count) {
  const std::unique_ptr<rd_kafka_topic_t, TopicDeleter> handle(
      librdkafka().rd_kafka_topic_new(&client, topic.c_str(), nullptr));
  const rd_kafka_metadata_t* raw = nullptr;
  rd_kafka_resp_err_t error =
      librdkafka().rd_kafka_metadata(&client, 0, handle.get(), &raw, timeout_ms);
  const std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter> metadata(raw);
  if (error == RD_KAFKA_RESP_ERR_NO_ERROR && metadata->topic_cnt != 1) {
    error = RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
  }
  if (error == RD_KAFKA_RESP_ERR_NO_ERROR) error = metadata->topics[0].err;
  if (error == RD_KAFKA_RESP_ERR_NO_ERROR) count = metadata->topics[0].partition_cnt;
  return error;
}

}  // namespace factum::kafka::detail
