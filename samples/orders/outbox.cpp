// samples/orders/outbox.cpp — the notification outbox: e-mails as effects, delivered at least
// once by the engine and sent once thanks to the event's idempotency key (see projections.hpp).
#include "orders/order.hpp"
#include "orders/parsing.hpp"
#include "orders/projections.hpp"

namespace orders {

namespace {

// The subject line of the e-mail an event causes.
std::string subject_of(const std::string& order, const OrderEvent& event) {
  return std::visit(
      factum::overloaded{
          [&](const OrderPlaced& e) {
            return "Order " + order + " confirmed: " + format_cents(total_cents(e.items));
          },
          [&](const OrderShipped& e) {
            return "Order " + order + " is on its way (tracking " + e.tracking + ")";
          },
          [&](const OrderDelivered&) { return "Order " + order + " was delivered"; },
          [&](const OrderCancelled&) { return "Order " + order + " was cancelled"; },
          [&](const PaymentRefunded& e) {
            return "Refund of " + format_cents(e.amount_cents) + " for order " + order;
          },
          [&](const PaymentProcessed&) { return "Payment received for order " + order; },
      },
      event);
}

}  // namespace

Outbox::Outbox(factum::EventStore& store) : store_(store) {
  store_.write_sql([](factum::Sql& sql) {
    sql.execute(factum::table_ddl(
        sql,
        "CREATE TABLE IF NOT EXISTS sent_emails (key TEXT PRIMARY KEY, order_id TEXT NOT NULL,"
        " recipient TEXT NOT NULL, subject TEXT NOT NULL, sent_at TEXT NOT NULL)"));
  });
}

std::vector<std::string> Outbox::event_types() const {
  return {std::string(OrderPlaced::event_type), std::string(OrderShipped::event_type),
          std::string(OrderDelivered::event_type), std::string(OrderCancelled::event_type),
          std::string(PaymentRefunded::event_type)};
}

// Runs on the engine's thread, outside any transaction (external target): ctx.sql() is not
// available, so the "mail service" is called through the store like any other client.
void Outbox::apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) {
  Email email = compose(event);
  email.key = ctx.key().to_string();
  ++delivered_;
  if (send(email)) {
    ++sent_;
    std::lock_guard lock(mu_);
    sent_emails_.push_back(std::move(email));
  } else {
    ++duplicates_;
  }
}

std::vector<Email> Outbox::sent_emails() const {
  std::lock_guard lock(mu_);
  return sent_emails_;
}

Email Outbox::compose(const factum::RecordedEvent& event) const {
  const OrderEvent decoded = registry().decode_variant<OrderEvent>(event);
  Email email;
  email.order_id = order_id_of(event.stream_id);
  const auto* placed = std::get_if<OrderPlaced>(&decoded);
  email.recipient = email_of(placed != nullptr ? placed->customer : customer_of(event.stream_id));
  email.subject = subject_of(email.order_id, decoded);
  return email;
}

// The customer named by the first event of the order's stream (its OrderPlaced).
std::string Outbox::customer_of(const std::string& stream_id) const {
  for (const factum::RecordedEvent& first : store_.read_stream(stream_id)) {
    return registry().decode<OrderPlaced>(first).customer;
  }
  throw factum::NotFound("order stream " + stream_id + " has no events");
}

// The mail service's one call: sends unless the key was sent before. True when it sent.
bool Outbox::send(const Email& email) {
  std::int64_t inserted = 0;
  store_.write_sql([&](factum::Sql& sql) {
    // The time of sending, in UTC, as each database spells it.
    const char* now = sql.dialect() == factum::SqlDialect::postgres
                          ? "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"
                          : "strftime('%Y-%m-%d %H:%M:%S', 'now')";
    inserted = sql.execute(
        std::string("INSERT INTO sent_emails (key, order_id, recipient, subject, sent_at)"
                    " VALUES (?1, ?2, ?3, ?4, ") +
            now + ") ON CONFLICT (key) DO NOTHING",
        {email.key, email.order_id, email.recipient, email.subject});
  });
  return inserted == 1;
}

}  // namespace orders
