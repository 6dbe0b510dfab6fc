// docs/examples/subscriptions_example.cpp — the complete program of docs/subscriptions.md: a
// catch-up subscription that resumes from its durable checkpoint, a filtered one, a consumer
// group of two members sharing a category, and one that follows a query of tags. It checks its own
// results and exits 1 on any mismatch (ctest runs it, label "docs").
#include <factum/eventstore/query.hpp>
#include <factum/eventstore/tags.hpp>
#include <factum/factum.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "MISMATCH: " << what << "\n";
    ++failures;
  }
}

factum::EventData event(const std::string& type, const std::string& payload) {
  factum::EventData e;
  e.type = type;
  e.payload = factum::to_bytes(payload);
  return e;
}

}  // namespace

int main() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("factum-subscriptions-example-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  auto store = factum::EventStore::open(dir / "shop.db");

  // Some history before anyone subscribes.
  for (int i = 1; i <= 5; ++i) {
    store.append("order-" + std::to_string(i), factum::ExpectedVersion::no_stream(),
                 event("shop.OrderPlaced", "order " + std::to_string(i)));
  }

  // 1. A catch-up subscription with a durable checkpoint: history first, then live events,
  //    each once, in position order. The checkpoint is saved after each batch.
  std::vector<factum::Position> seen;
  {
    factum::Subscription mailer(
        store, {.checkpoint = "mailer"},
        [&](const factum::RecordedEvent& e) { seen.push_back(e.position); });
    mailer.wait_for(5, 10s);  // history delivered
    store.append("order-1", factum::ExpectedVersion::exact(1), event("shop.OrderPaid", "paid"));
    mailer.wait_for(6, 10s);  // the live event too
  }                           // the destructor stops the subscription and joins its thread
  expect(seen == std::vector<factum::Position>{1, 2, 3, 4, 5, 6}, "history then live, once each");

  // While nobody listens, the log grows; a new subscription with the same checkpoint name
  // resumes after position 6.
  store.append("order-2", factum::ExpectedVersion::exact(1), event("shop.OrderPaid", "paid"));
  {
    std::vector<factum::Position> resumed;
    factum::Subscription mailer(
        store, {.checkpoint = "mailer"},
        [&](const factum::RecordedEvent& e) { resumed.push_back(e.position); });
    mailer.wait_for(7, 10s);
    mailer.stop();
    expect(resumed == std::vector<factum::Position>{7}, "resumes from the checkpoint");
  }

  // 2. A filtered subscription: one category, one event type, from the start.
  std::vector<std::string> paid;
  {
    factum::Subscription payments(
        store,
        {.filter = factum::SubscriptionFilter::category("order").with_types({"shop.OrderPaid"})},
        [&](const factum::RecordedEvent& e) { paid.push_back(e.stream_id); });
    payments.wait_for(store.head_position(), 10s);
  }
  expect(paid == std::vector<std::string>{"order-1", "order-2"}, "only OrderPaid events");

  // 3. A consumer group: two members share the "order" category; each stream goes to one
  //    member (stable_hash(stream) % 2), so a stream's events stay in order on one member.
  std::mutex mu;
  std::map<std::string, std::set<std::uint32_t>> members_of_stream;
  std::atomic<int> delivered{0};
  {
    const factum::ConsumerGroupOptions group{
        .group = "shippers", .category = "order", .members = 2};
    std::vector<factum::Subscription> members;
    for (std::uint32_t i = 0; i < 2; ++i) {
      members.push_back(factum::join_group(store, group, i, [&, i](const factum::RecordedEvent& e) {
        std::lock_guard lock(mu);
        members_of_stream[e.stream_id].insert(i);
        ++delivered;
      }));
    }
    for (auto& m : members) m.wait_for(store.head_position(), 10s);
  }
  expect(delivered == 7, "every event delivered once across the group");
  for (const auto& [stream, members] : members_of_stream) {
    expect(members.size() == 1 && *members.begin() == factum::group_member_for(stream, 2),
           "stream " + stream + " goes to exactly one member");
  }

  // 4. A subscription that follows a query (DCB, docs/dcb.md): the events tagged customer:7,
  //    of any stream and type, read through the tag index; the position (and so a checkpoint)
  //    moves over the events the query does not match.
  const auto tagged = [](const std::string& type, std::vector<std::string> tags) {
    factum::EventData e = event(type, "");
    factum::set_tags(e.metadata, std::move(tags));
    return e;
  };
  store.append("ticket-1", factum::ExpectedVersion::any(), tagged("desk.Opened", {"customer:7"}));
  store.append("ticket-2", factum::ExpectedVersion::any(), tagged("desk.Opened", {"customer:8"}));
  std::vector<std::string> of_customer;
  {
    factum::Subscription desk(
        store, {.filter = factum::SubscriptionFilter::query(factum::Query::tagged({"customer:7"}))},
        [&](const factum::RecordedEvent& e) { of_customer.push_back(e.stream_id); });
    store.append("ticket-1", factum::ExpectedVersion::any(),
                 tagged("desk.Closed", {"customer:7"}));  // live
    store.append("ticket-2", factum::ExpectedVersion::any(), tagged("desk.Closed", {"customer:8"}));
    expect(desk.wait_for(store.head_position(), 10s), "the query's position reaches the head");
  }
  expect(of_customer == std::vector<std::string>{"ticket-1", "ticket-1"},
         "only customer 7's events");

  std::cout << "subscriptions example: " << seen.size() << " events to the mailer, " << paid.size()
            << " payments, " << delivered << " to the group, " << of_customer.size()
            << " of customer 7\n";
  std::filesystem::remove_all(dir);
  return failures == 0 ? 0 : 1;
}
