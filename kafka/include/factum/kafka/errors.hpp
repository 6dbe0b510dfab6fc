// factum/kafka/errors.hpp — the errors of the Kafka bridge, in factum's one family.
//
// KafkaError (a factum::Error) is what librdkafka reported, naming what it is about: the topic,
// the configuration property or the client. DeliveryError, a KafkaError, says that the broker
// did not confirm an event the relay published, and names the event's position.
// Configuration the bridge refuses before talking to Kafka is factum::InvalidArgument; the
// store's own failures stay factum::StorageError.
//
// Thread-safety: exception objects are immutable after construction.
#pragma once

#include <string>

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/event.hpp"

namespace factum::kafka {

class KafkaError : public Error {
 public:
  // `subject` is what the error is about (a topic, a property, "producer"); `code` is
  // librdkafka's rd_kafka_resp_err_t (0 when there is none).
  KafkaError(std::string subject, int code, const std::string& message);
  const std::string& subject() const noexcept { return subject_; }
  int code() const noexcept { return code_; }

 private:
  std::string subject_;
  int code_;
};

// The broker did not confirm the event at `position()` (the first unconfirmed event of a
// batch) on topic `subject()`. The relay's checkpoint stays before it.
class DeliveryError : public KafkaError {
 public:
  DeliveryError(std::string topic, Position position, int code, const std::string& message);
  Position position() const noexcept { return position_; }

 private:
  Position position_;
};

}  // namespace factum::kafka
