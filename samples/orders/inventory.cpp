// samples/orders/inventory.cpp — inventory reservations per SKU: reserved on placement,
// released on cancellation, moved to shipped on shipment (see projections.hpp).
#include <utility>

#include "orders/projections.hpp"

namespace orders {

namespace {

struct Line {
  std::string sku;
  std::int64_t quantity = 0;
};

// The open lines of `order`, then forgets them.
std::vector<Line> take_lines(factum::ProjectionContext& ctx, const std::string& order) {
  std::vector<Line> lines;
  ctx.sql().query("SELECT sku, quantity FROM " + ctx.table("inventory_lines") +
                      " WHERE order_id = ?1 ORDER BY sku",
                  {order}, [&](const factum::SqlRow& row) {
                    lines.push_back({row.text(0), row.integer(1)});
                  });
  ctx.sql().execute("DELETE FROM " + ctx.table("inventory_lines") + " WHERE order_id = ?1",
                    {order});
  return lines;
}

// Adds `reserved` and `shipped` units to a SKU's row (creating it).
void add(factum::ProjectionContext& ctx, const std::string& sku, std::int64_t reserved,
         std::int64_t shipped) {
  // The row's own columns qualified by its table: PostgreSQL finds a bare `reserved` ambiguous
  // (excluded.reserved); SQLite accepts either spelling.
  const std::string table = ctx.table("inventory");
  ctx.sql().execute("INSERT INTO " + table +
                        " (sku, reserved, shipped) VALUES (?1, ?2, ?3) ON CONFLICT (sku) DO UPDATE"
                        " SET reserved = " +
                        table + ".reserved + excluded.reserved, shipped = " + table +
                        ".shipped + excluded.shipped",
                    {sku, reserved, shipped});
}

void reserve(factum::ProjectionContext& ctx, const std::string& order, const OrderPlaced& e) {
  for (const Item& item : e.items) {
    const auto quantity = static_cast<std::int64_t>(item.quantity);
    ctx.sql().execute("INSERT INTO " + ctx.table("inventory_lines") +
                          " (order_id, sku, quantity) VALUES (?1, ?2, ?3)",
                      {order, item.sku, quantity});
    add(ctx, item.sku, quantity, 0);
  }
}

}  // namespace

std::vector<std::string> Inventory::event_types() const {
  return {std::string(OrderPlaced::event_type), std::string(OrderShipped::event_type),
          std::string(OrderCancelled::event_type)};
}

void Inventory::reset(factum::ProjectionContext& ctx) {
  ctx.sql().execute(factum::table_ddl(
      ctx.sql(),
      "CREATE TABLE " + ctx.table("inventory") +
          " (sku TEXT PRIMARY KEY, reserved INTEGER NOT NULL, shipped INTEGER NOT NULL)"));
  ctx.sql().execute(factum::table_ddl(
      ctx.sql(), "CREATE TABLE " + ctx.table("inventory_lines") +
                     " (order_id TEXT NOT NULL, sku TEXT NOT NULL, quantity INTEGER NOT NULL,"
                     " PRIMARY KEY (order_id, sku))"));
}

void Inventory::apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) {
  const std::string order = order_id_of(event.stream_id);
  if (event.type == OrderPlaced::event_type) {
    reserve(ctx, order, registry().decode<OrderPlaced>(event));
    return;
  }
  const bool shipped = event.type == OrderShipped::event_type;  // else cancelled: release
  for (const Line& line : take_lines(ctx, order)) {
    add(ctx, line.sku, -line.quantity, shipped ? line.quantity : 0);
  }
}

}  // namespace orders
