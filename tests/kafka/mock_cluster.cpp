#include "mock_cluster.hpp"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <array>
#include <stdexcept>

namespace factum::test {
namespace {

void set(rd_kafka_conf_t* conf, const char* name, const std::string& value) {
  std::array<char, 512> error{};
  if (rd_kafka_conf_set(conf, name, value.c_str(), error.data(), error.size()) !=
      RD_KAFKA_CONF_OK) {
    throw std::runtime_error(std::string("kafka test: ") + name + ": " + error.data());
  }
}

rd_kafka_t* new_client(rd_kafka_type_t type, rd_kafka_conf_t* conf) {
  std::array<char, 512> error{};
  rd_kafka_t* rk = rd_kafka_new(type, conf, error.data(), error.size());
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(std::string("kafka test: rd_kafka_new: ") + error.data());
  }
  return rk;
}

std::map<std::string, std::string> headers_of(const rd_kafka_message_t& message) {
  std::map<std::string, std::string> out;
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(&message, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return out;
  const char* name = nullptr;
  const void* value = nullptr;
  std::size_t size = 0;
  for (std::size_t i = 0;
       rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
       ++i) {
    out[name] = std::string(static_cast<const char*>(value), size);
  }
  return out;
}

ConsumedRecord record_of(const rd_kafka_message_t& message) {
  ConsumedRecord out;
  out.key = std::string(static_cast<const char*>(message.key), message.key_len);
  out.value = std::string(static_cast<const char*>(message.payload), message.len);
  out.partition = message.partition;
  out.offset = message.offset;
  out.headers = headers_of(message);
  return out;
}

}  // namespace

MockCluster::MockCluster(int brokers) {
  client_ = new_client(RD_KAFKA_PRODUCER, rd_kafka_conf_new());
  cluster_ = rd_kafka_mock_cluster_new(client_, brokers);
  if (cluster_ == nullptr) {
    rd_kafka_destroy(client_);
    throw std::runtime_error("kafka test: rd_kafka_mock_cluster_new failed");
  }
}

MockCluster::~MockCluster() {
  rd_kafka_mock_cluster_destroy(cluster_);
  rd_kafka_destroy(client_);
}

std::string MockCluster::bootstrap_servers() const {
  return rd_kafka_mock_cluster_bootstraps(cluster_);
}

void MockCluster::create_topic(const std::string& topic, int partitions) {
  if (rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, 1) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error("kafka test: cannot create topic " + topic);
  }
}

void MockCluster::set_down(int id) { rd_kafka_mock_broker_set_down(cluster_, id); }

void MockCluster::set_up(int id) { rd_kafka_mock_broker_set_up(cluster_, id); }

void MockCluster::set_rtt(int ms) { rd_kafka_mock_broker_set_rtt(cluster_, -1, ms); }

void MockCluster::set_broker_rtt(int id, int ms) { rd_kafka_mock_broker_set_rtt(cluster_, id, ms); }

void MockCluster::set_topic_error(const std::string& topic, int error) {
  rd_kafka_mock_topic_set_error(cluster_, topic.c_str(), static_cast<rd_kafka_resp_err_t>(error));
}

void MockCluster::fail_produce_requests(int count, int error) {
  std::vector<rd_kafka_resp_err_t> errors(static_cast<std::size_t>(count),
                                          static_cast<rd_kafka_resp_err_t>(error));
  rd_kafka_mock_push_request_errors_array(cluster_, 0 /* Produce */, errors.size(), errors.data());
}

void MockCluster::fail_requests(int api_key, int count, int error) {
  std::vector<rd_kafka_resp_err_t> errors(static_cast<std::size_t>(count),
                                          static_cast<rd_kafka_resp_err_t>(error));
  rd_kafka_mock_push_request_errors_array(cluster_, static_cast<std::int16_t>(api_key),
                                          errors.size(), errors.data());
}

void MockCluster::set_leader(const std::string& topic, int partition, int broker) {
  if (rd_kafka_mock_partition_set_leader(cluster_, topic.c_str(), partition, broker) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error("kafka test: cannot move the leader of " + topic + " [" +
                             std::to_string(partition) + "]");
  }
}

