// factum/kafka/request_reply.hpp — request/reply over Kafka: send a command record with a fresh
// correlation id and the topic to answer on, then wait (with a timeout) for the record on that
// topic that carries the same correlation id.
//
//   factum::kafka::RequesterOptions options;
//   options.reply_topic = "billing-replies";
//   options.kafka = {{"bootstrap.servers", "broker-1:9092"}};
//   factum::kafka::Requester requester(options);
//   std::optional<factum::kafka::Reply> reply = requester.request(
//       {.topic = "billing-commands", .key = "invoice-17", .type = "billing.Charge",
//        .payload = R"({"cents":500})"},
//       std::chrono::seconds(5));
//
// The command record: key and value as given, headers factum-correlation-id (a new UUID),
// factum-reply-to (options.reply_topic) and factum-type (when given). The answering service
// copies factum-correlation-id onto its reply; a reply written as an event whose metadata carries
// that correlation id and published by a Relay to the reply topic has it already, so "the reply
// event" reaches the requester unchanged. Records on the reply topic with another correlation id
// (replies to other requesters, or late replies to requests that timed out) are skipped.
//
// Delivery: the command is produced by an idempotent producer and request() waits for its
// delivery report (within the request's timeout) before it waits for the reply. The reply topic
// is read from its end as it was just before the command was sent, so a reply cannot be missed
// however fast it comes. No wait of request() outlasts its timeout.
//
// Thread-safety: one thread calls request() at a time.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "factum/eventstore/event_id.hpp"
#include "factum/kafka/errors.hpp"

namespace factum::kafka {

inline constexpr const char* kReplyToHeader = "factum-reply-to";

struct RequesterOptions {
  // The topic replies come on. Required.
  std::string reply_topic;
  // librdkafka properties for the producer and the consumer (bootstrap.servers at least).
  // Default: none.
  std::map<std::string, std::string> kafka;
};

// A command to send.
struct Request {
  std::string topic;    // where the command goes (required)
  std::string key;      // the record's key (a stream id, say); may be empty
  std::string type;     // the factum-type header; "" leaves it out
  std::string payload;  // the record's value
};

// The record that answered.
struct Reply {
  EventId correlation_id;
  std::string key;
  std::string value;
  std::map<std::string, std::string> headers;  // every header, text as sent
};

class Requester {
 public:
  // Creates the producer and the consumer of the reply topic, and reads the topic's partitions
  // (10 s at most). Throws InvalidArgument (no reply_topic, a bad property), KafkaError.
  explicit Requester(RequesterOptions options);
  ~Requester();
  Requester(const Requester&) = delete;
  Requester& operator=(const Requester&) = delete;

  // Sends `request` with a new correlation id and waits up to `timeout` (measured from the
  // call) for the reply that carries it. Reading the reply topic's ends and waiting for the
  // command's delivery report count against `timeout`: the call never waits longer. Returns
  // nullopt when no reply came in time, which includes a command not confirmed in time (it is
  // then withdrawn; one already sent may still reach its topic, so the command may or may not
  // have been seen). Throws InvalidArgument (no topic), DeliveryError (the delivery report said
  // the command failed: code() says why; position() is 0), KafkaError (the reply topic's ends
  // cannot be read in time).
  std::optional<Reply> request(const Request& request, std::chrono::milliseconds timeout);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace factum::kafka
