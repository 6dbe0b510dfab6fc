#include "factum/kafka/relay.hpp"

#include "factum/kafka/librdkafka.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "client.hpp"
#include "factum/eventstore/text.hpp"
#include "factum/projections/checkpoint_store.hpp"
#include "headers.hpp"
#include "relay_config.hpp"
#include "relay_flight.hpp"
#include "transaction.hpp"

namespace factum::kafka {
namespace {

using detail::Batch;
using detail::Flight;
using detail::Handed;
using detail::Withdrawal;

constexpr const char* kCheckpointPrefix = "kafka-relay:";
constexpr int kPollMs = 100;
constexpr int kCloseFlushMs = 5000;
// After a stop request, how long the records in flight may still be confirmed before they are
// withdrawn (to be published again by the next run).
constexpr auto kStopGrace = std::chrono::seconds(1);

}  // namespace

class Relay::Impl {
 public:
  Impl(EventStore& store, RelayOptions options)
      : store_(store),
        options_(std::move(options)),
        name_(kCheckpointPrefix + options_.name),
        max_record_(detail::max_record_bytes(store_.options())) {
    detail::check_relay_options(options_, store_.options());
    store_.write_sql([&](Sql& sql) {
      CheckpointStore::create_table(sql);
      checkpoint_ = CheckpointStore::load(sql, name_);
    });
    producer_ = make_producer();
    if (transactional()) init_transactions();
  }

  ~Impl() {
    // Every publish settles the records it hands over, so this finds none in flight.
    if (producer_) static_cast<void>(librdkafka().rd_kafka_flush(producer_.get(), kCloseFlushMs));
  }

  std::size_t publish_once() {
    if (transactional()) return publish_transaction({});
    return publish({}, true);
  }

  std::size_t publish_available(const std::stop_token& stop) {
    if (transactional()) return publish_transactions(stop);
    return publish(stop, false);
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
    auto* outcome = static_cast<detail::Outcome*>(message->_private);
    if (self == nullptr || outcome == nullptr) return;
    outcome->done = true;
    outcome->error = message->err;
    if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR && !detail::withdrawn(message->err)) {
      self->failed_ = true;
    }
    if (outcome->batch_pending != nullptr) --*outcome->batch_pending;
    --self->pending_;
    --self->in_flight_;
  }

  detail::Client make_producer() {
    detail::Conf conf = detail::relay_producer_conf(options_, max_record_);
    librdkafka().rd_kafka_conf_set_dr_msg_cb(conf.get(), &Impl::on_delivery);
    librdkafka().rd_kafka_conf_set_opaque(conf.get(), this);
    return detail::make_client(RD_KAFKA_PRODUCER, std::move(conf),
                               "producer of relay '" + printable(options_.name) + "'");
  }

  // The producer, made anew when the one before lost a record (see end_publish).
  rd_kafka_t& producer() {
    if (!producer_) producer_ = make_producer();
    return *producer_;
  }

  void poll(int ms) {
    if (producer_) librdkafka().rd_kafka_poll(producer_.get(), ms);
  }

  Position checkpoint() const {
    std::lock_guard lock(mu_);
    return checkpoint_;
  }

  // The relay's one reading of the log: the events from `from` on (of the category, or all), in
  // position order, each handed to `visit` until it returns false. Returns how many it saw.
  template <class F>
  std::uint64_t read_log(Position from, F&& visit) const {
    if (options_.category.empty()) return store_.visit_all(from, std::forward<F>(visit));
    return store_.visit_category(options_.category, from, std::forward<F>(visit));
  }

  // --- publishing without transactions ---

  // Batches after the checkpoint (one of batch_size with `one_batch`), handed to the producer
  // while fewer than max_in_flight records after the checkpoint are, so that the producer never
  // waits for the relay; the batches whose reports are all in are confirmed from the oldest on,
  // together, with one checkpoint write.
  std::size_t publish(const std::stop_token& stop, bool one_batch) {
    Flight flight;
    const EndOfPublish end{*this};  // declared after the batches: runs before they go
    Position from = checkpoint() + 1;
    bool exhausted = false;
    std::size_t confirmed = 0;
    for (;;) {
      while (!exhausted && may_hand_over(flight, stop, one_batch)) {
        Batch& batch = *flight.emplace_back(std::make_unique<Batch>());
        fill(flight, batch, from, one_batch ? options_.batch_size : room(flight), stop);
        if (batch.records.empty()) {
          flight.pop_back();
          exhausted = true;
          break;
        }
        from = batch.records.back().position + 1;
        exhausted = batch.refused || one_batch;
      }
      if (flight.empty()) break;
      withdraw_when_due(flight, stop);
      poll(flight.front()->pending > 0 ? kPollMs : 0);
      confirmed += confirm_settled(flight, stop);
    }
    record_error("");
    return confirmed;
  }

