// KafkaAnchorSink (factum/kafka/anchor_sink.hpp): anchors as records of a one-partition topic,
// each appended in a transaction whose start fences every other appender.
#include "factum/kafka/anchor_sink.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <stop_token>
#include <utility>
#include <vector>

#include "client.hpp"
#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/text.hpp"
#include "factum/kafka/errors.hpp"
#include "transaction.hpp"

namespace factum::kafka {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kKey = "factum-anchor";

// One record of the partition: its offset and value.
struct Stored {
  std::int64_t offset = 0;
  std::string value;
};

std::string topic_of(const AnchorTopicOptions& o) { return "topic '" + printable(o.topic) + "'"; }

KafkaError cluster_error(const AnchorTopicOptions& o, const std::string& what, int code,
                         const std::string& why) {
  return KafkaError(o.topic, code,
                    "factum: anchors on " + topic_of(o) + ": " + what + ": " + printable(why));
}

int ms_left(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<long long>(left, 1));
}

detail::Client make_reader(const AnchorTopicOptions& o) {
  std::map<std::string, std::string> properties = o.kafka;
  properties.try_emplace("group.id", "factum-anchors-reader");
  // A read ends at the partition's end: no fetch should wait there for records to come.
  properties.try_emplace("fetch.wait.max.ms", "10");
  properties["enable.auto.commit"] = "false";
  properties["isolation.level"] = "read_committed";
  properties["enable.partition.eof"] = "true";
  detail::Client client = detail::make_client(RD_KAFKA_CONSUMER, detail::make_conf(properties),
                                              "anchor reader of " + topic_of(o));
  librdkafka().rd_kafka_poll_set_consumer(client.get());
  return client;
}

// Checks that the topic has one partition (a metadata request, which also tells a producer
// where the partition's leader is before its first record).
void check_one_partition(rd_kafka_t& client, const AnchorTopicOptions& o) {
  int partitions = 0;
  const rd_kafka_resp_err_t error =
      detail::partition_count(client, o.topic, o.timeout, std::stop_token(), partitions);
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw cluster_error(o, "cannot read its partitions", error,
                        librdkafka().rd_kafka_err2str(error));
  }
  if (partitions != 1) {
    throw InvalidArgument("factum: anchors on " + topic_of(o) + ": it has " +
                          std::to_string(partitions) +
                          " partitions; an anchor topic has exactly one (a chain has one order)");
  }
}

// The partition's end (the offset its next record gets), after checking that the topic has one
// partition.
std::int64_t partition_end(rd_kafka_t& client, const AnchorTopicOptions& o) {
  check_one_partition(client, o);
  std::map<std::int32_t, std::int64_t> ends;
  const rd_kafka_resp_err_t error =
      detail::end_offsets(client, o.topic, 1, o.timeout, std::stop_token(), ends);
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw cluster_error(o, "cannot read its end", error, librdkafka().rd_kafka_err2str(error));
  }
  return ends[0];
}

// The committed records of partition 0 from offset `from` to its end, in order (a
// read_committed consumer: no record of an aborted or open transaction).
std::vector<Stored> read_from(rd_kafka_t& reader, const AnchorTopicOptions& o, std::int64_t from) {
  const detail::Partitions assignment(librdkafka().rd_kafka_topic_partition_list_new(1));
  librdkafka().rd_kafka_topic_partition_list_add(assignment.get(), o.topic.c_str(), 0)->offset =
      from;
  if (const rd_kafka_resp_err_t e = librdkafka().rd_kafka_assign(&reader, assignment.get())) {
    throw cluster_error(o, "cannot read it", e, librdkafka().rd_kafka_err2str(e));
  }
  const auto deadline = Clock::now() + o.timeout;
  std::vector<Stored> out;
  for (;;) {
    if (Clock::now() >= deadline) {
      throw cluster_error(
          o, "cannot read it", RD_KAFKA_RESP_ERR__TIMED_OUT,
          "no end of the partition within " + std::to_string(o.timeout.count()) + " ms");
    }
    const detail::Message m(
        librdkafka().rd_kafka_consumer_poll(&reader, std::min(ms_left(deadline), 250)));
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return out;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (detail::transient(m->err)) continue;
      throw cluster_error(o, "cannot read it", m->err,
                          librdkafka().rd_kafka_message_errstr(m.get()));
    }
    out.push_back({m->offset, std::string(static_cast<const char*>(m->payload), m->len)});
  }
}

Anchor parse(const AnchorTopicOptions& o, const Stored& r) {
  try {
    return Anchor::from_json(r.value);
  } catch (const AnchorError& e) {
    throw AnchorError("factum: anchors on " + topic_of(o) + ", offset " + std::to_string(r.offset) +
                      ": " + e.what());
  }
}

