// samples/orders/order_service.hpp — the orders application service: one call per command,
// each loading the order, running the aggregate's command and appending what it raised.
//
//   orders::OrderService service(store);
//   service.place("o-7", "ann", {{"mug-01", 2, 1250}});
//   service.pay("o-7");
//   service.cancel("o-7", "changed my mind");   // OrderCancelled + PaymentRefunded
//
// Ordinary commands go through factum::Repository<Order>::execute (load, command, save with
// the expected version, retry on conflict). Compensating commands (cancel, refund) need
// metadata per event — each names the event it compensates, and an automatic refund names
// the cancellation as its cause — which Repository::save cannot give (it stamps one Metadata
// on the whole batch); compensate() encodes and appends those batches itself, with the same
// expected-version check and retries.
//
// Every command validates its input first and throws BadInput, UnknownOrder or Refused
// without writing anything; factum errors (StorageError, ...) propagate.
// Thread-safety: an OrderService may be shared between threads (as factum::Repository).
#pragma once

#include <factum/factum.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "orders/events.hpp"
#include "orders/order.hpp"

namespace orders {

class OrderService {
 public:
  // `actor` goes into every event's metadata.
  explicit OrderService(factum::EventStore& store, std::string actor = "factum-orders");

  // Each returns the order as saved. See Order for what each refuses.
  Order place(std::string_view id, std::string customer, std::vector<Item> items);
  Order pay(std::string_view id);
  Order ship(std::string_view id);
  Order deliver(std::string_view id);
  Order cancel(std::string_view id, std::string reason = "cancelled on request");
  Order refund(std::string_view id, std::string reason = "refunded on request");

  // The current state; throws UnknownOrder when the order has no events.
  Order load(std::string_view id) const;
  // The order as its events 1 ... `version` make it, to agree with a history read before.
  Order load_at(std::string_view id, factum::StreamVersion version) const;
  // The order's events, oldest first; throws UnknownOrder when it has none.
  std::vector<factum::RecordedEvent> history(std::string_view id) const;
  // "order-o-7".
  std::string stream_id(std::string_view id) const { return orders_.stream_id(id); }

 private:
  Order execute(std::string_view id, const std::function<void(Order&)>& command);
  Order compensate(std::string_view id, const std::function<void(Order&)>& command);
  std::vector<factum::EventData> encode_compensations(const Order& order) const;

  factum::EventStore& store_;
  factum::Repository<Order> orders_;
  factum::Metadata context_;
};

}  // namespace orders
