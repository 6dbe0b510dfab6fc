// tests/samples/orders_domain_test.cpp — the orders sample through its API: the order state
// machine (every refused transition), input rules, compensating events, and the read models
// (board, inventory, outbox under redelivery, search index kept by a subscription).
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "orders/errors.hpp"
#include "orders/order_service.hpp"
#include "orders/parsing.hpp"
#include "orders/read_models.hpp"
#include "support/temp_dir.hpp"

using namespace std::chrono_literals;
using orders::Item;
using orders::OrderService;
using orders::Status;

namespace {

const std::vector<Item> kBasket{{"mug-01", 2, 1250}, {"tea-green", 1, 740}};  // 32.40

struct Shop {
  factum::test::TempStore temp;
  factum::EventStore& store = temp.store;
  OrderService service{store, "test"};
};

// Takes a new order `id` along `steps` ("pay", "ship", "deliver", "cancel", "refund").
void advance(OrderService& s, const std::string& id, const std::vector<std::string>& steps) {
  s.place(id, "ann", kBasket);
  for (const std::string& step : steps) {
    if (step == "pay") s.pay(id);
    if (step == "ship") s.ship(id);
    if (step == "deliver") s.deliver(id);
    if (step == "cancel") s.cancel(id);
    if (step == "refund") s.refund(id);
  }
}

void run(OrderService& s, const std::string& command, const std::string& id) {
  if (command == "place") s.place(id, "bob", kBasket);
  if (command == "pay") s.pay(id);
  if (command == "ship") s.ship(id);
  if (command == "deliver") s.deliver(id);
  if (command == "cancel") s.cancel(id);
  if (command == "refund") s.refund(id);
}

std::vector<std::string> types_of(const std::vector<factum::RecordedEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.type);
  return out;
}

}  // namespace

TEST_CASE("an order goes placed, paid, shipped, delivered and refunded after delivery") {
  Shop shop;
  CHECK(shop.service.place("o-1", "ann", kBasket).status() == Status::placed);
  CHECK(shop.service.pay("o-1").paid_cents() == 3240);
  CHECK(shop.service.ship("o-1").tracking() == "TRK-o-1");
  CHECK(shop.service.deliver("o-1").status() == Status::delivered);
  const orders::Order o = shop.service.refund("o-1");
  CHECK(o.status() == Status::refunded);
  CHECK(o.refunded_cents() == 3240);
  CHECK(o.total_cents() == 3240);
  CHECK(types_of(shop.service.history("o-1")) ==
        std::vector<std::string>{"orders.OrderPlaced", "orders.PaymentProcessed",
                                 "orders.OrderShipped", "orders.OrderDelivered",
                                 "orders.PaymentRefunded"});
}

