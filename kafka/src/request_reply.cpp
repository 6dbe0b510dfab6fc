#include "factum/kafka/request_reply.hpp"

#include "factum/kafka/librdkafka.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "client.hpp"
#include "factum/eventstore/text.hpp"
#include "factum/kafka/headers.hpp"

namespace factum::kafka {
namespace {

using detail::Message;
using detail::Partitions;
using Clock = std::chrono::steady_clock;

constexpr int kMetadataTimeoutMs = 10000;
constexpr int kPollMs = 50;

// The command's fate, written by its delivery report.
struct Sent {
  bool done = false;
  rd_kafka_resp_err_t error = RD_KAFKA_RESP_ERR_NO_ERROR;
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* message, void*) {
  auto* sent = static_cast<Sent*>(message->_private);
  if (sent == nullptr) return;
  sent->done = true;
  sent->error = message->err;
}

std::map<std::string, std::string> headers_of(const rd_kafka_message_t& message) {
  std::map<std::string, std::string> out;
  rd_kafka_headers_t* headers = nullptr;
  if (librdkafka().rd_kafka_message_headers(&message, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR)
    return out;
  const char* name = nullptr;
  const void* value = nullptr;
  std::size_t size = 0;
  for (std::size_t i = 0; librdkafka().rd_kafka_header_get_all(headers, i, &name, &value, &size) ==
                          RD_KAFKA_RESP_ERR_NO_ERROR;
       ++i) {
    out[name] =
        value == nullptr ? std::string() : std::string(static_cast<const char*>(value), size);
  }
  return out;
}

}  // namespace

class Requester::Impl {
 public:
  explicit Impl(RequesterOptions options) : options_(std::move(options)) {
    if (options_.reply_topic.empty()) {
      throw InvalidArgument("factum: kafka: a requester needs a reply_topic");
    }
    detail::Conf producer_conf = detail::make_conf(options_.kafka);
    detail::set_property(*producer_conf, "enable.idempotence", "true");
    librdkafka().rd_kafka_conf_set_dr_msg_cb(producer_conf.get(), &on_delivery);
    producer_ = detail::make_client(RD_KAFKA_PRODUCER, std::move(producer_conf), "requester");
    std::map<std::string, std::string> consumer_properties = options_.kafka;
    consumer_properties.try_emplace("group.id", "factum-requester");
    consumer_properties["enable.auto.commit"] = "false";
    consumer_properties["enable.auto.offset.store"] = "false";
    consumer_ =
        detail::make_client(RD_KAFKA_CONSUMER, detail::make_conf(consumer_properties),
                            "consumer of reply topic '" + printable(options_.reply_topic) + "'");
    librdkafka().rd_kafka_poll_set_consumer(consumer_.get());
    partition_count_ = read_partition_count();
  }

  ~Impl() {
    if (consumer_) static_cast<void>(librdkafka().rd_kafka_consumer_close(consumer_.get()));
  }

