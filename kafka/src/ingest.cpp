#include "factum/kafka/ingest.hpp"

#include <librdkafka/rdkafka.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "client.hpp"
#include "offsets.hpp"
#include "record_event.hpp"

namespace factum::kafka {
namespace {

constexpr int kMetadataTimeoutMs = 10000;

struct MessageDeleter {
  void operator()(rd_kafka_message_t* message) const noexcept { rd_kafka_message_destroy(message); }
};
using Message = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;

struct PartitionsDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const noexcept {
    rd_kafka_topic_partition_list_destroy(list);
  }
};
using Partitions = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionsDeleter>;

struct TopicDeleter {
  void operator()(rd_kafka_topic_t* topic) const noexcept { rd_kafka_topic_destroy(topic); }
};

struct MetadataDeleter {
  void operator()(const rd_kafka_metadata_t* metadata) const noexcept {
    rd_kafka_metadata_destroy(metadata);
  }
};

void check(const IngestOptions& options) {
  if (options.name.empty()) throw InvalidArgument("factum kafka: an ingest needs a name");
  const std::string what = "factum kafka: ingest '" + options.name + "' ";
  if (options.topic.empty()) throw InvalidArgument(what + "needs a topic");
  if (!options.stream_for_key) throw InvalidArgument(what + "needs stream_for_key");
  if (options.event_type.empty()) throw InvalidArgument(what + "needs an event_type");
  if (options.max_records == 0) throw InvalidArgument(what + "needs max_records > 0");
}

// The record whose append is under way, and whether its offset went into that transaction.
struct Pending {
  EventId id;
  std::int32_t partition = 0;
  std::int64_t next_offset = 0;
  bool offset_written = false;
};

// What the on_appending slot needs. Shared with the slot, so that a slot still running on
// another thread's append while the ingest is destroyed touches nothing freed.
struct OffsetHook {
  OffsetHook(std::string ingest_name, std::string ingest_topic)
      : name(std::move(ingest_name)), topic(std::move(ingest_topic)) {}

  // Runs inside every append's transaction of this process, on the committing thread.
  void on_appending(AppendTransaction& tx) {
    std::lock_guard lock(mu);
    if (!pending || tx.events().empty() || tx.events().front().id != pending->id) return;
    detail::save_offset(tx.sql(), name, topic, pending->partition, pending->next_offset);
    pending->offset_written = true;
  }

  void set(Pending next) {
    std::lock_guard lock(mu);
    pending = std::move(next);
  }

  Pending take() {
    std::lock_guard lock(mu);
    Pending out = pending.value_or(Pending{});
    pending.reset();
    return out;
  }

  const std::string name;
  const std::string topic;
  std::mutex mu;
  std::optional<Pending> pending;  // guarded by mu
};

}  // namespace

class Ingest::Impl {
 public:
  Impl(EventStore& store, IngestOptions options) : store_(store), options_(std::move(options)) {
    check(options_);
    store_.write_sql([](Sql& sql) { detail::create_offsets_table(sql); });
    consumer_ = make_consumer();
    partition_count_ = read_partition_count();
    assign_stored_offsets();
    hook_ = store_.on_appending().connect(
        [hook = offsets_](AppendTransaction& tx) { hook->on_appending(tx); });
  }

  ~Impl() {
    hook_.disconnect();
    if (consumer_) static_cast<void>(rd_kafka_consumer_close(consumer_.get()));
  }

  std::size_t poll_once() {
    std::size_t handled = 0;
    int timeout = static_cast<int>(options_.poll_timeout.count());
    while (handled < options_.max_records) {
      const Message record(rd_kafka_consumer_poll(consumer_.get(), timeout));
      timeout = 0;
      if (!record) break;
      if (record->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) continue;
      if (record->err != RD_KAFKA_RESP_ERR_NO_ERROR) throw consumer_error(*record);
      try {
        ingest(*record);
      } catch (...) {
        assign_stored_offsets();  // read the failed record again next time
        throw;
      }
      ++handled;
    }
    return handled;
  }

  void run(std::stop_token stop) {
    std::mutex mu;
    std::condition_variable_any wake;
    while (!stop.stop_requested()) {
      try {
        poll_once();
        continue;
      } catch (const Error&) {
        // Retried after a pause: the stored offsets say where to start again.
      }
      std::unique_lock lock(mu);
      wake.wait_for(lock, stop, options_.poll_timeout, [] { return false; });
    }
  }

  std::map<std::int32_t, std::int64_t> offsets() const {
    std::map<std::int32_t, std::int64_t> out;
    store_.read_sql(
        [&](Sql& sql) { out = detail::load_offsets(sql, options_.name, options_.topic); });
    return out;
  }

