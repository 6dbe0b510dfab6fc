#include "client.hpp"

#include <algorithm>
#include <array>
#include <thread>

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

bool transient(rd_kafka_resp_err_t code) {
  switch (code) {
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__WAIT_COORD:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE:
      return true;
    default:
      return false;
  }
}

rd_kafka_resp_err_t retry_until(std::chrono::milliseconds timeout, const std::stop_token& stop,
                                const std::function<rd_kafka_resp_err_t(int ms)>& attempt) {
  using Clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  const auto deadline = Clock::now() + timeout;
  milliseconds slice(250);
  rd_kafka_resp_err_t error = RD_KAFKA_RESP_ERR__TIMED_OUT;
  for (;;) {
    if (stop.stop_requested()) return RD_KAFKA_RESP_ERR__INTR;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return error;
    const auto called = Clock::now();
    error = attempt(static_cast<int>(std::min(slice, left).count()));
    if (!transient(error)) return error;
    // A failure that came at once (no broker to ask yet) is not retried in a busy loop.
    if (Clock::now() - called < milliseconds(50)) std::this_thread::sleep_for(milliseconds(50));
    slice = std::min(slice * 2, milliseconds(1000));
  }
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

rd_kafka_resp_err_t partition_count(rd_kafka_t& client, const std::string& topic,
                                    std::chrono::milliseconds timeout, const std::stop_token& stop,
                                    int& count) {
  return retry_until(timeout, stop,
                     [&](int ms) { return partition_count(client, topic, ms, count); });
}

namespace {

// One ask of the partitions' ends (rd_kafka_offsets_for_times, the time "latest").
rd_kafka_resp_err_t ask_ends(rd_kafka_t& client, const std::string& topic, int partitions, int ms,
                             std::map<std::int32_t, std::int64_t>& ends) {
  const Partitions asked(librdkafka().rd_kafka_topic_partition_list_new(partitions));
  for (std::int32_t p = 0; p < partitions; ++p) {
    librdkafka().rd_kafka_topic_partition_list_add(asked.get(), topic.c_str(), p)->offset =
        RD_KAFKA_OFFSET_END;
  }
  const rd_kafka_resp_err_t error =
      librdkafka().rd_kafka_offsets_for_times(&client, asked.get(), ms);
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) return error;
  for (int i = 0; i < asked->cnt; ++i) {
    if (asked->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR) return asked->elems[i].err;
  }
  ends.clear();
  for (int i = 0; i < asked->cnt; ++i) ends[asked->elems[i].partition] = asked->elems[i].offset;
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

}  // namespace

rd_kafka_resp_err_t end_offsets(rd_kafka_t& client, const std::string& topic, int partitions,
                                std::chrono::milliseconds timeout, const std::stop_token& stop,
                                std::map<std::int32_t, std::int64_t>& ends) {
  return retry_until(timeout, stop,
                     [&](int ms) { return ask_ends(client, topic, partitions, ms, ends); });
}

}  // namespace factum::kafka::detail
