// factum::kafka::Requester against librdkafka's mock cluster: a command goes out with a fresh
// correlation id and its reply topic; the reply carrying that id comes back (others are
// skipped); a reply event relayed from a store answers; no reply is nullopt after the timeout.
#include <doctest/doctest.h>
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <thread>

#include "factum/kafka/headers.hpp"
#include "factum/kafka/relay.hpp"
#include "factum/kafka/request_reply.hpp"
#include "mock_cluster.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::kafka::Request;
using factum::kafka::Requester;
using factum::kafka::RequesterOptions;
using factum::test::consume_all;
using factum::test::ConsumedRecord;
using factum::test::MockCluster;
using factum::test::produce_all;
using factum::test::RecordToProduce;
using factum::test::TempStore;

namespace {

constexpr const char* kCommands = "commands";
constexpr const char* kReplies = "replies";

RequesterOptions requester_options(const MockCluster& cluster) {
  RequesterOptions options;
  options.reply_topic = kReplies;
  options.kafka = {{"bootstrap.servers", cluster.bootstrap_servers()}};
  return options;
}

Request charge() {
  Request r;
  r.topic = kCommands;
  r.key = "invoice-17";
  r.type = "billing.Charge";
  r.payload = R"({"cents":500})";
  return r;
}

// The command the requester sent (waits up to 20 s for it); called on responder threads, so it
// asserts nothing: an empty record (no headers) when none came.
ConsumedRecord the_command(const MockCluster& cluster) {
  const auto records = consume_all(cluster.bootstrap_servers(), kCommands, 1, 1);
  return records.size() == 1 ? records.front() : ConsumedRecord{};
}

}  // namespace

TEST_CASE("a request is answered by the reply that carries its correlation id") {
  MockCluster cluster;
  cluster.create_topic(kCommands, 1);
  cluster.create_topic(kReplies, 2);
  Requester requester(requester_options(cluster));
  ConsumedRecord command;
  std::jthread responder([&] {
    command = the_command(cluster);
    if (!command.headers.contains(kafka::kCorrelationIdHeader)) return;
    const std::string id = command.headers.at(kafka::kCorrelationIdHeader);
    produce_all(
        cluster.bootstrap_servers(), kReplies,
        {{"other", "not yours", {{kafka::kCorrelationIdHeader, EventId::generate().to_string()}}},
         {"invoice-17", "charged", {{kafka::kCorrelationIdHeader, id}}}});
  });
  const auto reply = requester.request(charge(), std::chrono::seconds(30));
  responder.join();
  REQUIRE(reply.has_value());
  CHECK(reply->value == "charged");
  CHECK(reply->key == "invoice-17");
  REQUIRE(command.headers.contains(kafka::kCorrelationIdHeader));
  CHECK(reply->correlation_id.to_string() == command.headers.at(kafka::kCorrelationIdHeader));
  CHECK(command.key == "invoice-17");
  CHECK(command.value == R"({"cents":500})");
  CHECK(command.headers.at(kafka::kReplyToHeader) == kReplies);
  CHECK(command.headers.at(kafka::kTypeHeader) == "billing.Charge");
}

TEST_CASE("a reply event appended with the request's correlation id and relayed answers it") {
  MockCluster cluster;
  cluster.create_topic(kCommands, 1);
  cluster.create_topic(kReplies, 1);
  TempStore service;  // the answering service's store, relayed to the reply topic
  Requester requester(requester_options(cluster));
  std::jthread responder([&] {
    const ConsumedRecord command = the_command(cluster);
    if (!command.headers.contains(kafka::kCorrelationIdHeader)) return;
    EventData charged = test::make_event("billing.Charged", "charged");
    charged.metadata.correlation_id =
        EventId::parse(command.headers.at(kafka::kCorrelationIdHeader));
    service.store.append(command.key, ExpectedVersion::any(), charged);
    kafka::RelayOptions relay;
    relay.name = "replies";
    relay.topic = command.headers.at(kafka::kReplyToHeader);
    relay.kafka = {{"bootstrap.servers", cluster.bootstrap_servers()}};
    kafka::Relay(service.store, relay).publish_once();
  });
  const auto reply = requester.request(charge(), std::chrono::seconds(30));
  responder.join();
  REQUIRE(reply.has_value());
  CHECK(reply->value == "charged");
  CHECK(reply->headers.at(kafka::kTypeHeader) == "billing.Charged");
}

TEST_CASE("a request without a reply gives nullopt after its timeout") {
  MockCluster cluster;
  cluster.create_topic(kCommands, 1);
  cluster.create_topic(kReplies, 1);
  Requester requester(requester_options(cluster));
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(requester.request(charge(), std::chrono::milliseconds(700)).has_value());
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(700));
  CHECK(the_command(cluster).headers.count(kafka::kCorrelationIdHeader) == 1);
}

TEST_CASE("a requester needs a reply topic, and a request a topic") {
  MockCluster cluster;
  cluster.create_topic(kReplies, 1);
  RequesterOptions options = requester_options(cluster);
  options.reply_topic.clear();
  CHECK_THROWS_AS(Requester{options}, InvalidArgument);
  Requester requester(requester_options(cluster));
  Request r = charge();
  r.topic.clear();
  CHECK_THROWS_AS(requester.request(r, std::chrono::milliseconds(10)), InvalidArgument);
}

// The commands' partition has its leader down: the command is never confirmed. The request's
// timeout bounds the wait for the delivery report too (it waited message.timeout.ms, 300 s, and
// then threw DeliveryError).
TEST_CASE("a request whose command is not confirmed in time gives nullopt at its timeout") {
  MockCluster cluster(2);
  cluster.create_topic(kCommands, 1);
  cluster.create_topic(kReplies, 1);
  cluster.set_leader(kCommands, 0, 2);
  cluster.set_leader(kReplies, 0, 1);
  Requester requester(requester_options(cluster));
  cluster.set_down(2);
  CHECK_FALSE(requester.request(charge(), std::chrono::seconds(1)).has_value());
  cluster.set_up(2);
}
