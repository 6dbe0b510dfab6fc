// samples/orders/projections.hpp — the read models the ProjectionEngine keeps from the orders'
// events:
//
//   OrderBoard  "order_board"  one row per order: customer, status, total, refunded, updated
//   Inventory   "inventory"    per SKU: units reserved by open orders and units shipped
//   Outbox      "outbox"       e-mails to customers, an external target: delivered at least
//                              once, sent once, by the event's IdempotencyKey
//
// OrderBoard and Inventory keep their tables in the store's file (ProjectionTarget::store):
// each event's changes commit with the checkpoint, exactly once. Query them by their logical
// names (queries.hpp). The search index is kept by a subscription instead (search_index.hpp).
//
// Thread-safety: the engine calls a projection's reset/apply from one thread at a time; the
// Outbox's counters may be read from any thread.
#pragma once

#include <factum/factum.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "orders/events.hpp"

namespace orders {

class OrderBoard : public factum::Projection {
 public:
  std::string name() const override { return "order_board"; }
  std::uint32_t version() const override { return 1; }
  std::vector<std::string> event_types() const override { return orders::event_types(); }
  void reset(factum::ProjectionContext& ctx) override;
  void apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) override;
};

// Reserves an order's units when it is placed, releases them when it is cancelled, and
// moves them from reserved to shipped when it ships. A refund after delivery changes nothing
// (the units were shipped). The table inventory_lines remembers each open order's lines.
class Inventory : public factum::Projection {
 public:
  std::string name() const override { return "inventory"; }
  std::uint32_t version() const override { return 1; }
  std::vector<std::string> event_types() const override;
  void reset(factum::ProjectionContext& ctx) override;
  void apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) override;
};

// An e-mail the outbox sends.
struct Email {
  std::string key;  // the IdempotencyKey of the event it tells about: "<position>:<event id>"
  std::string order_id;
  std::string recipient;
  std::string subject;
};

// Sends customers an e-mail for each placement, shipment, delivery, cancellation and refund.
// "Sending" records the e-mail in the table sent_emails of the store's file, which stands in
// for a mail service: it keeps each message under its idempotency key and ignores a message
// whose key it has seen (as a provider's Idempotency-Key or a Message-ID would). The engine
// delivers at least once; a redelivered event is recognised by its key and sends nothing.
// reset() clears nothing: e-mails cannot be unsent, and the kept keys are what make a
// rebuild (a full redelivery) send nothing twice.
class Outbox : public factum::Projection {
 public:
  // Creates sent_emails in the store's file when missing. The store must outlive this.
  explicit Outbox(factum::EventStore& store);

  std::string name() const override { return "outbox"; }
  std::uint32_t version() const override { return 1; }
  std::vector<std::string> event_types() const override;
  void reset(factum::ProjectionContext&) override {}
  void apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) override;

  // Events delivered to this object, e-mails it sent, deliveries whose key was sent already.
  std::uint64_t delivered() const noexcept { return delivered_; }
  std::uint64_t sent() const noexcept { return sent_; }
  std::uint64_t duplicates() const noexcept { return duplicates_; }
  // The e-mails this object sent, oldest first.
  std::vector<Email> sent_emails() const;

 private:
  Email compose(const factum::RecordedEvent& event) const;
  std::string customer_of(const std::string& stream_id) const;
  bool send(const Email& email);

  factum::EventStore& store_;
  std::atomic<std::uint64_t> delivered_{0};
  std::atomic<std::uint64_t> sent_{0};
  std::atomic<std::uint64_t> duplicates_{0};
  mutable std::mutex mu_;
  std::vector<Email> sent_emails_;
};

}  // namespace orders
