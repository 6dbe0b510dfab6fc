// samples/orders/parsing.hpp — the orders domain's input rules: order ids, customers, SKUs,
// items written "SKU:QTY:PRICE", and amounts of money ("12.50" <-> 1250 cents); and the
// formatting of money and times in the program's output.
//
// Every check throws BadInput with a one-line message naming the offending text.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <factum/factum.hpp>

#include "orders/events.hpp"

namespace orders {

inline constexpr std::uint32_t kMaxQuantity = 10000;
inline constexpr std::int64_t kMaxUnitCents = 100'000'000;  // 1,000,000.00
inline constexpr std::size_t kMaxItems = 50;

// An order id: 1-40 letters, digits, '-' or '_', starting with a letter or digit ("o-7").
void check_order_id(std::string_view id);
// A customer: 1-64 letters, digits, '.', '_', '-', '+' or '@' ("ann", "ann@example.com").
void check_customer(std::string_view customer);
// A SKU: 1-32 letters, digits, '-' or '_' ("mug-01").
void check_sku(std::string_view sku);
// A status to filter the board by: placed, paid, shipped, delivered, cancelled or refunded.
void check_status(std::string_view status);
// The items of an order: 1-50 of them, each SKU at most once, quantities and prices in range.
void check_items(const std::vector<Item>& items);

// "12.50", "12.5" or "12" -> 1250 cents; refuses signs, exponents, more than two decimals,
// zero, and amounts above 1,000,000.00.
std::int64_t parse_amount(std::string_view text);
// 1250 -> "12.50"; -5 -> "-0.05".
std::string format_cents(std::int64_t cents);
// "2024-05-01 12:30:05" (UTC, whole seconds).
std::string format_utc(factum::Timestamp time);
// "mug-01:2:12.50" -> {mug-01, 2, 1250}.
Item parse_item(std::string_view text);

// The address the outbox writes to: the customer itself when it holds an '@', otherwise
// "<customer>@example.com".
std::string email_of(std::string_view customer);

}  // namespace orders
