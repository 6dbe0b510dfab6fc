#include "factum/kafka/ingest.hpp"

#include "factum/kafka/librdkafka.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "client.hpp"
#include "factum/eventstore/text.hpp"
#include "offsets.hpp"
#include "record_error.hpp"
#include "record_event.hpp"

namespace factum::kafka {
namespace {

using detail::Message;
using detail::Partitions;

void check(const IngestOptions& options) {
  if (options.name.empty()) throw InvalidArgument("factum: kafka: an ingest needs a name");
  const std::string what = "factum: kafka: ingest '" + printable(options.name) + "' ";
  if (options.topic.empty()) throw InvalidArgument(what + "needs a topic");
  if (!options.stream_for_key) throw InvalidArgument(what + "needs stream_for_key");
  if (options.event_type.empty()) throw InvalidArgument(what + "needs an event_type");
  if (options.max_records == 0) throw InvalidArgument(what + "needs max_records > 0");
  if (options.broker_timeout.count() <= 0) throw InvalidArgument(what + "needs broker_timeout > 0");
}

// The records whose append is under way: their event ids, and the next offset of each
// partition they come from, which the first of their stream appends writes in its transaction.
struct Pending {
  std::unordered_set<EventId> ids;
  std::map<std::int32_t, std::int64_t> next_offsets;
  bool offsets_written = false;
};

// What the on_appending slot needs. Shared with the slot, so that a slot still running on
// another thread's append while the ingest is destroyed touches nothing freed.
struct OffsetHook {
  OffsetHook(std::string ingest_name, std::string ingest_topic)
      : name(std::move(ingest_name)), topic(std::move(ingest_topic)) {}

  // Runs inside every stream append's transaction of this process, on the committing thread;
  // writes the offsets once, in the transaction of the ingest's own append (an append_multi of
  // several records calls it once per record that writes an event).
  void on_appending(AppendTransaction& tx) {
    std::lock_guard lock(mu);
    if (!pending || pending->offsets_written || tx.events().empty() ||
        !pending->ids.contains(tx.events().front().id)) {
      return;
    }
    for (const auto& [partition, next] : pending->next_offsets) {
      detail::save_offset(tx.sql(), name, topic, partition, next);
    }
    pending->offsets_written = true;
  }

  void set(Pending next) {
    std::lock_guard lock(mu);
    pending = std::move(next);
  }

  Pending take() {
    std::lock_guard lock(mu);
    Pending out = std::move(pending).value_or(Pending{});
    pending.reset();
    return out;
  }

  const std::string name;
  const std::string topic;
  std::mutex mu;
  std::optional<Pending> pending;  // guarded by mu
};

// One consumed record and the event it becomes.
struct Ingested {
  std::string key;
  std::string stream;
  EventData event;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

}  // namespace

class Ingest::Impl {
 public:
  Impl(EventStore& store, IngestOptions options, const std::stop_token& stop)
      : store_(store), options_(std::move(options)) {
    check(options_);
    store_.write_sql([](Sql& sql) { detail::create_offsets_table(sql); });
    consumer_ = make_consumer();
    partition_count_ = read_partition_count(stop);
    hook_ = store_.on_appending().connect(
        [hook = offsets_](AppendTransaction& tx) { hook->on_appending(tx); });
    if (options_.consumer_group) {
      subscribe();
    } else {
      assign_stored_offsets();
    }
  }

  ~Impl() {
    hook_.disconnect();
    if (consumer_) static_cast<void>(librdkafka().rd_kafka_consumer_close(consumer_.get()));
  }