TEST_CASE("every out-of-order command is refused with a message naming the order and status") {
  struct Case {
    std::vector<std::string> steps;  // how the order got where it is
    std::string command;
    std::string message;
  };
  const std::string refund_paid =
      "is paid, not delivered: cannot refund it (cancel it instead: a cancellation refunds the "
      "payment)";
  const std::vector<Case> cases{
      {{}, "place", "exists already (it is placed): cannot place it again"},
      {{}, "ship", "is placed, not paid: cannot ship it"},
      {{}, "deliver", "is placed, not shipped: cannot deliver it"},
      {{}, "refund", "is placed, not delivered: cannot refund it"},
      {{"pay"}, "place", "exists already (it is paid): cannot place it again"},
      {{"pay"}, "pay", "is already paid: cannot pay it"},
      {{"pay"}, "deliver", "is paid, not shipped: cannot deliver it"},
      {{"pay"}, "refund", refund_paid},
      {{"pay", "ship"}, "pay", "is already shipped: cannot pay it"},
      {{"pay", "ship"}, "ship", "is already shipped: cannot ship it"},
      {{"pay", "ship"}, "cancel", "is already shipped: cannot cancel it"},
      {{"pay", "ship"}, "refund", "is shipped, not delivered: cannot refund it"},
      {{"pay", "ship", "deliver"}, "pay", "is already delivered: cannot pay it"},
      {{"pay", "ship", "deliver"}, "ship", "is already delivered: cannot ship it"},
      {{"pay", "ship", "deliver"}, "deliver", "is already delivered: cannot deliver it"},
      {{"pay", "ship", "deliver"}, "cancel", "is already delivered: cannot cancel it"},
      {{"cancel"}, "pay", "is cancelled: cannot pay it"},
      {{"cancel"}, "ship", "is cancelled: cannot ship it"},
      {{"cancel"}, "deliver", "is cancelled: cannot deliver it"},
      {{"cancel"}, "cancel", "is cancelled: cannot cancel it"},
      {{"cancel"}, "refund", "is cancelled: cannot refund it"},
      {{"pay", "cancel"}, "ship", "is cancelled: cannot ship it"},
      {{"pay", "cancel"}, "refund", "is cancelled: cannot refund it"},
      {{"pay", "ship", "deliver", "refund"}, "refund", "is refunded: cannot refund it"},
      {{"pay", "ship", "deliver", "refund"}, "cancel", "is refunded: cannot cancel it"},
      {{"pay", "ship", "deliver", "refund"}, "ship", "is refunded: cannot ship it"},
      {{"pay", "ship", "deliver", "refund"},
       "place",
       "exists already (it is refunded): cannot place it again"},
  };
  Shop shop;
  int n = 0;
  for (const Case& c : cases) {
    const std::string id = "o-" + std::to_string(++n);
    advance(shop.service, id, c.steps);
    const factum::Head before = shop.store.head();
    CAPTURE(c.command);
    CHECK_THROWS_WITH_AS(run(shop.service, c.command, id),
                         ("order " + id + " " + c.message).c_str(), orders::Refused);
    CHECK(shop.store.head() == before);
  }
}

TEST_CASE("commands on an order without events throw UnknownOrder and write nothing") {
  Shop shop;
  shop.service.place("o-1", "ann", kBasket);
  for (const char* command : {"pay", "ship", "deliver", "cancel", "refund"}) {
    CAPTURE(command);
    CHECK_THROWS_WITH_AS(run(shop.service, command, "o-9"), "unknown order o-9",
                         orders::UnknownOrder);
  }
  CHECK_THROWS_AS(shop.service.load("o-9"), orders::UnknownOrder);
  CHECK_THROWS_AS(shop.service.history("o-9"), orders::UnknownOrder);
  CHECK(shop.store.head_position() == 1);
}

TEST_CASE("bad order ids, customers and items are refused before anything is written") {
  Shop shop;
  CHECK_THROWS_AS(shop.service.place("", "ann", kBasket), orders::BadInput);
  CHECK_THROWS_AS(shop.service.place("o 1", "ann", kBasket), orders::BadInput);
  CHECK_THROWS_AS(shop.service.place("-o1", "ann", kBasket), orders::BadInput);
  CHECK_THROWS_AS(shop.service.place(std::string(41, 'a'), "ann", kBasket), orders::BadInput);
  CHECK_THROWS_AS(shop.service.place("o-1", "ann lee", kBasket), orders::BadInput);
  CHECK_THROWS_AS(shop.service.place("o-1", "", kBasket), orders::BadInput);
  CHECK_THROWS_WITH_AS(shop.service.place("o-1", "ann", {}), "an order needs at least one item",
                       orders::BadInput);
  CHECK_THROWS_AS(shop.service.place("o-1", "ann", {{"mug", 1, 100}, {"mug", 2, 100}}),
                  orders::BadInput);
  CHECK_THROWS_AS(shop.service.place("o-1", "ann", {{"mug", 0, 100}}), orders::BadInput);
  CHECK_THROWS_AS(shop.service.place("o-1", "ann", {{"mug", 1, 0}}), orders::BadInput);
  CHECK_THROWS_AS(shop.service.pay("o/1"), orders::BadInput);
  CHECK(shop.store.head_position() == 0);
}

