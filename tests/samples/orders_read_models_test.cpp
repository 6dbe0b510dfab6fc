// tests/samples/orders_read_models_test.cpp — the orders sample's read models through its API:
// the order board and inventory exact after a known history, the outbox sending each e-mail
// once under redelivery, and the search index kept in sync by a subscription with a durable
// checkpoint.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "orders/order_service.hpp"
#include "orders/read_models.hpp"
#include "support/temp_dir.hpp"

using namespace std::chrono_literals;
using orders::Item;

namespace {

// A known history of six orders:
//   o-1 ann   mug-01 x2 @12.50, tea-green x1 @7.40   delivered
//   o-2 bob   mug-01 x1 @12.50                       paid
//   o-3 chen  kettle x1 @39.00                       paid, then cancelled (refunded)
//   o-4 dana  tea-green x3 @7.40                     cancelled before payment
//   o-5 emil  mug-01 x1 @12.50, kettle x1 @39.00     shipped
//   o-6 ann   tea-green x1 @7.40                     delivered, then refunded
struct History {
  History() {
    service.place("o-1", "ann", {{"mug-01", 2, 1250}, {"tea-green", 1, 740}});
    service.place("o-2", "bob", {{"mug-01", 1, 1250}});
    service.place("o-3", "chen", {{"kettle", 1, 3900}});
    service.place("o-4", "dana", {{"tea-green", 3, 740}});
    service.place("o-5", "emil", {{"mug-01", 1, 1250}, {"kettle", 1, 3900}});
    service.place("o-6", "ann", {{"tea-green", 1, 740}});
    for (const char* id : {"o-1", "o-2", "o-3", "o-5", "o-6"}) service.pay(id);
    for (const char* id : {"o-1", "o-5", "o-6"}) service.ship(id);
    for (const char* id : {"o-1", "o-6"}) service.deliver(id);
    service.cancel("o-3");
    service.cancel("o-4");
    service.refund("o-6");
  }
  factum::test::TempStore temp;
  factum::EventStore& store = temp.store;
  orders::OrderService service{store};
};

std::vector<std::string> ids_of(const std::vector<orders::SearchHit>& hits) {
  std::vector<std::string> out;
  for (const auto& h : hits) out.push_back(h.order_id);
  return out;
}

std::vector<std::string> search(const factum::EventStore& store, const std::string& text) {
  return ids_of(orders::SearchIndex::search(store, text));
}

}  // namespace

TEST_CASE("the order board holds each order's customer, status, total and refund") {
  History h;
  orders::ReadModels models(h.store);
  models.catch_up(30s);
  struct Expected {
    const char* order;
    const char* customer;
    const char* status;
    std::int64_t total;
    std::int64_t refunded;
  };
  for (const Expected& e : std::vector<Expected>{{"o-1", "ann", "delivered", 3240, 0},
                                                 {"o-2", "bob", "paid", 1250, 0},
                                                 {"o-3", "chen", "cancelled", 3900, 3900},
                                                 {"o-4", "dana", "cancelled", 2220, 0},
                                                 {"o-5", "emil", "shipped", 5150, 0},
                                                 {"o-6", "ann", "refunded", 740, 740}}) {
    CAPTURE(e.order);
    const auto row = orders::board_row(h.store, e.order);
    REQUIRE(row);
    CHECK(row->customer == e.customer);
    CHECK(row->status == e.status);
    CHECK(row->total_cents == e.total);
    CHECK(row->refunded_cents == e.refunded);
  }
  CHECK(orders::status_counts(h.store) ==
        std::map<std::string, std::int64_t>{
            {"cancelled", 2}, {"delivered", 1}, {"paid", 1}, {"refunded", 1}, {"shipped", 1}});
  const orders::BoardTotals totals = orders::board_totals(h.store);
  CHECK(totals.orders == 6);
  CHECK(totals.takings_cents == 3240 + 1250 + 5150);
  CHECK(totals.refunded_cents == 3900 + 740);
  const auto latest = orders::board(h.store, 2);
  REQUIRE(latest.size() == 2);
  CHECK(latest[0].order_id == "o-6");  // refunded last
  CHECK(latest[1].order_id == "o-4");
  CHECK(orders::board(h.store, 10, "cancelled").size() == 2);
}

TEST_CASE("inventory reserves on placement, releases on cancellation, ships on shipment") {
  History h;
  orders::ReadModels models(h.store);
  models.catch_up(30s);
  const auto rows = orders::inventory(h.store);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].sku == "mug-01");
  CHECK(rows[0].reserved == 1);  // o-2, paid, not shipped
  CHECK(rows[0].shipped == 3);   // o-1 x2, o-5 x1
  CHECK(rows[1].sku == "tea-green");
  CHECK(rows[1].reserved == 0);  // o-4's three released
  CHECK(rows[1].shipped == 2);   // o-1, o-6 (a refund after delivery changes nothing)
  CHECK(rows[2].sku == "kettle");
  CHECK(rows[2].reserved == 0);  // o-3's released
  CHECK(rows[2].shipped == 1);   // o-5

  h.service.ship("o-2");
  models.catch_up(30s);
  CHECK(orders::inventory(h.store)[0].reserved == 0);
  CHECK(orders::inventory(h.store)[0].shipped == 4);
}