  // Polls up to max_records records, then appends them in as few transactions as it can (see
  // append_chunk). A consumer error ends the poll: the records before it are appended first.
  std::size_t poll_once() {
    start_unstarted();
    std::vector<Ingested> batch;
    std::optional<KafkaError> error;
    bool gap = false;  // the error is records deleted before they were ingested
    int timeout = static_cast<int>(options_.poll_timeout.count());
    while (batch.size() < options_.max_records) {
      const Message record(librdkafka().rd_kafka_consumer_poll(consumer_.get(), timeout));
      drop_revoked(batch);  // a rebalance runs inside the poll
      timeout = 0;
      if (!record) break;
      if (record->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) continue;
      if (record->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        error = consumer_error(*record);
        gap = record->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET;
        break;
      }
      batch.push_back(ingested(*record));
    }
    try {
      append_all(batch);
    } catch (...) {
      rewind();  // read the failed record again next time
      throw;
    }
    if (gap) rewind();  // the fetcher stopped at the gap: meet it again on the next poll
    if (error) throw *error;
    if (rebalance_error_) std::rethrow_exception(std::exchange(rebalance_error_, nullptr));
    return batch.size();
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

  std::vector<std::int32_t> assigned_partitions() const {
    std::lock_guard lock(assigned_mu_);
    return {assigned_.begin(), assigned_.end()};
  }

  std::map<std::int32_t, std::int64_t> end_offsets(std::chrono::milliseconds timeout,
                                                   const std::stop_token& stop) const {
    std::map<std::int32_t, std::int64_t> out;
    const rd_kafka_resp_err_t error =
        detail::end_offsets(*consumer_, options_.topic, partition_count_, timeout, stop, out);
    if (error != RD_KAFKA_RESP_ERR_NO_ERROR) throw cluster_error("the ends", error, timeout);
    return out;
  }

  std::map<std::int32_t, std::int64_t> known_end_offsets() const {
    std::map<std::int32_t, std::int64_t> out;
    for (std::int32_t p = 0; p < partition_count_; ++p) {
      std::int64_t low = 0;
      std::int64_t high = RD_KAFKA_OFFSET_INVALID;
      if (librdkafka().rd_kafka_get_watermark_offsets(consumer_.get(), options_.topic.c_str(), p,
                                                      &low, &high) == RD_KAFKA_RESP_ERR_NO_ERROR &&
          high >= 0) {
        out[p] = high;
      }
    }
    return out;
  }

  const IngestOptions& options() const { return options_; }

 private:
  detail::Client make_consumer() {
    std::map<std::string, std::string> properties = options_.kafka;
    properties.try_emplace("group.id", "factum-ingest-" + options_.name);
    // A stored offset the partition no longer holds (records deleted by retention before they
    // were ingested, a topic recreated) is an error, not a silent jump (see consumer_error).
    properties.try_emplace("auto.offset.reset", "error");
    properties["enable.auto.commit"] = "false";
    properties["enable.auto.offset.store"] = "false";
    detail::Conf conf = detail::make_conf(properties);
    if (options_.consumer_group) {
      librdkafka().rd_kafka_conf_set_rebalance_cb(conf.get(), &Impl::on_rebalance);
      librdkafka().rd_kafka_conf_set_opaque(conf.get(), this);
    }
    detail::Client client =
        detail::make_client(RD_KAFKA_CONSUMER, std::move(conf),
                            "consumer of ingest '" + printable(options_.name) + "'");
    librdkafka().rd_kafka_poll_set_consumer(client.get());
    return client;
  }

  int read_partition_count(const std::stop_token& stop) {
    int count = 0;
    const rd_kafka_resp_err_t error =
        detail::partition_count(*consumer_, options_.topic, options_.broker_timeout, stop, count);
    if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
      throw cluster_error("the partitions", error, options_.broker_timeout);
    }
    return count;
  }

  // "cannot read <what> of topic 'T'" and why: librdkafka's reason, interrupted by a stop
  // request, or no answer within `timeout`.
  KafkaError cluster_error(const std::string& what, rd_kafka_resp_err_t error,
                           std::chrono::milliseconds timeout) const {
    std::string why = librdkafka().rd_kafka_err2str(error);
    if (error == RD_KAFKA_RESP_ERR__INTR) {
      why = "interrupted";
    } else if (detail::transient(error)) {
      why = "no answer within " + std::to_string(timeout.count()) + " ms (" + why + ")";
    }
    return KafkaError(options_.topic, static_cast<int>(error),
                      "factum: kafka: ingest '" + printable(options_.name) + "' cannot read " +
                          what + " of topic '" + printable(options_.topic) + "': " + why);
  }

