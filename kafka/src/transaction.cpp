#include "transaction.hpp"

#include <algorithm>
#include <thread>

namespace factum::kafka::detail {
namespace {

constexpr std::chrono::milliseconds kRetryPause{50};

// Takes `error` (librdkafka's, possibly null) and destroys it.
TxnResult result_of(rd_kafka_error_t* error) {
  TxnResult out;
  if (error == nullptr) return out;
  out.code = static_cast<int>(librdkafka().rd_kafka_error_code(error));
  out.message = librdkafka().rd_kafka_error_string(error);
  if (librdkafka().rd_kafka_error_is_fatal(error)) {
    out.kind = TxnResult::Kind::kFatal;
  } else if (librdkafka().rd_kafka_error_txn_requires_abort(error)) {
    out.kind = TxnResult::Kind::kAbortable;
  } else if (librdkafka().rd_kafka_error_is_retriable(error)) {
    out.kind = TxnResult::Kind::kRetriable;
  } else {
    out.kind = TxnResult::Kind::kFatal;  // a state error: the producer cannot go on safely
  }
  librdkafka().rd_kafka_error_destroy(error);
  return out;
}

int milliseconds(std::chrono::milliseconds d) { return static_cast<int>(d.count()); }

}  // namespace

TxnResult init_transactions(rd_kafka_t& producer, std::chrono::milliseconds timeout) {
  return result_of(librdkafka().rd_kafka_init_transactions(&producer, milliseconds(timeout)));
}

TxnResult begin_transaction(rd_kafka_t& producer) {
  return result_of(librdkafka().rd_kafka_begin_transaction(&producer));
}

TxnResult commit_transaction(rd_kafka_t& producer, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    TxnResult result = result_of(librdkafka().rd_kafka_commit_transaction(
        &producer, milliseconds(std::max(left, std::chrono::milliseconds(1)))));
    if (result.kind != TxnResult::Kind::kRetriable || Clock::now() >= deadline) return result;
    std::this_thread::sleep_for(kRetryPause);
  }
}

TxnResult abort_transaction(rd_kafka_t& producer, std::chrono::milliseconds timeout) {
  return result_of(librdkafka().rd_kafka_abort_transaction(&producer, milliseconds(timeout)));
}

}  // namespace factum::kafka::detail