std::vector<ConsumedRecord> consume_all(const std::string& bootstrap_servers,
                                        const std::string& topic, int partitions,
                                        std::size_t expected, std::chrono::milliseconds timeout) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", bootstrap_servers);
  set(conf, "group.id", "factum-kafka-test");
  set(conf, "isolation.level", "read_committed");  // librdkafka's default, said out loud
  set(conf, "enable.auto.commit", "false");
  rd_kafka_t* rk = new_client(RD_KAFKA_CONSUMER, conf);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* assignment = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(assignment, topic.c_str(), p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk, assignment);
  rd_kafka_topic_partition_list_destroy(assignment);
  std::vector<ConsumedRecord> out;
  const auto clock = std::chrono::steady_clock::now;
  auto deadline = clock() + timeout;
  bool extra = false;
  while (clock() < deadline) {
    if (!extra && out.size() >= expected) {
      extra = true;
      deadline = clock() + std::chrono::milliseconds(500);
    }
    rd_kafka_message_t* message = rd_kafka_consumer_poll(rk, 100);
    if (message == nullptr) continue;
    if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) out.push_back(record_of(*message));
    rd_kafka_message_destroy(message);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

std::int64_t records_in(const std::string& bootstrap_servers, const std::string& topic,
                        int partitions) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", bootstrap_servers);
  set(conf, "group.id", "factum-kafka-test-ends");
  rd_kafka_t* rk = new_client(RD_KAFKA_CONSUMER, conf);
  rd_kafka_topic_partition_list_t* ends = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(ends, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_END;
  }
  // offsets_for_times with the time "latest" gives each partition's end, within the timeout
  // (rd_kafka_query_watermark_offsets may never return in librdkafka 2.0.2).
  const rd_kafka_resp_err_t error = rd_kafka_offsets_for_times(rk, ends, 10000);
  std::int64_t total = 0;
  for (int i = 0; i < ends->cnt; ++i) total += ends->elems[i].offset;
  rd_kafka_topic_partition_list_destroy(ends);
  rd_kafka_destroy(rk);
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error(std::string("kafka test: cannot read the ends of ") + topic);
  }
  return total;
}

void produce_all(const std::string& bootstrap_servers, const std::string& topic,
                 const std::vector<RecordToProduce>& records) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", bootstrap_servers);
  rd_kafka_t* rk = new_client(RD_KAFKA_PRODUCER, conf);
  for (const RecordToProduce& r : records) {
    rd_kafka_headers_t* headers = rd_kafka_headers_new(r.headers.size());
    for (const auto& [name, value] : r.headers) {
      rd_kafka_header_add(headers, name.c_str(), -1, value.data(),
                          static_cast<ssize_t>(value.size()));
    }
    std::array<rd_kafka_vu_t, 5> vus{};
    vus[0].vtype = RD_KAFKA_VTYPE_TOPIC;
    vus[0].u.cstr = topic.c_str();
    vus[1].vtype = RD_KAFKA_VTYPE_KEY;
    vus[1].u.mem = {const_cast<char*>(r.key.data()), r.key.size()};
    vus[2].vtype = RD_KAFKA_VTYPE_VALUE;
    vus[2].u.mem = {const_cast<char*>(r.value.data()), r.value.size()};
    vus[3].vtype = RD_KAFKA_VTYPE_HEADERS;
    vus[3].u.headers = headers;
    vus[4].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vus[4].u.i = RD_KAFKA_MSG_F_COPY;
    if (rd_kafka_error_t* error = rd_kafka_produceva(rk, vus.data(), vus.size())) {
      rd_kafka_error_destroy(error);
      rd_kafka_headers_destroy(headers);
      rd_kafka_destroy(rk);
      throw std::runtime_error("kafka test: produce refused");
    }
  }
  const rd_kafka_resp_err_t flushed = rd_kafka_flush(rk, 20000);
  rd_kafka_destroy(rk);
  if (flushed != RD_KAFKA_RESP_ERR_NO_ERROR) throw std::runtime_error("kafka test: flush failed");
}

}  // namespace factum::test