  // Every partition of the topic, each at its stored next offset (the beginning when none).
  void assign_stored_offsets() {
    const Partitions partitions(librdkafka().rd_kafka_topic_partition_list_new(partition_count_));
    for (std::int32_t p = 0; p < partition_count_; ++p) {
      librdkafka().rd_kafka_topic_partition_list_add(partitions.get(), options_.topic.c_str(), p);
    }
    set_stored_offsets(*partitions);
    check_assign(librdkafka().rd_kafka_assign(consumer_.get(), nullptr));
    check_assign(librdkafka().rd_kafka_assign(consumer_.get(), partitions.get()));
    set_assigned(*partitions, true);
  }

  void check_assign(rd_kafka_resp_err_t error, std::string_view what = "assign") const {
    if (error == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    throw KafkaError(options_.topic, static_cast<int>(error),
                     "factum: kafka: ingest '" + printable(options_.name) + "' cannot " +
                         std::string(what) + " topic '" + printable(options_.topic) +
                         "': " + librdkafka().rd_kafka_err2str(error));
  }

  // Takes ownership of `error` (an rd_kafka_error_t of the incremental and seek calls).
  void check_error(rd_kafka_error_t* error, std::string_view what) const {
    if (!error) return;
    const auto code = librdkafka().rd_kafka_error_code(error);
    librdkafka().rd_kafka_error_destroy(error);
    check_assign(code, what);
  }

  // Where a failed append leaves the consumer: back at the stored offsets of its partitions.
  void rewind() {
    if (!options_.consumer_group) {
      assign_stored_offsets();
      return;
    }
    rd_kafka_topic_partition_list_t* raw = nullptr;
    check_assign(librdkafka().rd_kafka_assignment(consumer_.get(), &raw), "read the assignment of");
    const Partitions partitions(raw);
    if (partitions->cnt == 0) return;
    set_stored_offsets(*partitions);
    check_error(
        librdkafka().rd_kafka_seek_partitions(consumer_.get(), partitions.get(),
                                              static_cast<int>(options_.broker_timeout.count())),
        "seek in");
  }

  // --- Consumer group -------------------------------------------------------------------------
  // librdkafka calls on_rebalance inside rd_kafka_consumer_poll (or consumer_close), on the
  // thread that polls. Assigned partitions start at their stored offsets; revoked ones are
  // unassigned and their records of the poll under way dropped (drop_revoked), so that nothing
  // of them is appended after the next owner may have started.

  void subscribe() {
    const Partitions topics(librdkafka().rd_kafka_topic_partition_list_new(1));
    librdkafka().rd_kafka_topic_partition_list_add(topics.get(), options_.topic.c_str(),
                                                   RD_KAFKA_PARTITION_UA);
    check_assign(librdkafka().rd_kafka_subscribe(consumer_.get(), topics.get()), "subscribe to");
  }

  static void on_rebalance(rd_kafka_t* /*consumer*/, rd_kafka_resp_err_t event,
                           rd_kafka_topic_partition_list_t* partitions, void* opaque) noexcept {
    auto& self = *static_cast<Impl*>(opaque);
    try {
      if (event == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        self.start(*partitions);
      } else {
        self.stop(*partitions);
      }
    } catch (...) {
      // Thrown by the poll_once under way; partitions not started are tried again next time.
      if (!self.rebalance_error_) self.rebalance_error_ = std::current_exception();
    }
  }

  bool cooperative() const {
    const char* protocol = librdkafka().rd_kafka_rebalance_protocol(consumer_.get());
    return protocol && std::string_view(protocol) == "COOPERATIVE";
  }

  // Partitions the group gave this ingest: started now when their offsets can be read, else on
  // the next poll_once (start_unstarted).
  void start(const rd_kafka_topic_partition_list_t& given) {
    if (!unstarted_) unstarted_.reset(librdkafka().rd_kafka_topic_partition_list_new(given.cnt));
    for (int i = 0; i < given.cnt; ++i) {
      librdkafka().rd_kafka_topic_partition_list_add(unstarted_.get(), given.elems[i].topic,
                                                     given.elems[i].partition);
    }
    start_unstarted();
  }

  void start_unstarted() {
    if (!unstarted_) return;
    set_stored_offsets(*unstarted_);
    if (cooperative()) {
      check_error(librdkafka().rd_kafka_incremental_assign(consumer_.get(), unstarted_.get()),
                  "assign");
    } else {
      check_assign(
          librdkafka().rd_kafka_assign(consumer_.get(), unstarted_.get()));  // eager: the whole set
    }
    set_assigned(*unstarted_, true);
    unstarted_.reset();
  }

  // Partitions taken from this ingest (revoked, or lost when it fell out of the group).
  void stop(const rd_kafka_topic_partition_list_t& taken) {
    const bool incremental = cooperative();
    for (int i = 0; i < taken.cnt; ++i) revoked_.insert(taken.elems[i].partition);
    set_assigned(taken, false);
    if (unstarted_) {
      for (int i = 0; i < taken.cnt; ++i) {
        static_cast<void>(librdkafka().rd_kafka_topic_partition_list_del(
            unstarted_.get(), taken.elems[i].topic, taken.elems[i].partition));
      }
      if (unstarted_->cnt == 0 || !incremental) unstarted_.reset();
    }
    if (incremental) {
      check_error(librdkafka().rd_kafka_incremental_unassign(consumer_.get(), &taken), "unassign");
    } else {
      check_assign(librdkafka().rd_kafka_assign(consumer_.get(), nullptr), "unassign");
    }
  }

  // Drops the records of partitions revoked since the last call: polled before the revocation,
  // they must not be appended (and their offsets not written) by this ingest any more.
  void drop_revoked(std::vector<Ingested>& batch) {
    if (revoked_.empty()) return;
    std::erase_if(batch, [&](const Ingested& r) { return revoked_.contains(r.partition); });
    revoked_.clear();
  }

  // Sets each partition's offset to its stored next offset (the beginning when none).
  void set_stored_offsets(rd_kafka_topic_partition_list_t& partitions) const {
    const auto stored = offsets();
    for (int i = 0; i < partitions.cnt; ++i) {
      const auto it = stored.find(partitions.elems[i].partition);
      partitions.elems[i].offset = it == stored.end() ? RD_KAFKA_OFFSET_BEGINNING : it->second;
    }
  }

  void set_assigned(const rd_kafka_topic_partition_list_t& partitions, bool assigned) {
    std::lock_guard lock(assigned_mu_);
    if (assigned && !options_.consumer_group) assigned_.clear();
    for (int i = 0; i < partitions.cnt; ++i) {
      if (assigned) {
        assigned_.insert(partitions.elems[i].partition);
      } else {
        assigned_.erase(partitions.elems[i].partition);
      }
    }
  }

  KafkaError consumer_error(const rd_kafka_message_t& record) const {
    if (record.err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) {
      return KafkaError(
          options_.topic, static_cast<int>(record.err),
          "factum: kafka: ingest '" + printable(options_.name) + "' on topic '" +
              printable(options_.topic) + "' partition " + std::to_string(record.partition) +
              ": the stored offset " + stored_offset_text(record.partition) +
              " is no longer in the topic (records deleted by retention before they were "
              "ingested, or the topic was recreated; " +
              printable(librdkafka().rd_kafka_message_errstr(&record)) +
              "); nothing after it is ingested. To accept the loss and go on, give the property "
              "auto.offset.reset=earliest, or store another offset for the partition");
    }
    return KafkaError(options_.topic, static_cast<int>(record.err),
                      "factum: kafka: ingest '" + printable(options_.name) + "' on topic '" +
                          printable(options_.topic) + "' partition " +
                          std::to_string(record.partition) + ": " +
                          printable(librdkafka().rd_kafka_message_errstr(&record)));
  }

  // The partition's stored offset as text ("(none)" when none is stored, or unreadable).
  std::string stored_offset_text(std::int32_t partition) const {
    try {
      const auto stored = offsets();
      const auto it = stored.find(partition);
      if (it != stored.end()) return std::to_string(it->second);
    } catch (const Error&) {
      // Only for the message.
    }
    return "(none)";
  }

  Ingested ingested(const rd_kafka_message_t& record) const {
    const std::string_view key(static_cast<const char*>(record.key), record.key_len);
    return Ingested{std::string(key), options_.stream_for_key(key),
                    detail::record_event(record, options_.topic, options_.event_type),
                    record.partition, record.offset};
  }

  // Appends `batch` in order, in chunks without a repeated event id (append_multi refuses an id
  // twice in one call; a topic the relay wrote twice holds such repeats).
  void append_all(const std::vector<Ingested>& batch) {
    std::unordered_set<EventId> ids;
    std::size_t begin = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (ids.insert(batch[i].event.id).second) continue;
      append_chunk(std::span(batch).subspan(begin, i - begin));
      begin = i;
      ids = {batch[i].event.id};
    }
    if (begin < batch.size()) append_chunk(std::span(batch).subspan(begin));
  }

