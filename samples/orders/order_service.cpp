// samples/orders/order_service.cpp — the orders commands over factum (see order_service.hpp).
#include "orders/order_service.hpp"

#include <map>

#include "orders/errors.hpp"
#include "orders/parsing.hpp"

namespace orders {

namespace {

constexpr int kMaxAttempts = 10;

// The tracking number a shipment gets: derived from the order, so a retried command ships
// under the same number.
std::string tracking_for(std::string_view id) { return "TRK-" + std::string(id); }

}  // namespace

OrderService::OrderService(factum::EventStore& store, std::string actor)
    : store_(store), orders_(store, registry()) {
  context_.actor = std::move(actor);
}

Order OrderService::place(std::string_view id, std::string customer, std::vector<Item> items) {
  check_order_id(id);
  check_customer(customer);
  check_items(items);
  return execute(id, [&](Order& o) { o.place(customer, items); });
}

Order OrderService::pay(std::string_view id) {
  return execute(id, [](Order& o) { o.pay(); });
}

Order OrderService::ship(std::string_view id) {
  return execute(id, [&](Order& o) { o.ship(tracking_for(id)); });
}

Order OrderService::deliver(std::string_view id) {
  return execute(id, [](Order& o) { o.deliver(); });
}

Order OrderService::cancel(std::string_view id, std::string reason) {
  return compensate(id, [&](Order& o) { o.cancel(reason); });
}

Order OrderService::refund(std::string_view id, std::string reason) {
  return compensate(id, [&](Order& o) { o.refund(reason); });
}

Order OrderService::load(std::string_view id) const {
  check_order_id(id);
  Order order = orders_.load(id);
  if (order.status() == Status::none) throw UnknownOrder(std::string(id));
  return order;
}

Order OrderService::load_at(std::string_view id, factum::StreamVersion version) const {
  check_order_id(id);
  Order order = orders_.load_at(id, version);
  if (order.status() == Status::none) throw UnknownOrder(std::string(id));
  return order;
}

std::vector<factum::RecordedEvent> OrderService::history(std::string_view id) const {
  check_order_id(id);
  std::vector<factum::RecordedEvent> events = store_.read_stream(stream_id(id)).to_vector();
  if (events.empty()) throw UnknownOrder(std::string(id));
  return events;
}

Order OrderService::execute(std::string_view id, const std::function<void(Order&)>& command) {
  check_order_id(id);
  return orders_.execute(id, command, {}, context_);
}

// As Repository::execute, but each event's metadata names what it compensates.
Order OrderService::compensate(std::string_view id, const std::function<void(Order&)>& command) {
  check_order_id(id);
  for (int attempt = 1;; ++attempt) {
    Order order = orders_.load(id);
    command(order);
    const std::vector<factum::EventData> batch = encode_compensations(order);
    try {
      store_.append(stream_id(id), factum::ExpectedVersion::exact(order.loaded_version()), batch);
      return orders_.load(id);
    } catch (const factum::ConcurrencyError&) {
      if (attempt >= kMaxAttempts) throw;  // another writer moved the order on: load again
    }
  }
}

// The pending events of `order`, each compensating event with metadata.compensates set to
// the newest event it undoes, and every event after the first caused by the first (the
// cancellation causes the automatic refund).
std::vector<factum::EventData> OrderService::encode_compensations(const Order& order) const {
  std::map<std::string, factum::EventId, std::less<>> newest;  // type -> newest id
  for (const factum::RecordedEvent& e : store_.read_stream(stream_id(order.id()))) {
    if (e.stream_version > order.loaded_version()) break;
    newest[e.type] = e.id;
  }
  std::vector<factum::EventData> batch;
  for (const OrderEvent& event : order.pending()) {
    factum::EventData data =
        std::visit([&](const auto& e) { return registry().encode(e, context_); }, event);
    const auto target = newest.find(compensated_type(data.type));
    if (target != newest.end()) data.metadata.compensates = target->second;
    if (!batch.empty()) data.metadata.causation_id = batch.front().id;
    batch.push_back(std::move(data));
  }
  return batch;
}

}  // namespace orders
