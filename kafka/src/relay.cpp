#include "factum/kafka/relay.hpp"

#include "factum/kafka/librdkafka.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "client.hpp"
#include "factum/eventstore/text.hpp"
#include "factum/projections/checkpoint_store.hpp"
#include "headers.hpp"
#include "transaction.hpp"

namespace factum::kafka {
namespace {

constexpr const char* kCheckpointPrefix = "kafka-relay:";
constexpr int kPollMs = 100;
constexpr int kCloseFlushMs = 5000;
// publish_available hands batches over while fewer records than this await their delivery
// reports (librdkafka's own queue holds 100000 by default).
constexpr std::size_t kMaxInFlight = 20000;

// One record's fate, written by its delivery report.
struct Outcome {
  bool done = false;
  rd_kafka_resp_err_t error = RD_KAFKA_RESP_ERR_NO_ERROR;
  std::size_t* batch_pending = nullptr;  // its batch's count of reports still to come
};

// What the relay keeps of an event it handed to the producer: enough to move the checkpoint
// and to name the event in an error (the record itself is the producer's copy).
struct Handed {
  explicit Handed(const EventView& event)
      : position(event.position), id(event.id), stream(event.stream_id) {}
  Position position = 0;
  EventId id;
  std::string stream;
  Outcome outcome;
};

// Events after the checkpoint, handed to the producer together as they are read. Held by
// unique_ptr, and a deque (which never moves its elements as it grows): the producer keeps
// pointers to the outcomes until their delivery reports come.
struct Batch {
  std::deque<Handed> records;
  std::size_t pending = 0;  // records handed over without a report yet
  bool refused = false;     // the producer refused a record: the batch ends with it
};

// Refuses a property the caller set to something else than the relay's guarantee needs.
void require_property(const RelayOptions& options, const std::string& name,
                      std::initializer_list<const char*> allowed) {
  const auto it = options.kafka.find(name);
  if (it == options.kafka.end()) return;
  for (const char* value : allowed) {
    if (it->second == value) return;
  }
  throw InvalidArgument("factum: kafka: relay '" + printable(options.name) + "': property '" +
                        printable(name) + "' must be '" + *allowed.begin() + "', not '" +
                        printable(it->second) + "'");
}

void check(const RelayOptions& options) {
  if (options.name.empty()) throw InvalidArgument("factum: kafka: a relay needs a name");
  if (options.topic.empty()) {
    throw InvalidArgument("factum: kafka: relay '" + printable(options.name) + "' needs a topic");
  }
  if (options.batch_size == 0) {
    throw InvalidArgument("factum: kafka: relay '" + printable(options.name) +
                          "': batch_size must be > 0");
  }
  require_property(options, "enable.idempotence", {"true"});
  require_property(options, "acks", {"all", "-1"});
  if (options.kafka.count("transactional.id") != 0) {
    throw InvalidArgument("factum: kafka: relay '" + printable(options.name) +
                          "': give the transactional id as RelayOptions::transactional_id, not as "
                          "the property 'transactional.id'");
  }
  if (!options.transactional_id.empty() && options.transaction_timeout.count() <= 0) {
    throw InvalidArgument("factum: kafka: relay '" + printable(options.name) +
                          "': transaction_timeout must be > 0");
  }
}

}  // namespace

class Relay::Impl {
 public:
  Impl(EventStore& store, RelayOptions options)
      : store_(store), options_(std::move(options)), name_(kCheckpointPrefix + options_.name) {
    check(options_);
    store_.write_sql([&](Sql& sql) {
      CheckpointStore::create_table(sql);
      checkpoint_ = CheckpointStore::load(sql, name_);
    });
    producer_ = make_producer();
    if (transactional()) init_transactions();
  }

  ~Impl() {
    // publish_once settles every record it hands over, so this finds none in flight.
    if (producer_) static_cast<void>(librdkafka().rd_kafka_flush(producer_.get(), kCloseFlushMs));
  }

  std::size_t publish_once() {
    if (transactional()) return publish_transaction();
    const auto batch = std::make_unique<Batch>();
    try {
      fill(*batch, checkpoint() + 1);
    } catch (...) {
      settle();
      throw;
    }
    if (batch->records.empty()) return 0;
    settle();
    const std::size_t confirmed = confirm(*batch);
    record_error("");
    return confirmed;
  }

