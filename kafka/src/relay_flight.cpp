#include "relay_flight.hpp"

#include <algorithm>

#include "factum/eventstore/text.hpp"

namespace factum::kafka::detail {
namespace {

// "30 s", "1.5 s".
std::string seconds_text(std::chrono::milliseconds d) {
  const auto ms = d.count();
  std::string out = std::to_string(ms / 1000);
  if (ms % 1000 != 0) {
    std::string fraction = std::to_string(1000 + ms % 1000).substr(1);
    while (fraction.back() == '0') fraction.pop_back();
    out += "." + fraction;
  }
  return out + " s";
}

// librdkafka's words for `code`, with what to do where the relay knows it.
std::string describe(rd_kafka_resp_err_t code, const FailureContext& context) {
  const std::string text = librdkafka().rd_kafka_err2str(code);
  switch (code) {
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      return "the topic '" + printable(context.topic) +
             "' does not exist on the cluster, which does not create topics on demand: create "
             "it (" +
             text + ")";
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
      return "the broker refused the record as too large: raise the topic's max.message.bytes "
             "(and the brokers' message.max.bytes and replica.fetch.max.bytes) to " +
             std::to_string(context.max_record) +
             " bytes, the largest record this store's events can make (" + text + ")";
    case RD_KAFKA_RESP_ERR__FATAL:
      return "the producer failed for good: " +
             printable(context.fatal_reason.empty() ? text : context.fatal_reason);
    default:
      return printable(text);
  }
}

// The record of `flight` with the lowest position that failed by itself (not withdrawn),
// preferring one whose error is its own over the producer's fatal state; nullptr when none.
const Handed* first_failure(const Flight& flight) {
  const Handed* out = nullptr;
  for (const auto& batch : flight) {
    for (const Handed& h : batch->records) {
      if (!h.outcome.done || h.outcome.error == RD_KAFKA_RESP_ERR_NO_ERROR ||
          withdrawn(h.outcome.error)) {
        continue;
      }
      const bool own = h.outcome.error != RD_KAFKA_RESP_ERR__FATAL;
      const bool out_own = out != nullptr && out->outcome.error != RD_KAFKA_RESP_ERR__FATAL;
      if (out == nullptr || (own && !out_own) || (own == out_own && h.position < out->position)) {
        out = &h;
      }
    }
  }
  return out;
}

}  // namespace

bool withdrawn(rd_kafka_resp_err_t code) {
  return code == RD_KAFKA_RESP_ERR__PURGE_QUEUE || code == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
}

bool confirmed(const Handed& h) {
  return h.outcome.done && h.outcome.error == RD_KAFKA_RESP_ERR_NO_ERROR;
}

bool confirmed_whole(const Batch& batch) {
  return std::all_of(batch.records.begin(), batch.records.end(), confirmed);
}

std::size_t records_in(const Flight& flight) {
  std::size_t out = 0;
  for (const auto& batch : flight) out += batch->records.size();
  return out;
}

Clock::duration waited_since(const Flight& flight) {
  const auto oldest = std::find_if(flight.begin(), flight.end(),
                                   [](const std::unique_ptr<Batch>& b) { return b->pending > 0; });
  return oldest == flight.end() ? Clock::duration::zero() : Clock::now() - (*oldest)->handed_at;
}

Failure failure_of(const Flight& flight, const Handed& event, Withdrawal withdrawal,
                   const FailureContext& context) {
  const rd_kafka_resp_err_t own = event.outcome.error;
  const bool by_relay = withdrawn(own) || own == RD_KAFKA_RESP_ERR__FATAL;
  if (!by_relay || withdrawal == Withdrawal::none) return {own, describe(own, context)};
  if (withdrawal == Withdrawal::deadline) {
    return {RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
            "no broker confirmed it within " + seconds_text(context.delivery_timeout) +
                " (the delivery timeout); it and every record after it were withdrawn, to be "
                "published again in order"};
  }
  const Handed* cause = first_failure(flight);
  if (cause == nullptr || cause == &event) return {own, describe(own, context)};
  return {cause->outcome.error,
          describe(cause->outcome.error, context) + " (for the event at position " +
              std::to_string(cause->position) +
              "; every record not yet confirmed was withdrawn then, to be published again in "
              "order)"};
}

}  // namespace factum::kafka::detail