// The newest anchor: the last committed record, read from windows that grow back from the end.
std::optional<Anchor> read_last(const AnchorTopicOptions& o) {
  detail::Client reader = make_reader(o);
  const std::int64_t end = partition_end(*reader, o);
  for (std::int64_t window = 8; end > 0; window *= 8) {
    const std::int64_t from = std::max<std::int64_t>(0, end - window);
    const std::vector<Stored> records = read_from(*reader, o, from);
    if (!records.empty()) return parse(o, records.back());
    if (from == 0) break;
  }
  return std::nullopt;
}

void check(const AnchorTopicOptions& o) {
  if (o.topic.empty()) throw InvalidArgument("factum: anchors on Kafka: the topic is required");
  for (const char* own : {"transactional.id", "enable.idempotence", "acks", "isolation.level"}) {
    if (o.kafka.count(own) != 0) {
      throw InvalidArgument("factum: anchors on " + topic_of(o) + ": the property '" + own +
                            "' is the sink's to set");
    }
  }
  if (o.timeout.count() <= 0) {
    throw InvalidArgument("factum: anchors on " + topic_of(o) + ": the timeout must be positive");
  }
}

void commit(rd_kafka_t& producer, const AnchorTopicOptions& o, const Anchor& a) {
  const detail::TxnResult begun = detail::begin_transaction(producer);
  if (!begun.ok())
    throw cluster_error(o, "cannot begin the transaction", begun.code, begun.message);
  detail::Headers none;
  const std::string value = a.to_json();
  if (const rd_kafka_resp_err_t e =
          detail::produce(producer, o.topic, kKey, value, none, nullptr)) {
    static_cast<void>(detail::abort_transaction(producer, o.timeout));
    throw cluster_error(o, "cannot write the anchor", e, librdkafka().rd_kafka_err2str(e));
  }
  const detail::TxnResult done = detail::commit_transaction(producer, o.timeout);
  if (!done.ok()) {
    if (done.kind != detail::TxnResult::Kind::kFatal) {
      static_cast<void>(detail::abort_transaction(producer, o.timeout));
    }
    throw cluster_error(o, "the anchor was not committed (nothing appended)", done.code,
                        done.message);
  }
}

// Appenders of one topic's anchors in this process take turns: the transactional fencing that
// serializes appenders across processes (a later producer's start makes an earlier one's commit
// fail) would otherwise turn every overlap between threads into a failed append.
std::mutex& appenders_of(const AnchorTopicOptions& o) {
  static std::mutex registry_mutex;
  static std::map<std::string, std::unique_ptr<std::mutex>> registry;
  const auto servers = o.kafka.find("bootstrap.servers");
  const std::string key =
      (servers == o.kafka.end() ? std::string() : servers->second) + '\n' + o.transactional_id;
  std::lock_guard lock(registry_mutex);
  std::unique_ptr<std::mutex>& m = registry[key];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

}  // namespace

KafkaAnchorSink::KafkaAnchorSink(AnchorTopicOptions options) {
  if (options.transactional_id.empty()) {
    options.transactional_id = "factum-anchors:" + options.topic;
  }
  check(options);
  options_ = std::make_shared<const AnchorTopicOptions>(std::move(options));
}

Anchor KafkaAnchorSink::append(
    const std::function<Anchor(const std::optional<Anchor>& last)>& make) {
  const AnchorTopicOptions& o = *options_;
  std::lock_guard turn(appenders_of(o));
  detail::Conf conf = detail::make_conf(o.kafka);
  detail::set_property(*conf, "transactional.id", o.transactional_id);
  detail::set_property(*conf, "enable.idempotence", "true");
  detail::set_property(*conf, "acks", "all");
  detail::Client producer =
      detail::make_client(RD_KAFKA_PRODUCER, std::move(conf), "anchor producer of " + topic_of(o));
  // Fences every other appender: from here until the commit no other one can commit.
  const detail::TxnResult started = detail::init_transactions(*producer, o.timeout);
  if (!started.ok()) {
    throw cluster_error(o, "cannot start the anchors' producer", started.code, started.message);
  }
  check_one_partition(*producer, o);
  const Anchor a = make(read_last(o));
  commit(*producer, o, a);
  return a;
}

std::optional<Anchor> KafkaAnchorSink::last() { return read_last(*options_); }

std::vector<Anchor> KafkaAnchorSink::anchors() {
  const AnchorTopicOptions& o = *options_;
  detail::Client reader = make_reader(o);
  std::vector<Anchor> out;
  if (partition_end(*reader, o) == 0) return out;
  for (const Stored& r : read_from(*reader, o, 0)) out.push_back(parse(o, r));
  return out;
}

}  // namespace factum::kafka
