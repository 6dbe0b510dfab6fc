// The transactional calls of a librdkafka producer (init, begin, commit, abort), each reduced to
// what the relay does next: go on, abort the transaction, try again, or give the producer up.
#pragma once

#include "factum/kafka/librdkafka.hpp"

#include <chrono>
#include <string>

namespace factum::kafka::detail {

struct TxnResult {
  enum class Kind {
    kOk,
    kRetriable,  // the call may be made again (a timeout, a coordinator not reachable yet)
    kAbortable,  // the transaction must be aborted; the producer stays usable
    kFatal,      // the producer is unusable (fenced by another one with its transactional.id)
  };
  Kind kind = Kind::kOk;
  int code = 0;         // rd_kafka_resp_err_t
  std::string message;  // librdkafka's description ("" when kOk)

  bool ok() const { return kind == Kind::kOk; }
};

TxnResult init_transactions(rd_kafka_t& producer, std::chrono::milliseconds timeout);
TxnResult begin_transaction(rd_kafka_t& producer);
// Flushes the records still queued, then commits. Retries a retriable failure until `timeout`
// has passed in all.
TxnResult commit_transaction(rd_kafka_t& producer, std::chrono::milliseconds timeout);
TxnResult abort_transaction(rd_kafka_t& producer, std::chrono::milliseconds timeout);

}  // namespace factum::kafka::detail