  std::optional<Reply> request(const Request& request, std::chrono::milliseconds timeout) {
    if (request.topic.empty()) throw InvalidArgument("factum: kafka: a request needs a topic");
    const auto deadline = Clock::now() + timeout;
    assign_reply_ends(deadline);  // before the command goes: its reply cannot come earlier
    const EventId correlation = EventId::generate();
    if (!send(request, correlation, deadline)) return std::nullopt;
    while (Clock::now() < deadline) {
      const Message record(librdkafka().rd_kafka_consumer_poll(consumer_.get(), kPollMs));
      if (!record || record->err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
      std::map<std::string, std::string> headers = headers_of(*record);
      const auto it = headers.find(kCorrelationIdHeader);
      if (it == headers.end() || it->second != correlation.to_string()) continue;
      Reply reply;
      reply.correlation_id = correlation;
      reply.key.assign(static_cast<const char*>(record->key), record->key_len);
      reply.value.assign(static_cast<const char*>(record->payload), record->len);
      reply.headers = std::move(headers);
      return reply;
    }
    return std::nullopt;
  }

 private:
  int read_partition_count() {
    int count = 0;
    const rd_kafka_resp_err_t error =
        detail::partition_count(*consumer_, options_.reply_topic, kMetadataTimeoutMs, count);
    if (error != RD_KAFKA_RESP_ERR_NO_ERROR) throw reply_error(error, "cannot read the partitions");
    return count;
  }

  // Every partition of the reply topic, at its end as the broker reports it now (asked until
  // `deadline` at most).
  void assign_reply_ends(Clock::time_point deadline) {
    std::map<std::int32_t, std::int64_t> ends;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    const rd_kafka_resp_err_t asked =
        detail::end_offsets(*consumer_, options_.reply_topic, partition_count_,
                            std::max(left, std::chrono::milliseconds(1)), {}, ends);
    if (asked != RD_KAFKA_RESP_ERR_NO_ERROR) throw reply_error(asked, "cannot read the end");
    Partitions partitions(librdkafka().rd_kafka_topic_partition_list_new(partition_count_));
    for (const auto& [partition, end] : ends) {
      librdkafka()
          .rd_kafka_topic_partition_list_add(partitions.get(), options_.reply_topic.c_str(),
                                             partition)
          ->offset = end;
    }
    const rd_kafka_resp_err_t error =
        librdkafka().rd_kafka_assign(consumer_.get(), partitions.get());
    if (error != RD_KAFKA_RESP_ERR_NO_ERROR) throw reply_error(error, "cannot assign");
  }

  // Produces the command and waits for its delivery report until `deadline`. Returns whether
  // it was confirmed in time; when it was not, it is withdrawn (rd_kafka_purge, whose report
  // comes at once; a request already sent may still reach the broker). Throws DeliveryError when
  // the report says it failed.
  bool send(const Request& request, const EventId& correlation, Clock::time_point deadline) {
    const std::string id = correlation.to_string();
    detail::Headers headers(librdkafka().rd_kafka_headers_new(3));
    librdkafka().rd_kafka_header_add(headers.get(), kCorrelationIdHeader, -1, id.data(),
                                     static_cast<ssize_t>(id.size()));
    librdkafka().rd_kafka_header_add(headers.get(), kReplyToHeader, -1, options_.reply_topic.data(),
                                     static_cast<ssize_t>(options_.reply_topic.size()));
    if (!request.type.empty()) {
      librdkafka().rd_kafka_header_add(headers.get(), kTypeHeader, -1, request.type.data(),
                                       static_cast<ssize_t>(request.type.size()));
    }
    know_partitions(request.topic, deadline);
    Sent sent;
    const rd_kafka_resp_err_t refused =
        detail::produce(*producer_, request.topic, request.key, request.payload, headers, &sent);
    if (refused != RD_KAFKA_RESP_ERR_NO_ERROR) throw not_sent(request, refused);
    while (!sent.done && Clock::now() < deadline) {
      librdkafka().rd_kafka_poll(producer_.get(), kPollMs);
    }
    const bool in_time = sent.done;
    if (!in_time) {
      static_cast<void>(librdkafka().rd_kafka_purge(
          producer_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT));
      while (!sent.done) librdkafka().rd_kafka_poll(producer_.get(), kPollMs);  // `sent` lives on
    }
    const bool withdrawn = sent.error == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
                           sent.error == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
    if (sent.error != RD_KAFKA_RESP_ERR_NO_ERROR && !withdrawn) throw not_sent(request, sent.error);
    return in_time;
  }

  // Asks for the partitions of `topic` the first time a command goes there (until `deadline` at
  // most): librdkafka 2.0.2 keeps a record for a topic it has no metadata for until its topic
  // scan, once a second, which made the first command of an idle requester wait up to a second.
  void know_partitions(const std::string& topic, Clock::time_point deadline) {
    if (known_topics_.contains(topic)) return;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    int count = 0;
    if (detail::partition_count(*producer_, topic,
                                static_cast<int>(std::max<long>(1, left.count())),
                                count) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      known_topics_.insert(topic);
    }
  }

  DeliveryError not_sent(const Request& request, rd_kafka_resp_err_t code) const {
    return DeliveryError(request.topic, 0, static_cast<int>(code),
                         "factum: kafka: the request to topic '" + printable(request.topic) +
                             "' was not delivered: " + librdkafka().rd_kafka_err2str(code));
  }

  KafkaError reply_error(rd_kafka_resp_err_t code, const std::string& what) const {
    return KafkaError(options_.reply_topic, static_cast<int>(code),
                      "factum: kafka: requester " + what + " of reply topic '" +
                          printable(options_.reply_topic) +
                          "': " + librdkafka().rd_kafka_err2str(code));
  }

  const RequesterOptions options_;
  detail::Client producer_;
  detail::Client consumer_;
  std::int32_t partition_count_ = 0;
  std::set<std::string> known_topics_;  // command topics whose partitions the producer knows
};

Requester::Requester(RequesterOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

Requester::~Requester() = default;

std::optional<Reply> Requester::request(const Request& request, std::chrono::milliseconds timeout) {
  return impl_->request(request, timeout);
}

}  // namespace factum::kafka