TEST_CASE("amounts parse from 0.01 to 1000000.00 with at most two decimals") {
  CHECK(orders::parse_amount("12.50") == 1250);
  CHECK(orders::parse_amount("12.5") == 1250);
  CHECK(orders::parse_amount("12") == 1200);
  CHECK(orders::parse_amount("0.01") == 1);
  CHECK(orders::parse_amount("1000000.00") == 100'000'000);
  for (const char* bad : {"", "0", "0.00", "-1", "+1", "1.", ".5", "1.234", "1e3", "12,50", "abc",
                          "1000000.01", "99999999", " 1"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(orders::parse_amount(bad), orders::BadInput);
  }
  CHECK(orders::format_cents(1250) == "12.50");
  CHECK(orders::format_cents(5) == "0.05");
  CHECK(orders::format_cents(-5) == "-0.05");
}

TEST_CASE("items parse as SKU:QTY:PRICE and name what is wrong") {
  CHECK(orders::parse_item("mug-01:2:12.50") == Item{"mug-01", 2, 1250});
  CHECK_THROWS_WITH_AS(orders::parse_item("mug-01:2:12.505"),
                       "malformed amount '12.505' in 'mug-01:2:12.505': expected a price from "
                       "0.01 to 1000000.00, such as 12.50",
                       orders::BadInput);
  CHECK_THROWS_WITH_AS(orders::parse_item("mug-01:x:1"),
                       "bad quantity 'x' in 'mug-01:x:1': expected a whole number from 1 to 10000",
                       orders::BadInput);
  for (const char* bad : {"mug-01", "mug-01:2", "mug-01:2:1:1", ":2:1.00", "mug 01:2:1.00",
                          "mug:0:1.00", "mug:10001:1.00", "mug:2:"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(orders::parse_item(bad), orders::BadInput);
  }
}

TEST_CASE("cancelling a placed order appends OrderCancelled compensating the OrderPlaced") {
  Shop shop;
  shop.service.place("o-1", "ann", kBasket);
  const orders::Order o = shop.service.cancel("o-1", "changed my mind");
  CHECK(o.status() == Status::cancelled);
  CHECK(o.refunded_cents() == 0);
  const auto history = shop.service.history("o-1");
  REQUIRE(types_of(history) ==
          std::vector<std::string>{"orders.OrderPlaced", "orders.OrderCancelled"});
  CHECK(history[1].metadata.compensates == history[0].id);
  CHECK(history[1].metadata.actor == "test");
  CHECK(orders::registry().decode<orders::OrderCancelled>(history[1]).reason == "changed my mind");
  CHECK(shop.store.compensations_of(history[0].id) == std::vector{history[1]});
}

TEST_CASE(
    "cancelling a paid order refunds it: the refund compensates the payment, caused by the "
    "cancellation") {
  Shop shop;
  shop.service.place("o-1", "ann", kBasket);
  shop.service.pay("o-1");
  const orders::Order o = shop.service.cancel("o-1");
  CHECK(o.status() == Status::cancelled);
  CHECK(o.refunded_cents() == 3240);
  const auto h = shop.service.history("o-1");
  REQUIRE(types_of(h) == std::vector<std::string>{"orders.OrderPlaced", "orders.PaymentProcessed",
                                                  "orders.OrderCancelled",
                                                  "orders.PaymentRefunded"});
  CHECK(h[2].metadata.compensates == h[0].id);
  CHECK(h[3].metadata.compensates == h[1].id);
  CHECK(h[3].metadata.causation_id == h[2].id);
  CHECK(h[2].position + 1 == h[3].position);  // one append: both or neither
  CHECK(orders::registry().decode<orders::PaymentRefunded>(h[3]).amount_cents == 3240);
}

TEST_CASE("a refund after delivery compensates the payment") {
  Shop shop;
  advance(shop.service, "o-1", {"pay", "ship", "deliver", "refund"});
  const auto h = shop.service.history("o-1");
  REQUIRE(h.size() == 5);
  CHECK(h[4].metadata.compensates == h[1].id);
  CHECK(!h[4].metadata.causation_id);
  CHECK(shop.service.load("o-1").status() == Status::refunded);
}
