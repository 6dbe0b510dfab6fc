// RAII over librdkafka handles, and configuration from a property map.
#pragma once

#include "factum/kafka/librdkafka.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stop_token>
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

// Calls `attempt(ms)`, a librdkafka call that waits up to ms milliseconds for the cluster, again
// and again until it succeeds or fails for good, `timeout` has passed in all, or `stop` is
// requested. Each call waits a quarter of a second at first, then twice as long as the one
// before, up to one second, so that a stop request ends the wait within about a second however
// long `timeout` is, and a slow cluster still gets calls long enough to answer. Returns the last
// call's error, RD_KAFKA_RESP_ERR__INTR when `stop` ended the wait. librdkafka 2.0.2 has calls
// that never return once the broker is gone (rd_kafka_query_watermark_offsets): the bridge makes
// no call to the cluster without a deadline, and retries the others this way.
rd_kafka_resp_err_t retry_until(std::chrono::milliseconds timeout, const std::stop_token& stop,
                                const std::function<rd_kafka_resp_err_t(int ms)>& attempt);

// Whether `code` is worth another try: the cluster, or a broker of it, was out of reach or did
// not answer in time.
bool transient(rd_kafka_resp_err_t code);

// Asks the cluster how many partitions `topic` has (waiting up to timeout_ms) and sets `count`.
// Returns the error (RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC when the answer does not name the topic);
// the caller names it in its own exception.
rd_kafka_resp_err_t partition_count(rd_kafka_t& client, const std::string& topic, int timeout_ms,
                                    int& count);

// The same, retried (retry_until) while the cluster is out of reach, for `timeout` at most.
rd_kafka_resp_err_t partition_count(rd_kafka_t& client, const std::string& topic,
                                    std::chrono::milliseconds timeout, const std::stop_token& stop,
                                    int& count);

// Asks the leaders of partitions 0..partitions-1 of `topic` for their ends (high watermarks: the
// offset the next record will get) and sets `ends` (partition -> end). Retried (retry_until)
// for `timeout` at most. Returns the error (a partition's own when one failed). Uses
// rd_kafka_offsets_for_times, which keeps to its timeout, with the time "latest".
rd_kafka_resp_err_t end_offsets(rd_kafka_t& client, const std::string& topic, int partitions,
                                std::chrono::milliseconds timeout, const std::stop_token& stop,
                                std::map<std::int32_t, std::int64_t>& ends);

}  // namespace factum::kafka::detail
