// samples/orders/order_board.cpp — the order board: one row per order with its customer,
// status, total, refunded amount and when it last changed (see projections.hpp).
#include "orders/order.hpp"
#include "orders/parsing.hpp"
#include "orders/projections.hpp"

namespace orders {

void OrderBoard::reset(factum::ProjectionContext& ctx) {
  ctx.sql().execute(factum::table_ddl(
      ctx.sql(), "CREATE TABLE " + ctx.table("order_board") +
                     " (order_id TEXT PRIMARY KEY, customer TEXT NOT NULL, status TEXT NOT NULL,"
                     " total_cents INTEGER NOT NULL, refunded_cents INTEGER NOT NULL,"
                     " updated TEXT NOT NULL, last_position INTEGER NOT NULL)"));
}

void OrderBoard::apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) {
  const OrderEvent decoded = registry().decode_variant<OrderEvent>(event);
  const std::string order = order_id_of(event.stream_id);
  const std::string updated = format_utc(event.recorded_at);
  const auto position = static_cast<std::int64_t>(event.position);
  if (const auto* placed = std::get_if<OrderPlaced>(&decoded)) {
    ctx.sql().execute("INSERT INTO " + ctx.table("order_board") +
                          " (order_id, customer, status, total_cents, refunded_cents, updated,"
                          " last_position) VALUES (?1, ?2, 'placed', ?3, 0, ?4, ?5)",
                      {order, placed->customer, total_cents(placed->items), updated, position});
    return;
  }
  const auto* refund = std::get_if<PaymentRefunded>(&decoded);
  const std::int64_t refunded = refund != nullptr ? refund->amount_cents : 0;
  // A cancelled order stays cancelled when the refund of its payment follows.
  ctx.sql().execute(
      "UPDATE " + ctx.table("order_board") +
          " SET status = CASE WHEN status = 'cancelled' THEN status ELSE ?2 END,"
          " refunded_cents = refunded_cents + ?3, updated = ?4, last_position = ?5"
          " WHERE order_id = ?1",
      {order, std::string(to_string(status_after(decoded))), refunded, updated, position});
}

}  // namespace orders
