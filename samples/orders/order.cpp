// samples/orders/order.cpp — the Order aggregate's commands and state (see order.hpp).
#include "orders/order.hpp"

#include <iterator>

#include "orders/errors.hpp"
#include "orders/parsing.hpp"

namespace orders {

std::string_view to_string(Status status) noexcept {
  switch (status) {
    case Status::none:
      return "none";
    case Status::placed:
      return "placed";
    case Status::paid:
      return "paid";
    case Status::shipped:
      return "shipped";
    case Status::delivered:
      return "delivered";
    case Status::cancelled:
      return "cancelled";
    case Status::refunded:
      return "refunded";
  }
  return "unknown";
}

Status status_after(const OrderEvent& event) noexcept {
  constexpr Status kAfter[] = {Status::placed,    Status::paid,      Status::shipped,
                               Status::delivered, Status::cancelled, Status::refunded};
  static_assert(std::size(kAfter) == std::variant_size_v<OrderEvent>);
  return kAfter[event.index()];
}

namespace {

bool is_closed(Status s) { return s == Status::cancelled || s == Status::refunded; }

}  // namespace

// --- Commands ------------------------------------------------------------------------------

void Order::place(std::string customer, std::vector<Item> items) {
  if (status_ != Status::none) {
    throw Refused("order " + id() + " exists already (it is " + std::string(to_string(status_)) +
                  "): cannot place it again");
  }
  check_customer(customer);
  check_items(items);
  raise(OrderPlaced{std::move(customer), std::move(items)});
}

void Order::pay() {
  require(Status::placed, "pay");
  raise(PaymentProcessed{total_});
}

void Order::ship(std::string tracking) {
  require(Status::paid, "ship");
  raise(OrderShipped{std::move(tracking)});
}

void Order::deliver() {
  require(Status::shipped, "deliver");
  raise(OrderDelivered{});
}

void Order::cancel(std::string reason) {
  if (status_ != Status::paid) require(Status::placed, "cancel");
  const bool refund_too = status_ == Status::paid;
  raise(OrderCancelled{reason});
  if (refund_too) raise(PaymentRefunded{paid_, std::move(reason)});
}

void Order::refund(std::string reason) {
  if (status_ == Status::paid) {
    throw Refused("order " + id() + " is paid, not delivered: cannot refund it (cancel it " +
                  "instead: a cancellation refunds the payment)");
  }
  require(Status::delivered, "refund");
  raise(PaymentRefunded{paid_, std::move(reason)});
}

void Order::require(Status wanted, std::string_view verb) const {
  if (status_ == Status::none) throw UnknownOrder(id());
  if (status_ != wanted) refuse(wanted, verb);
}

// "is placed, not paid" while the order is behind; "is already shipped" once past the
// status the command needs (or closed by the same kind of event).
void Order::refuse(Status wanted, std::string_view verb) const {
  const std::string is = "order " + id() + " is ";
  const std::string cannot = ": cannot " + std::string(verb) + " it";
  const std::string status(to_string(status_));
  if (is_closed(status_)) throw Refused(is + status + cannot);
  if (status_ < wanted)
    throw Refused(is + status + ", not " + std::string(to_string(wanted)) + cannot);
  throw Refused(is + "already " + status + cannot);
}

// --- State ---------------------------------------------------------------------------------

void Order::apply(const OrderPlaced& e) {
  status_ = Status::placed;
  customer_ = e.customer;
  items_ = e.items;
  total_ = orders::total_cents(e.items);
}

void Order::apply(const PaymentProcessed& e) {
  status_ = Status::paid;
  paid_ = e.amount_cents;
}

void Order::apply(const OrderShipped& e) {
  status_ = Status::shipped;
  tracking_ = e.tracking;
}

void Order::apply(const OrderDelivered&) { status_ = Status::delivered; }

void Order::apply(const OrderCancelled&) { status_ = Status::cancelled; }

void Order::apply(const PaymentRefunded& e) {
  refunded_ += e.amount_cents;
  if (status_ != Status::cancelled) status_ = Status::refunded;
}

}  // namespace orders