TEST_CASE("the outbox sends one e-mail per notification, keyed by the event") {
  History h;
  orders::ReadModels models(h.store);
  models.catch_up(30s);
  // 6 placements, 3 shipments, 2 deliveries, 2 cancellations, 2 refunds.
  CHECK(orders::sent_email_count(h.store) == 15);
  CHECK(models.outbox().sent() == 15);
  const auto emails = orders::sent_emails(h.store, 3);
  REQUIRE(emails.size() == 3);
  CHECK(emails[0].recipient == "ann@example.com");
  CHECK(emails[0].subject == "Refund of 7.40 for order o-6");
  CHECK(emails[1].recipient == "dana@example.com");
  CHECK(emails[1].subject == "Order o-4 was cancelled");
  CHECK(emails[2].subject == "Refund of 39.00 for order o-3");
  const factum::Position head = h.store.head_position();
  CHECK(emails[0].key.rfind(std::to_string(head) + ":", 0) == 0);
}

TEST_CASE("a redelivery after the outbox's checkpoint is reset sends nothing twice") {
  History h;
  {
    orders::ReadModels models(h.store);
    models.catch_up(30s);
  }
  REQUIRE(orders::sent_email_count(h.store) == 15);

  // As a crash before the checkpoint was saved would: everything is delivered again.
  factum::CheckpointStore(h.store).save("outbox", 0);
  auto outbox = std::make_shared<orders::Outbox>(h.store);
  {
    factum::ProjectionEngine engine(h.store);
    engine.add(outbox, {.target = factum::ProjectionTarget::external});
    REQUIRE(engine.wait_idle(30s));
  }
  CHECK(outbox->delivered() == 15);
  CHECK(outbox->sent() == 0);
  CHECK(outbox->duplicates() == 15);
  CHECK(orders::sent_email_count(h.store) == 15);

  // The helper does the same; new events after it are sent once.
  CHECK(orders::redeliver_outbox(h.store).sent == 0);
  h.service.ship("o-2");
  orders::ReadModels models(h.store);
  models.catch_up(30s);
  CHECK(models.outbox().sent() == 1);
  CHECK(orders::sent_email_count(h.store) == 16);
}

TEST_CASE("the search index finds orders by id, customer, SKU and status") {
  History h;
  orders::ReadModels models(h.store);
  models.catch_up(30s);
  CHECK(search(h.store, "ann") == std::vector<std::string>{"o-1", "o-6"});
  CHECK(search(h.store, "MUG") == std::vector<std::string>{"o-1", "o-2", "o-5"});
  CHECK(search(h.store, "ann refunded") == std::vector<std::string>{"o-6"});
  CHECK(search(h.store, "cancelled") == std::vector<std::string>{"o-3", "o-4"});
  CHECK(search(h.store, "o-5") == std::vector<std::string>{"o-5"});
  CHECK(search(h.store, "%").empty());  // LIKE's wildcards are plain characters
  CHECK(search(h.store, "zebra").empty());
  const auto hit = orders::SearchIndex::search(h.store, "o-5");
  REQUIRE(hit.size() == 1);
  CHECK(hit[0].customer == "emil");
  CHECK(hit[0].skus == "mug-01 kettle");
  CHECK(hit[0].status == "shipped");
}

TEST_CASE("the search index follows new events while it runs") {
  History h;
  orders::ReadModels models(h.store);
  models.catch_up(30s);
  CHECK(search(h.store, "bob shipped").empty());
  h.service.ship("o-2");
  models.catch_up(30s);
  CHECK(search(h.store, "bob shipped") == std::vector<std::string>{"o-2"});
  h.service.place("o-7", "gus", {{"grinder", 1, 4500}});
  models.catch_up(30s);
  CHECK(search(h.store, "grinder placed") == std::vector<std::string>{"o-7"});
}

TEST_CASE("the search index resumes from its durable checkpoint, and a replay changes nothing") {
  History h;
  factum::Position indexed = 0;
  {
    orders::SearchIndex index(h.store);
    REQUIRE(index.wait_for(h.store.head_position(), 30s));
    indexed = index.position();
  }
  CHECK(factum::CheckpointStore(h.store).load(orders::SearchIndex::kCheckpoint) == indexed);
  h.service.ship("o-2");  // while no index runs
  h.service.deliver("o-2");
  {
    orders::SearchIndex index(h.store);
    REQUIRE(index.wait_for(h.store.head_position(), 30s));
  }
  CHECK(search(h.store, "bob delivered") == std::vector<std::string>{"o-2"});

  // At-least-once: deliver the whole log again; the rows come out the same.
  const auto before = orders::SearchIndex::search(h.store, "o");
  factum::CheckpointStore(h.store).save(orders::SearchIndex::kCheckpoint, 0);
  {
    orders::SearchIndex index(h.store);
    REQUIRE(index.wait_for(h.store.head_position(), 30s));
  }
  const auto after = orders::SearchIndex::search(h.store, "o");
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].order_id == before[i].order_id);
    CHECK(after[i].status == before[i].status);
  }
}