  // One transaction for the whole chunk (append_multi, a part per record, so that each record
  // is recognised as a retry or not on its own), with the offsets written in it. When that
  // fails, the records go one by one, so that those before a bad record are stored and the
  // error names the bad one.
  void append_chunk(std::span<const Ingested> chunk) {
    if (chunk.size() > 1) {
      try {
        append_in_one(chunk);
        return;
      } catch (const Error&) {
        // One record at a time below: the same failure comes back at the record that causes it.
      }
    }
    for (const Ingested& one : chunk) {
      try {
        append_in_one(std::span(&one, 1));
      } catch (const Error&) {
        detail::rethrow_naming({options_.name, options_.topic, one.partition, one.offset, one.key});
      }
    }
  }

  void append_in_one(std::span<const Ingested> chunk) {
    Pending pending;
    std::vector<StreamAppend> parts;
    parts.reserve(chunk.size());
    for (const Ingested& r : chunk) {
      pending.ids.insert(r.event.id);
      auto& next = pending.next_offsets[r.partition];
      next = std::max(next, r.offset + 1);
      parts.push_back(StreamAppend{r.stream, ExpectedVersion::any(), {r.event}});
    }
    const auto next_offsets = pending.next_offsets;
    offsets_->set(std::move(pending));
    bool written = false;
    try {
      if (parts.size() == 1) {
        store_.append(parts[0].stream, ExpectedVersion::any(), parts[0].events);
      } else {
        store_.append_multi(parts);
      }
      written = offsets_->take().offsets_written;
    } catch (...) {
      static_cast<void>(offsets_->take());
      throw;
    }
    if (written) return;
    // Every record was stored already (a retry writes nothing): the offsets on their own.
    store_.write_sql([&](Sql& sql) {
      for (const auto& [partition, next] : next_offsets) {
        detail::save_offset(sql, options_.name, options_.topic, partition, next);
      }
    });
  }