  // Batches back to back until none is left (or `stop`): batches are read and handed to the
  // producer while fewer than kMaxInFlight records await their reports, so that the producer
  // never waits for the relay; the batches whose reports are all in are confirmed from the
  // oldest on, together, with one checkpoint write.
  std::size_t publish_available(std::stop_token stop) {
    if (transactional()) return publish_transactions(stop);
    std::deque<std::unique_ptr<Batch>> flight;
    const SettleOnExit settle_first{*this};  // declared after the batches: runs before they go
    Position from = checkpoint() + 1;
    bool exhausted = false;
    std::size_t confirmed = 0;
    for (;;) {
      while (!exhausted && !stop.stop_requested() && pending_ < kMaxInFlight) {
        Batch& batch = *flight.emplace_back(std::make_unique<Batch>());  // in flight at once
        fill(batch, from);
        if (batch.records.empty()) {
          flight.pop_back();
          exhausted = true;
          break;
        }
        from = batch.records.back().position + 1;
        exhausted = batch.refused;
      }
      if (flight.empty()) break;
      librdkafka().rd_kafka_poll(producer_.get(), flight.front()->pending > 0 ? kPollMs : 0);
      confirmed += confirm_settled(flight);
    }
    record_error("");
    return confirmed;
  }

  void run(std::stop_token stop) {
    std::mutex mu;
    std::condition_variable_any wake;
    while (!stop.stop_requested()) {
      std::size_t published = 0;
      try {
        published = publish_available(stop);
      } catch (const Error& e) {
        record_error(e.what());
        if (!unusable_.empty()) throw;  // a fatal transactional error: the relay is done
      }
      if (published > 0) continue;
      std::unique_lock lock(mu);
      wake.wait_for(lock, stop, options_.idle_wait, [] { return false; });
    }
  }

  RelayStatus status() const {
    RelayStatus out;
    out.head = store_.head_position();
    {
      std::lock_guard lock(mu_);
      out.checkpoint = checkpoint_;
      out.published = published_;
      out.last_error = last_error_;
    }
    out.lag = out.head > out.checkpoint ? out.head - out.checkpoint : 0;
    out.in_flight = in_flight_.load();
    return out;
  }

 private:
  // Delivery reports run inside rd_kafka_poll, on the publishing thread.
  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    auto* outcome = static_cast<Outcome*>(message->_private);
    if (self == nullptr || outcome == nullptr) return;
    outcome->done = true;
    outcome->error = message->err;
    if (outcome->batch_pending != nullptr) --*outcome->batch_pending;
    --self->pending_;
    --self->in_flight_;
  }

  detail::Client make_producer() {
    detail::Conf conf = detail::make_conf(options_.kafka);
    detail::set_property(*conf, "enable.idempotence", "true");
    detail::set_property(*conf, "acks", "all");
    librdkafka().rd_kafka_conf_set_dr_msg_cb(conf.get(), &Impl::on_delivery);
    librdkafka().rd_kafka_conf_set_opaque(conf.get(), this);
    if (transactional()) detail::set_property(*conf, "transactional.id", options_.transactional_id);
    return detail::make_client(RD_KAFKA_PRODUCER, std::move(conf),
                               "producer of relay '" + printable(options_.name) + "'");
  }

  Position checkpoint() const {
    std::lock_guard lock(mu_);
    return checkpoint_;
  }

  // Reads up to batch_size events from position `from` on and hands each to the producer as it
  // is read (from the database's row memory: the producer copies key, value and headers),
  // stopping after the first record the producer refuses (its outcome says why). Does not wait
  // for reports.
  void fill(Batch& batch, Position from) {
    auto hand_over = [&](const EventView& event) {
      Handed& handed = batch.records.emplace_back(event);
      handed.outcome.batch_pending = &batch.pending;
      const rd_kafka_resp_err_t refused = produce(event, handed.outcome);
      if (refused != RD_KAFKA_RESP_ERR_NO_ERROR) {
        handed.outcome = {true, refused, nullptr};
        batch.refused = true;
        return false;
      }
      ++batch.pending;
      return batch.records.size() < options_.batch_size;
    };
    if (options_.category.empty()) {
      store_.visit_all(from, hand_over);
    } else {
      store_.visit_category(options_.category, from, hand_over);
    }
  }

  // Waits for every report of the records in flight when it is destroyed (an exception leaving
  // publish_available), before the batches their outcomes live in are freed.
  struct SettleOnExit {
    Impl& impl;
    ~SettleOnExit() { impl.settle(); }
  };

  static bool confirmed_whole(const Batch& batch) {
    return std::all_of(batch.records.begin(), batch.records.end(), [](const Handed& h) {
      return h.outcome.done && h.outcome.error == RD_KAFKA_RESP_ERR_NO_ERROR;
    });
  }

  // Moves the checkpoint over the batch's confirmed prefix; throws DeliveryError for the first
  // event after it. Every report of the batch is in.
  std::size_t confirm(const Batch& batch) {
    std::size_t confirmed = 0;
    while (confirmed < batch.records.size() && batch.records[confirmed].outcome.done &&
           batch.records[confirmed].outcome.error == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++confirmed;
    }
    if (confirmed > 0) advance(batch.records[confirmed - 1].position, confirmed);
    if (confirmed < batch.records.size()) {
      fail(batch.records[confirmed], batch.records[confirmed].outcome.error);
    }
    return confirmed;
  }

