// RAII over librdkafka handles, and configuration from a property map.
#pragma once

#include "factum/kafka/librdkafka.hpp"

#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace factum::kafka::detail {

struct ConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const noexcept {
    librdkafka().rd_kafka_conf_destroy(conf);
  }
};
using Conf = std::unique_ptr<rd_kafka_conf_t, ConfDeleter>;

struct ClientDeleter {
  void operator()(rd_kafka_t* rk) const noexcept { librdkafka().rd_kafka_destroy(rk); }
};
using Client = std::unique_ptr<rd_kafka_t, ClientDeleter>;

struct HeadersDeleter {
  void operator()(rd_kafka_headers_t* headers) const noexcept {
    librdkafka().rd_kafka_headers_destroy(headers);
  }
};
using Headers = std::unique_ptr<rd_kafka_headers_t, HeadersDeleter>;

struct MessageDeleter {
  void operator()(rd_kafka_message_t* message) const noexcept {
    librdkafka().rd_kafka_message_destroy(message);
  }
};
using Message = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;

struct PartitionsDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const noexcept {
    librdkafka().rd_kafka_topic_partition_list_destroy(list);
  }
};
using Partitions = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionsDeleter>;

// A configuration holding `properties`. Throws InvalidArgument naming the property librdkafka
// refuses (unknown, or a bad value).
Conf make_conf(const std::map<std::string, std::string>& properties);
// Sets one property. Throws InvalidArgument naming it.
void set_property(rd_kafka_conf_t& conf, const std::string& name, const std::string& value);
// A client of `type` owning `conf`. Throws KafkaError (subject `what`, which names the client
// with its user-given parts escaped by factum::printable).
Client make_client(rd_kafka_type_t type, Conf conf, const std::string& what);

// Hands one record to `producer` (key and value copied, RD_KAFKA_MSG_F_COPY), with `opaque`
// for its delivery report. On success the record owns the headers (`headers` is released);
// otherwise they stay the caller's. Returns the producer's refusal (RD_KAFKA_RESP_ERR__QUEUE_FULL,
// a record too large, ...) or RD_KAFKA_RESP_ERR_NO_ERROR.
rd_kafka_resp_err_t produce(rd_kafka_t& producer, const std::string& topic, std::string_view key,
                            std::string_view value, Headers& headers, void* opaque);

// Asks the cluster how many partitions `topic` has (waiting up to timeout_ms) and sets `count`.
// Returns the error (RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC when the answer does not name the topic);
// the caller names it in its own exception.
rd_kafka_resp_err_t partition_count(rd_kafka_t& client, const std::string& topic, int timeout_ms,
                                    int& count);

}  // namespace factum::kafka::detail
