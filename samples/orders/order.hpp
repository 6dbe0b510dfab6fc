// samples/orders/order.hpp — the Order aggregate: an order's state machine, rebuilt from its
// events, whose commands refuse anything out of order.
//
//   placed --pay--> paid --ship--> shipped --deliver--> delivered --refund--> refunded
//     |               |
//     +--cancel-------+--cancel--> cancelled   (a paid order is refunded as it is cancelled)
//
// Decisions: an order can be cancelled until it ships (after that it has left the
// warehouse). A refund on its own is a return: only a delivered order can be refunded; a
// paid order that has not shipped is cancelled instead, which refunds it. Cancelled and
// refunded orders are closed: every command on them is refused.
//
// Every refusal is a Refused (or UnknownOrder) naming the order, its status and the command,
// e.g. "order o-7 is placed, not paid: cannot ship it"; commands check before they raise,
// so a refused command raises nothing.
//
// Thread-safety: a plain value used by one thread at a time (factum::Aggregate).
#pragma once

#include <factum/factum.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "orders/events.hpp"

namespace orders {

enum class Status { none, placed, paid, shipped, delivered, cancelled, refunded };

// "placed", "paid", ...; "none" for an order without events.
std::string_view to_string(Status status) noexcept;
// The status an event moves an order to (PaymentRefunded: refunded; a refund that comes with
// a cancellation leaves the order cancelled, which the callers keep).
Status status_after(const OrderEvent& event) noexcept;

class Order : public factum::Aggregate<Order, OrderPlaced, PaymentProcessed, OrderShipped,
                                       OrderDelivered, OrderCancelled, PaymentRefunded> {
 public:
  static constexpr std::string_view category = kCategory;

  // Commands. Each throws UnknownOrder for an order without events (place excepted),
  // Refused when the status does not allow it, BadInput for bad arguments.
  void place(std::string customer, std::vector<Item> items);
  void pay();
  void ship(std::string tracking);
  void deliver();
  // Raises OrderCancelled, then PaymentRefunded when the order was paid.
  void cancel(std::string reason);
  void refund(std::string reason);

  void apply(const OrderPlaced& e);
  void apply(const PaymentProcessed& e);
  void apply(const OrderShipped& e);
  void apply(const OrderDelivered& e);
  void apply(const OrderCancelled& e);
  void apply(const PaymentRefunded& e);

  Status status() const noexcept { return status_; }
  const std::string& customer() const noexcept { return customer_; }
  const std::vector<Item>& items() const noexcept { return items_; }
  std::int64_t total_cents() const noexcept { return total_; }
  std::int64_t paid_cents() const noexcept { return paid_; }
  std::int64_t refunded_cents() const noexcept { return refunded_; }
  const std::string& tracking() const noexcept { return tracking_; }

 private:
  // Throws unless the status is `wanted` ("cannot <verb> it").
  void require(Status wanted, std::string_view verb) const;
  [[noreturn]] void refuse(Status wanted, std::string_view verb) const;

  Status status_ = Status::none;
  std::string customer_;
  std::vector<Item> items_;
  std::int64_t total_ = 0;
  std::int64_t paid_ = 0;
  std::int64_t refunded_ = 0;
  std::string tracking_;
};

}  // namespace orders
