// samples/orders/events.hpp — the events of an order's life, as typed factum events.
//
//   OrderPlaced -> PaymentProcessed -> OrderShipped -> OrderDelivered
//
// and two compensating events, whose metadata.compensates names the event they undo:
//   OrderCancelled   compensates the OrderPlaced (the reservation is released)
//   PaymentRefunded  compensates the PaymentProcessed (the money goes back)
//
// Every event lives in the stream "order-<id>"; payloads are encoded by factum's
// PayloadOArchive in `serialize` order (docs/events.md), so the field order is the format.
//
// Thread-safety: plain value types; registry() is safe to use from any thread.
#pragma once

#include <factum/factum.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace orders {

// One line of an order: `quantity` units of `sku` at `unit_cents` each.
struct Item {
  std::string sku;
  std::uint32_t quantity = 0;
  std::int64_t unit_cents = 0;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& sku& quantity& unit_cents;
  }
  friend bool operator==(const Item&, const Item&) = default;
};

struct OrderPlaced {
  static constexpr std::string_view event_type = "orders.OrderPlaced";
  std::string customer;
  std::vector<Item> items;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& customer& items;
  }
};

struct PaymentProcessed {
  static constexpr std::string_view event_type = "orders.PaymentProcessed";
  std::int64_t amount_cents = 0;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& amount_cents;
  }
};

struct OrderShipped {
  static constexpr std::string_view event_type = "orders.OrderShipped";
  std::string tracking;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& tracking;
  }
};

struct OrderDelivered {
  static constexpr std::string_view event_type = "orders.OrderDelivered";
  template <class Archive>
  void serialize(Archive&, unsigned) {}
};

// Compensates the order's OrderPlaced.
struct OrderCancelled {
  static constexpr std::string_view event_type = "orders.OrderCancelled";
  std::string reason;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& reason;
  }
};

// Compensates the order's PaymentProcessed.
struct PaymentRefunded {
  static constexpr std::string_view event_type = "orders.PaymentRefunded";
  std::int64_t amount_cents = 0;
  std::string reason;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& amount_cents& reason;
  }
};

using OrderEvent = std::variant<OrderPlaced, PaymentProcessed, OrderShipped, OrderDelivered,
                                OrderCancelled, PaymentRefunded>;

// The stream category of orders: the order "o-7" lives in "order-o-7".
inline constexpr std::string_view kCategory = "order";

// A registry with the six events, validated (built once, on first use).
const factum::EventRegistry& registry();
// The type names of the six events, in lifecycle order.
std::vector<std::string> event_types();
// "o-7" for the stream "order-o-7".
std::string order_id_of(std::string_view stream_id);
// The sum of quantity x unit price over `items`.
std::int64_t total_cents(const std::vector<Item>& items);
// The SKUs of `items`, space-separated, in order.
std::string skus_of(const std::vector<Item>& items);
// The type name of the event a compensating event undoes ("" for other events).
std::string_view compensated_type(std::string_view type);

}  // namespace orders