  // Nothing more is handed over once a record failed, the oldest one in flight is past its
  // deadline, the records were withdrawn, a stop was requested, or max_in_flight records are.
  bool may_hand_over(const Flight& flight, const std::stop_token& stop, bool one_batch) const {
    return !stop.stop_requested() && !failed_ && withdrawn_ == Withdrawal::none &&
           (one_batch || room(flight) > 0) && !expired(flight);
  }

  // How many records the next batch may hold: batch_size, and no more than keeps the records
  // handed over after the checkpoint within max_in_flight.
  std::size_t room(const Flight& flight) const {
    const std::size_t in_flight = detail::records_in(flight);
    return std::min(options_.batch_size,
                    options_.max_in_flight > in_flight ? options_.max_in_flight - in_flight : 0);
  }

  // Reads up to `limit` events from position `from` on and hands each to the producer as it
  // is read (from the database's row memory: the producer copies key, value and headers).
  // Stops after a record the producer refuses (its outcome says why), and before a record that
  // found no room in the producer's queue before a failure, the deadline or a stop (it is not
  // handed over). Does not wait for reports.
  void fill(const Flight& flight, Batch& batch, Position from, std::size_t limit,
            const std::stop_token& stop) {
    batch.handed_at = detail::Clock::now();
    read_log(from, [&](const EventView& event) {
      Handed& handed = batch.records.emplace_back(event);
      handed.outcome.batch_pending = &batch.pending;
      const rd_kafka_resp_err_t code = produce(flight, event, handed.outcome, stop);
      if (code == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        batch.records.pop_back();
        return false;
      }
      if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
        handed.outcome = {true, code, nullptr};
        batch.refused = true;
        return false;
      }
      ++batch.pending;
      return batch.records.size() < limit;
    });
  }

  // One record. A full producer queue is waited out (reports served, then tried again), never
  // dropped, until a record fails, the deadline passes or a stop is requested: then
  // RD_KAFKA_RESP_ERR__QUEUE_FULL, and the record is not handed over. Returns the producer's
  // refusal otherwise.
  rd_kafka_resp_err_t produce(const Flight& flight, const EventView& event,
                              detail::Outcome& outcome, const std::stop_token& stop) {
    for (;;) {
      detail::Headers headers = detail::event_headers(event);
      const rd_kafka_resp_err_t code =
          detail::produce(producer(), options_.topic, event.stream_id,
                          std::string_view(reinterpret_cast<const char*>(event.payload.data()),
                                           event.payload.size()),
                          headers, &outcome);
      if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++pending_;
        ++in_flight_;
        return code;
      }
      if (code != RD_KAFKA_RESP_ERR__QUEUE_FULL) return code;
      if (stop.stop_requested() || failed_ || expired(flight)) return code;
      poll(kPollMs);
    }
  }

  // Whether the oldest batch still awaiting a report was handed over delivery_timeout ago.
  bool expired(const Flight& flight) const {
    return detail::waited_since(flight) > options_.delivery_timeout;
  }

  // What is due now: withdrawing every record not yet confirmed because one failed by itself
  // (so that nothing queued behind it reaches the topic first), because the oldest waited
  // delivery_timeout, or because a stop was requested kStopGrace ago; or nothing.
  Withdrawal withdrawal_due(const Flight& flight, const std::stop_token& stop) {
    if (withdrawn_ != Withdrawal::none || pending_ == 0) return Withdrawal::none;
    if (failed_) return Withdrawal::failure;
    if (expired(flight)) return Withdrawal::deadline;
    if (!stop.stop_requested()) return Withdrawal::none;
    if (!stop_seen_) stop_seen_ = detail::Clock::now();
    return detail::Clock::now() - *stop_seen_ >= kStopGrace ? Withdrawal::stop : Withdrawal::none;
  }

  // Withdraws, when that is due, every record of the producer's queues and of its requests in
  // flight (rd_kafka_purge): their reports (RD_KAFKA_RESP_ERR__PURGE_QUEUE, _INFLIGHT) come at
  // the next polls, and the producer, which may have lost records, is not used again.
  void withdraw_when_due(const Flight& flight, const std::stop_token& stop) {
    const Withdrawal due = withdrawal_due(flight, stop);
    if (due == Withdrawal::none) return;
    withdrawn_ = due;
    static_cast<void>(librdkafka().rd_kafka_purge(
        producer_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT));
  }

  // Ends a publish call however it ends: records still in flight (an exception left publish) are
  // withdrawn and their reports served before the batches their outcomes live in are freed, and
  // a producer that lost a record (failed, withdrawn, or in a fatal state) is replaced by a new
  // one at the next call: a producer session never sends a record after one of its records was
  // lost, which keeps each partition's records in log order (docs/kafka.md).
  struct EndOfPublish {
    Impl& impl;
    ~EndOfPublish() { impl.end_publish(); }
  };

  void end_publish() noexcept {
    if (pending_ > 0 && withdrawn_ == Withdrawal::none) {
      withdrawn_ = Withdrawal::stop;
      static_cast<void>(librdkafka().rd_kafka_purge(
          producer_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT));
    }
    while (pending_ > 0) poll(kPollMs);  // after a purge every report comes at once
    if (withdrawn_ != Withdrawal::none || failed_ || fatal()) producer_.reset();
    reset_withdrawal();
  }

  void reset_withdrawal() noexcept {
    withdrawn_ = Withdrawal::none;
    failed_ = false;
    stop_seen_.reset();
  }

  bool fatal() const {
    std::array<char, 256> reason{};
    return producer_ &&
           librdkafka().rd_kafka_fatal_error(producer_.get(), reason.data(), reason.size()) !=
               RD_KAFKA_RESP_ERR_NO_ERROR;
  }

  // Confirms the batches at the front of `flight` whose reports are all in, in one checkpoint
  // write, and removes them. When the front one is settled and not confirmed whole, first waits
  // for every report still to come (of the batches after it too: they are withdrawn, since a
  // record failed), then confirm_broken.
  std::size_t confirm_settled(Flight& flight, const std::stop_token& stop) {
    std::size_t count = 0;
    Position to = 0;
    while (!flight.empty() && flight.front()->pending == 0 &&
           detail::confirmed_whole(*flight.front())) {
      to = flight.front()->records.back().position;
      count += flight.front()->records.size();
      flight.pop_front();
    }
    if (count > 0) advance(to, count);
    if (!flight.empty() && flight.front()->pending == 0) {
      settle(flight, stop);
      return count + confirm_broken(flight);
    }
    return count;
  }

  // Serves reports until every record handed over has one, withdrawing the others when due.
  void settle(const Flight& flight, const std::stop_token& stop) {
    while (pending_ > 0) {
      withdraw_when_due(flight, stop);
      poll(kPollMs);
    }
  }

  // The front batch is settled and not confirmed whole: moves the checkpoint over its confirmed
  // prefix, then throws DeliveryError for the first event after it; when the records were
  // withdrawn for a stop, drops every batch (the next run publishes them) and returns instead.
  std::size_t confirm_broken(Flight& flight) {
    const Batch& batch = *flight.front();
    const auto first =
        std::find_if_not(batch.records.begin(), batch.records.end(), detail::confirmed);
    const auto count = static_cast<std::size_t>(first - batch.records.begin());
    if (count > 0) advance(std::prev(first)->position, count);
    if (withdrawn_ != Withdrawal::stop) fail(flight, *first);
    flight.clear();
    return count;
  }

  void advance(Position to, std::size_t confirmed) {
    store_.write_sql([&](Sql& sql) { CheckpointStore::save(sql, name_, to); });
    std::lock_guard lock(mu_);
    checkpoint_ = to;
    published_ += confirmed;
  }

  // Records and throws the failure of `event`.
  [[noreturn]] void fail(const Flight& flight, const Handed& event) {
    const detail::Failure why = detail::failure_of(flight, event, withdrawn_, failure_context());
    const std::string message = detail::relay_prefix(options_) + ": the event at position " +
                                std::to_string(event.position) + " (id " + event.id.to_string() +
                                ", stream " + printable(event.stream) +
                                ") was not delivered to topic '" + printable(options_.topic) +
                                "': " + why.text;
    record_error(message);
    throw DeliveryError(options_.topic, event.position, static_cast<int>(why.code), message);
  }

  detail::FailureContext failure_context() const {
    detail::FailureContext out;
    out.topic = options_.topic;
    out.delivery_timeout = options_.delivery_timeout;
    out.max_record = max_record_;
    std::array<char, 512> reason{};
    if (producer_ &&
        librdkafka().rd_kafka_fatal_error(producer_.get(), reason.data(), reason.size()) !=
            RD_KAFKA_RESP_ERR_NO_ERROR) {
      out.fatal_reason = reason.data();
    }
    return out;
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
                     detail::relay_prefix(options_) +
                         ": cannot initialise transactions with transactional.id '" +
                         printable(options_.transactional_id) + "': " + printable(r.message));
  }

  // One batch in one transaction: begin, hand over, every report in, commit, then the
  // checkpoint past the whole batch. Nothing overlaps. A failed record, the deadline or a stop
  // aborts the transaction (which withdraws the records not yet confirmed).
  std::size_t publish_transaction(const std::stop_token& stop) {
    throw_if_unusable();
    finish_abort();
    const Position from = checkpoint() + 1;
    if (!has_events_from(from)) return 0;
    expect(detail::begin_transaction(*producer_), "begin a transaction");
    const ResetWithdrawal reset{*this};
    Flight flight;
    Batch& batch = *flight.emplace_back(std::make_unique<Batch>());
    try {
      fill(flight, batch, from, options_.batch_size, stop);
      await_transaction_reports(flight, stop);
    } catch (...) {
      static_cast<void>(librdkafka().rd_kafka_purge(
          producer_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT));
      while (pending_ > 0) poll(kPollMs);
      static_cast<void>(detail::abort_transaction(*producer_, options_.transaction_timeout));
      throw;
    }
    if (batch.records.empty()) {  // not expected: the log only grows
      abort_transaction(options_.transaction_timeout);
      return 0;
    }
    if (!detail::confirmed_whole(batch)) {
      if (withdrawn_ == Withdrawal::none) abort_transaction(options_.transaction_timeout);
      if (withdrawn_ == Withdrawal::stop) return 0;
      fail(flight,
           *std::find_if_not(batch.records.begin(), batch.records.end(), detail::confirmed));
    }
    commit_transaction(batch);
    advance(batch.records.back().position, batch.records.size());
    record_error("");
    return batch.records.size();
  }

  // The transaction's flags of failure and withdrawal are its own.
  struct ResetWithdrawal {
    Impl& impl;
    ~ResetWithdrawal() { impl.reset_withdrawal(); }
  };

  // Serves reports until every record of the transaction has one. When a withdrawal is due (a
  // record failed, the deadline passed, a stop waited kStopGrace), aborts the transaction, which
  // withdraws the others; after a stop the abort waits kStopGrace at most (a failed abort is
  // finished by the next transaction).
  void await_transaction_reports(const Flight& flight, const std::stop_token& stop) {
    while (pending_ > 0) {
      const Withdrawal due = withdrawal_due(flight, stop);
      if (due != Withdrawal::none) {
        withdrawn_ = due;
        static_cast<void>(librdkafka().rd_kafka_purge(
            producer_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT));
        abort_transaction(due == Withdrawal::stop
                              ? std::chrono::duration_cast<std::chrono::milliseconds>(kStopGrace)
                              : options_.transaction_timeout);
      }
      poll(kPollMs);
    }
  }

  // Whether an event of the relayed log or category lies at `from` or after (one short read).
  bool has_events_from(Position from) const {
    return read_log(from, [](const EventView&) { return false; }) > 0;
  }

  std::size_t publish_transactions(const std::stop_token& stop) {
    std::size_t published = 0;
    do {
      const std::size_t n = publish_transaction(stop);
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
    abort_transaction(options_.transaction_timeout);  // abortable, or retriable still
    const Handed& first = batch.records.front();
    std::string message =
        detail::relay_prefix(options_) + ": the transaction of the events at positions " +
        std::to_string(first.position) + ".." + std::to_string(batch.records.back().position) +
        " was aborted, nothing of it published to topic '" + printable(options_.topic) +
        "': " + printable(r.message);
    record_error(message);
    throw DeliveryError(options_.topic, first.position, r.code, message);
  }

  // Aborts, waiting up to `timeout`; a retriable failure (the coordinator out of reach) leaves
  // the abort to the next batch (finish_abort), a fatal one makes the relay unusable.
  void abort_transaction(std::chrono::milliseconds timeout) {
    const detail::TxnResult r = detail::abort_transaction(*producer_, timeout);
    abort_pending_ = !r.ok();
    if (r.kind == detail::TxnResult::Kind::kFatal) give_up("abort the transaction", r);
  }

  // Aborts the transaction a previous batch could not; throws DeliveryError while that fails.
  void finish_abort() {
    if (!abort_pending_) return;
    abort_transaction(options_.transaction_timeout);
    if (!abort_pending_) return;
    const Position next = checkpoint() + 1;
    std::string message = detail::relay_prefix(options_) +
                          ": the previous transaction is not aborted yet, so the events from "
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
    std::string message = detail::relay_prefix(options_) + ": cannot " + what +
                          " (transactional.id '" + printable(options_.transactional_id) +
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
  const std::string name_;        // the checkpoint's name
  const std::size_t max_record_;  // the largest record an event of the store can make
  detail::Client producer_;
  std::size_t pending_ = 0;  // records without a delivery report (publishing thread only)
  std::atomic<std::uint64_t> in_flight_{0};
  // Publishing thread only, for the publish call under way: a record failed by itself (not
  // withdrawn); why the records not yet confirmed were withdrawn; when a stop was first seen.
  bool failed_ = false;
  Withdrawal withdrawn_ = Withdrawal::none;
  std::optional<detail::Clock::time_point> stop_seen_;
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