  // Confirms the batches at the front of `flight` whose reports are all in, in one checkpoint
  // write, and removes them. When one of them was not confirmed whole, waits for every report
  // still to come (of the batches after it too), then moves the checkpoint over what was
  // confirmed before the failure and throws DeliveryError for it.
  std::size_t confirm_settled(std::deque<std::unique_ptr<Batch>>& flight) {
    std::size_t count = 0;
    Position to = 0;
    while (!flight.empty() && flight.front()->pending == 0 && confirmed_whole(*flight.front())) {
      to = flight.front()->records.back().position;
      count += flight.front()->records.size();
      flight.pop_front();
    }
    if (count > 0) advance(to, count);
    if (!flight.empty() && flight.front()->pending == 0) {
      settle();                                 // every report in before the error
      return count + confirm(*flight.front());  // throws: the batch is not confirmed whole
    }
    return count;
  }

  // One record; a full queue is polled and retried, never dropped. Returns the error of a
  // refusal other than a full queue.
  rd_kafka_resp_err_t produce(const EventView& event, Outcome& outcome) {
    for (;;) {
      detail::Headers headers = detail::event_headers(event);
      const rd_kafka_resp_err_t code =
          detail::produce(*producer_, options_.topic, event.stream_id,
                          std::string_view(reinterpret_cast<const char*>(event.payload.data()),
                                           event.payload.size()),
                          headers, &outcome);
      if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++pending_;
        ++in_flight_;
        return code;
      }
      if (code != RD_KAFKA_RESP_ERR__QUEUE_FULL) return code;
      librdkafka().rd_kafka_poll(producer_.get(), kPollMs);
    }
  }

  // Serves delivery reports until every record handed over has one (each comes within
  // message.timeout.ms).
  void settle() {
    while (pending_ > 0) librdkafka().rd_kafka_poll(producer_.get(), kPollMs);
  }

  void advance(Position to, std::size_t confirmed) {
    store_.write_sql([&](Sql& sql) { CheckpointStore::save(sql, name_, to); });
    std::lock_guard lock(mu_);
    checkpoint_ = to;
    published_ += confirmed;
  }

  // Records and throws the failure of `event`; a producer in a fatal state is replaced.
  [[noreturn]] void fail(const Handed& event, rd_kafka_resp_err_t code) {
    std::string message = "factum: kafka: relay '" + printable(options_.name) +
                          "': the event at position " + std::to_string(event.position) + " (id " +
                          event.id.to_string() + ", stream " + printable(event.stream) +
                          ") was not delivered to topic '" + printable(options_.topic) +
                          "': " + librdkafka().rd_kafka_err2str(code);
    std::array<char, 512> fatal{};
    if (librdkafka().rd_kafka_fatal_error(producer_.get(), fatal.data(), fatal.size()) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      message +=
          std::string("; the producer failed for good (") + fatal.data() + ") and was replaced";
      producer_ = make_producer();
    }
    record_error(message);
    throw DeliveryError(options_.topic, event.position, static_cast<int>(code), message);
  }

  void record_error(const std::string& message) {
    std::lock_guard lock(mu_);
    last_error_ = message;
  }

  // --- transactional publishing (options_.transactional_id set) ---

  bool transactional() const { return !options_.transactional_id.empty(); }

  void init_transactions() {
    const detail::TxnResult r = detail::init_transactions(*producer_, options_.transaction_timeout);
    if (r.ok()) return;
    throw KafkaError("producer of relay '" + printable(options_.name) + "'", r.code,
                     "factum: kafka: relay '" + printable(options_.name) +
                         "': cannot initialise transactions with transactional.id '" +
                         printable(options_.transactional_id) + "': " + printable(r.message));
  }

  // One batch in one transaction: begin, hand over, every report in, commit, then the
  // checkpoint past the whole batch. Nothing overlaps.
  std::size_t publish_transaction() {
    throw_if_unusable();
    finish_abort();
    const Position from = checkpoint() + 1;
    if (!has_events_from(from)) return 0;
    expect(detail::begin_transaction(*producer_), "begin a transaction");
    const auto batch = std::make_unique<Batch>();
    try {
      fill(*batch, from);
      settle();
    } catch (...) {
      settle();
      static_cast<void>(detail::abort_transaction(*producer_, options_.transaction_timeout));
      throw;
    }
    if (batch->records.empty()) {  // not expected: the log only grows
      abort_transaction();
      return 0;
    }
    if (!confirmed_whole(*batch)) {
      abort_transaction();
      const auto first =
          std::find_if(batch->records.begin(), batch->records.end(), [](const Handed& h) {
            return !h.outcome.done || h.outcome.error != RD_KAFKA_RESP_ERR_NO_ERROR;
          });
      fail(*first, first->outcome.error);
    }
    commit_transaction(*batch);
    advance(batch->records.back().position, batch->records.size());
    record_error("");
    return batch->records.size();
  }

  // Whether an event of the relayed log or category lies at `from` or after (one short read).
  bool has_events_from(Position from) const {
    auto first = [](const EventView&) { return false; };
    return (options_.category.empty() ? store_.visit_all(from, first)
                                      : store_.visit_category(options_.category, from, first)) > 0;
  }

  std::size_t publish_transactions(std::stop_token stop) {
    std::size_t published = 0;
    do {
      const std::size_t n = publish_transaction();
      if (n == 0) break;
      published += n;
    } while (!stop.stop_requested());
    return published;
  }

  // Commits; an abortable failure aborts and throws DeliveryError for the batch's first event.
  void commit_transaction(const Batch& batch) {
    const detail::TxnResult r =
        detail::commit_transaction(*producer_, options_.transaction_timeout);
    if (r.ok()) return;
    if (r.kind == detail::TxnResult::Kind::kFatal) give_up("commit the transaction", r);
    abort_transaction();  // abortable, or still retriable after transaction_timeout
    const Handed& first = batch.records.front();
    std::string message = "factum: kafka: relay '" + printable(options_.name) +
                          "': the transaction of the events at positions " +
                          std::to_string(first.position) + ".." +
                          std::to_string(batch.records.back().position) +
                          " was aborted, nothing of it published to topic '" +
                          printable(options_.topic) + "': " + printable(r.message);
    record_error(message);
    throw DeliveryError(options_.topic, first.position, r.code, message);
  }

  // Aborts; a retriable failure (the coordinator out of reach) leaves the abort to the next
  // batch (finish_abort), a fatal one makes the relay unusable.
  void abort_transaction() {
    const detail::TxnResult r = detail::abort_transaction(*producer_, options_.transaction_timeout);
    abort_pending_ = !r.ok();
    if (r.kind == detail::TxnResult::Kind::kFatal) give_up("abort the transaction", r);
  }

  // Aborts the transaction a previous batch could not; throws DeliveryError while that fails.
  void finish_abort() {
    if (!abort_pending_) return;
    abort_transaction();
    if (!abort_pending_) return;
    const Position next = checkpoint() + 1;
    std::string message = "factum: kafka: relay '" + printable(options_.name) +
                          "': the previous transaction is not aborted yet, so the events from "
                          "position " +
                          std::to_string(next) + " on wait";
    record_error(message);
    throw DeliveryError(options_.topic, next, 0, message);
  }

  // Anything but success makes the relay unusable.
  void expect(const detail::TxnResult& r, const std::string& what) {
    if (!r.ok()) give_up(what, r);
  }

  [[noreturn]] void give_up(const std::string& what, const detail::TxnResult& r) {
    std::string message = "factum: kafka: relay '" + printable(options_.name) + "': cannot " +
                          what + " (transactional.id '" + printable(options_.transactional_id) +
                          "'): " + printable(r.message) +
                          "; the relay is unusable, create a new one";
    unusable_code_ = r.code;
    unusable_ = message;
    record_error(message);
    throw KafkaError("producer of relay '" + printable(options_.name) + "'", r.code, message);
  }

  void throw_if_unusable() const {
    if (unusable_.empty()) return;
    throw KafkaError("producer of relay '" + printable(options_.name) + "'", unusable_code_,
                     unusable_);
  }

  EventStore& store_;
  const RelayOptions options_;
  const std::string name_;  // the checkpoint's name
  detail::Client producer_;
  std::size_t pending_ = 0;  // records without a delivery report (publishing thread only)
  std::atomic<std::uint64_t> in_flight_{0};
  mutable std::mutex mu_;
  Position checkpoint_ = 0;      // guarded by mu_
  std::uint64_t published_ = 0;  // guarded by mu_
  std::string last_error_;       // guarded by mu_
  // Transactional only, publishing thread only: why the relay cannot publish any more ("" while
  // it can) and librdkafka's code for it; a transaction a failed abort left open.
  std::string unusable_;
  int unusable_code_ = 0;
  bool abort_pending_ = false;
};

Relay::Relay(EventStore& store, RelayOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {}

Relay::~Relay() = default;

std::size_t Relay::publish_once() { return impl_->publish_once(); }

void Relay::run(std::stop_token stop) { impl_->run(stop); }

std::size_t Relay::publish_available(std::stop_token stop) {
  return impl_->publish_available(stop);
}

RelayStatus Relay::status() const { return impl_->status(); }

}  // namespace factum::kafka
