// The relay's records in flight: what it keeps of each event it handed to the producer, the
// batches they came in, and how a record that was not confirmed is explained.
#pragma once

#include "factum/kafka/librdkafka.hpp"

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_view.hpp"

namespace factum::kafka::detail {

using Clock = std::chrono::steady_clock;

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
  std::size_t pending = 0;        // records handed over without a report yet
  bool refused = false;           // the producer refused a record: the batch ends with it
  Clock::time_point handed_at{};  // when the relay began to hand it over
};

// The batches handed over and not yet confirmed, oldest first.
using Flight = std::deque<std::unique_ptr<Batch>>;

// Why the records not yet confirmed were withdrawn from the producer (rd_kafka_purge, or the
// abort of a transaction): a record failed by itself, the oldest waited delivery_timeout, or a
// stop was requested.
enum class Withdrawal { none, failure, deadline, stop };

// Whether `code` is the report of a record withdrawn by rd_kafka_purge.
bool withdrawn(rd_kafka_resp_err_t code);
bool confirmed(const Handed& h);
bool confirmed_whole(const Batch& batch);

// How many records `flight` holds (confirmed or not: every record after the checkpoint).
std::size_t records_in(const Flight& flight);

// How long the oldest batch of `flight` that still awaits a report has been in flight (zero
// when none awaits one).
Clock::duration waited_since(const Flight& flight);

// What a failure message needs to know besides the records.
struct FailureContext {
  std::string topic;
  std::chrono::milliseconds delivery_timeout{0};
  std::size_t max_record = 0;  // the largest record an event of the store can make
  std::string fatal_reason;    // the producer's fatal error ("" when it has none)
};

// Why a record was not confirmed: librdkafka's code (RD_KAFKA_RESP_ERR__MSG_TIMED_OUT for the
// deadline) and the words for it.
struct Failure {
  rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
  std::string text;
};

// Why `event` (a record of `flight`, every report in) was not confirmed. A record the relay
// withdrew is explained by what made it withdraw them all: the deadline, or the record that
// failed first.
Failure failure_of(const Flight& flight, const Handed& event, Withdrawal withdrawal,
                   const FailureContext& context);

}  // namespace factum::kafka::detail
