// samples/orders/events.cpp — the orders registry and small helpers over events.
#include "orders/events.hpp"

namespace orders {

namespace {

// The registry, filled in its constructor so that a function-local static builds it once.
struct RegistryHolder {
  RegistryHolder() {
    registry.add<OrderPlaced>()
        .add<PaymentProcessed>()
        .add<OrderShipped>()
        .add<OrderDelivered>()
        .add<OrderCancelled>()
        .add<PaymentRefunded>();
    registry.validate();
  }
  factum::EventRegistry registry;
};

}  // namespace

const factum::EventRegistry& registry() {
  static const RegistryHolder holder;
  return holder.registry;
}

std::vector<std::string> event_types() {
  return {std::string(OrderPlaced::event_type),    std::string(PaymentProcessed::event_type),
          std::string(OrderShipped::event_type),   std::string(OrderDelivered::event_type),
          std::string(OrderCancelled::event_type), std::string(PaymentRefunded::event_type)};
}

std::string order_id_of(std::string_view stream_id) {
  const std::size_t prefix = kCategory.size() + 1;
  return stream_id.size() > prefix ? std::string(stream_id.substr(prefix)) : std::string();
}

std::int64_t total_cents(const std::vector<Item>& items) {
  std::int64_t total = 0;
  for (const Item& item : items) total += item.unit_cents * item.quantity;
  return total;
}

std::string skus_of(const std::vector<Item>& items) {
  std::string out;
  for (const Item& item : items) {
    if (!out.empty()) out += ' ';
    out += item.sku;
  }
  return out;
}

std::string_view compensated_type(std::string_view type) {
  if (type == OrderCancelled::event_type) return OrderPlaced::event_type;
  if (type == PaymentRefunded::event_type) return PaymentProcessed::event_type;
  return {};
}

}  // namespace orders