 private:
  detail::Client make_consumer() {
    std::map<std::string, std::string> properties = options_.kafka;
    properties.try_emplace("group.id", "factum-ingest-" + options_.name);
    properties.try_emplace("auto.offset.reset", "earliest");
    properties["enable.auto.commit"] = "false";
    properties["enable.auto.offset.store"] = "false";
    detail::Client client = detail::make_client(RD_KAFKA_CONSUMER, detail::make_conf(properties),
                                                "consumer of ingest '" + options_.name + "'");
    rd_kafka_poll_set_consumer(client.get());
    return client;
  }

  int read_partition_count() {
    const std::unique_ptr<rd_kafka_topic_t, TopicDeleter> topic(
        rd_kafka_topic_new(consumer_.get(), options_.topic.c_str(), nullptr));
    const rd_kafka_metadata_t* raw = nullptr;
    rd_kafka_resp_err_t error =
        rd_kafka_metadata(consumer_.get(), 0, topic.get(), &raw, kMetadataTimeoutMs);
    const std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter> metadata(raw);
    if (error == RD_KAFKA_RESP_ERR_NO_ERROR && metadata->topic_cnt != 1) {
      error = RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
    }
    if (error == RD_KAFKA_RESP_ERR_NO_ERROR) error = metadata->topics[0].err;
    if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
      throw KafkaError(options_.topic, static_cast<int>(error),
                       "factum kafka: ingest '" + options_.name +
                           "' cannot read the partitions of topic '" + options_.topic +
                           "': " + rd_kafka_err2str(error));
    }
    return metadata->topics[0].partition_cnt;
  }

  // Every partition of the topic, each at its stored next offset (the beginning when none).
  void assign_stored_offsets() {
    const auto stored = offsets();
    Partitions partitions(rd_kafka_topic_partition_list_new(partition_count_));
    for (std::int32_t p = 0; p < partition_count_; ++p) {
      const auto it = stored.find(p);
      rd_kafka_topic_partition_list_add(partitions.get(), options_.topic.c_str(), p)->offset =
          it == stored.end() ? RD_KAFKA_OFFSET_BEGINNING : it->second;
    }
    check_assign(rd_kafka_assign(consumer_.get(), nullptr));
    check_assign(rd_kafka_assign(consumer_.get(), partitions.get()));
  }

  void check_assign(rd_kafka_resp_err_t error) const {
    if (error == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    throw KafkaError(options_.topic, static_cast<int>(error),
                     "factum kafka: ingest '" + options_.name + "' cannot assign topic '" +
                         options_.topic + "': " + rd_kafka_err2str(error));
  }

  KafkaError consumer_error(const rd_kafka_message_t& record) const {
    return KafkaError(options_.topic, static_cast<int>(record.err),
                      "factum kafka: ingest '" + options_.name + "' on topic '" + options_.topic +
                          "' partition " + std::to_string(record.partition) + ": " +
                          rd_kafka_message_errstr(&record));
  }

  // Appends the record's event; its offset commits in the same transaction (on_appending), or,
  // when the event is stored already (a retry writes nothing), on its own.
  void ingest(const rd_kafka_message_t& record) {
    const EventData event = detail::record_event(record, options_.topic, options_.event_type);
    const std::string_view key(static_cast<const char*>(record.key), record.key_len);
    const std::string stream = options_.stream_for_key(key);
    offsets_->set(Pending{event.id, record.partition, record.offset + 1, false});
    bool written = false;
    try {
      store_.append(stream, ExpectedVersion::any(), event);
      written = offsets_->take().offset_written;
    } catch (...) {
      static_cast<void>(offsets_->take());
      throw;
    }
    if (written) return;
    store_.write_sql([&](Sql& sql) {
      detail::save_offset(sql, options_.name, options_.topic, record.partition, record.offset + 1);
    });
  }

  EventStore& store_;
  const IngestOptions options_;
  detail::Client consumer_;
  std::int32_t partition_count_ = 0;
  const std::shared_ptr<OffsetHook> offsets_ =
      std::make_shared<OffsetHook>(options_.name, options_.topic);
  boost::signals2::scoped_connection hook_;
};

Ingest::Ingest(EventStore& store, IngestOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {}

Ingest::~Ingest() = default;

std::size_t Ingest::poll_once() { return impl_->poll_once(); }

void Ingest::run(std::stop_token stop) { impl_->run(stop); }

std::map<std::int32_t, std::int64_t> Ingest::offsets() const { return impl_->offsets(); }

}  // namespace factum::kafka