  EventStore& store_;
  const IngestOptions options_;
  detail::Client consumer_;
  std::int32_t partition_count_ = 0;
  const std::shared_ptr<OffsetHook> offsets_ =
      std::make_shared<OffsetHook>(options_.name, options_.topic);
  boost::signals2::scoped_connection hook_;
  // Consumer group state, touched only on the polling thread (rebalances run inside the poll).
  Partitions unstarted_;                // given by the group, not yet started
  std::set<std::int32_t> revoked_;      // revoked since the last drop_revoked
  std::exception_ptr rebalance_error_;  // the first failure of a rebalance, for poll_once
  mutable std::mutex assigned_mu_;
  std::set<std::int32_t> assigned_;  // guarded by assigned_mu_
};

Ingest::Ingest(EventStore& store, IngestOptions options, std::stop_token stop)
    : impl_(std::make_unique<Impl>(store, std::move(options), stop)) {}

Ingest::~Ingest() = default;

std::size_t Ingest::poll_once() { return impl_->poll_once(); }

void Ingest::run(std::stop_token stop) { impl_->run(stop); }

std::map<std::int32_t, std::int64_t> Ingest::offsets() const { return impl_->offsets(); }

std::map<std::int32_t, std::int64_t> Ingest::end_offsets() const {
  return impl_->end_offsets(impl_->options().broker_timeout, {});
}

std::map<std::int32_t, std::int64_t> Ingest::end_offsets(std::chrono::milliseconds timeout,
                                                         std::stop_token stop) const {
  return impl_->end_offsets(timeout, stop);
}

std::map<std::int32_t, std::int64_t> Ingest::known_end_offsets() const {
  return impl_->known_end_offsets();
}

std::vector<std::int32_t> Ingest::assigned_partitions() const {
  return impl_->assigned_partitions();
}

}  // namespace factum::kafka
