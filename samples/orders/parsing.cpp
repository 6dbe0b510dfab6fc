// samples/orders/parsing.cpp — input rules of the orders domain (see parsing.hpp).
#include "orders/parsing.hpp"

#include <chrono>
#include <cstdio>
#include <set>

#include "orders/errors.hpp"
#include "orders/order.hpp"

namespace orders {

namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// True when `text` is 1..max characters, each alphanumeric or in `extra`.
bool made_of(std::string_view text, std::size_t max, std::string_view extra) {
  if (text.empty() || text.size() > max) return false;
  for (char c : text) {
    if (!is_alnum(c) && extra.find(c) == std::string_view::npos) return false;
  }
  return true;
}

std::string in_quotes(std::string_view text) { return "'" + std::string(text) + "'"; }

// Digits only, at most `max_digits` of them, as a number.
bool parse_digits(std::string_view text, std::size_t max_digits, std::int64_t& out) {
  if (text.empty() || text.size() > max_digits) return false;
  out = 0;
  for (char c : text) {
    if (!is_digit(c)) return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

std::uint32_t parse_quantity(std::string_view text, std::string_view item) {
  std::int64_t n = 0;
  if (!parse_digits(text, 5, n) || n < 1 || n > kMaxQuantity) {
    throw BadInput("bad quantity " + in_quotes(text) + " in " + in_quotes(item) +
                   ": expected a whole number from 1 to " + std::to_string(kMaxQuantity));
  }
  return static_cast<std::uint32_t>(n);
}

}  // namespace

void check_order_id(std::string_view id) {
  if (!made_of(id, 40, "-_") || !is_alnum(id.front())) {
    throw BadInput("bad order id " + in_quotes(id) +
                   ": use 1-40 letters, digits, '-' or '_', starting with a letter or digit");
  }
}

void check_customer(std::string_view customer) {
  if (!made_of(customer, 64, "._-+@")) {
    throw BadInput("bad customer " + in_quotes(customer) +
                   ": use 1-64 letters, digits, '.', '_', '-', '+' or '@'");
  }
}

void check_sku(std::string_view sku) {
  if (!made_of(sku, 32, "-_")) {
    throw BadInput("bad SKU " + in_quotes(sku) + ": use 1-32 letters, digits, '-' or '_'");
  }
}

void check_status(std::string_view status) {
  for (Status s : {Status::placed, Status::paid, Status::shipped, Status::delivered,
                   Status::cancelled, Status::refunded}) {
    if (to_string(s) == status) return;
  }
  throw BadInput("unknown status " + in_quotes(status) +
                 ": use placed, paid, shipped, delivered, cancelled or refunded");
}

void check_items(const std::vector<Item>& items) {
  if (items.empty()) throw BadInput("an order needs at least one item");
  if (items.size() > kMaxItems) {
    throw BadInput("an order holds at most " + std::to_string(kMaxItems) + " items");
  }
  std::set<std::string_view> seen;
  for (const Item& item : items) {
    check_sku(item.sku);
    if (!seen.insert(item.sku).second) {
      throw BadInput("SKU " + in_quotes(item.sku) +
                     " is listed twice: give it once, with its quantity");
    }
    if (item.quantity < 1 || item.quantity > kMaxQuantity) {
      throw BadInput("bad quantity " + std::to_string(item.quantity) + " of " +
                     in_quotes(item.sku));
    }
    if (item.unit_cents < 1 || item.unit_cents > kMaxUnitCents) {
      throw BadInput("bad price " + format_cents(item.unit_cents) + " of " + in_quotes(item.sku));
    }
  }
}

std::int64_t parse_amount(std::string_view text) {
  const std::size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  std::int64_t units = 0;
  std::int64_t cents = 0;
  const bool ok = parse_digits(whole, 7, units) &&
                  (dot == std::string_view::npos || parse_digits(fraction, 2, cents));
  if (fraction.size() == 1) cents *= 10;
  const std::int64_t amount = units * 100 + cents;
  if (!ok || amount < 1 || amount > kMaxUnitCents) {
    throw BadInput("malformed amount " + in_quotes(text) +
                   ": expected a price from 0.01 to 1000000.00, such as 12.50");
  }
  return amount;
}

std::string format_cents(std::int64_t cents) {
  const std::int64_t magnitude = cents < 0 ? -cents : cents;
  std::string fraction = std::to_string(magnitude % 100);
  if (fraction.size() < 2) fraction.insert(0, "0");
  return (cents < 0 ? "-" : "") + std::to_string(magnitude / 100) + "." + fraction;
}

std::string format_utc(factum::Timestamp time) {
  const auto seconds = std::chrono::floor<std::chrono::seconds>(time);
  const auto days = std::chrono::floor<std::chrono::days>(seconds);
  const std::chrono::year_month_day date(days);
  const std::chrono::hh_mm_ss clock(seconds - days);
  char text[32];
  std::snprintf(text, sizeof text, "%04d-%02u-%02u %02ld:%02ld:%02ld",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<long>(clock.hours().count()),
                static_cast<long>(clock.minutes().count()),
                static_cast<long>(clock.seconds().count()));
  return text;
}

Item parse_item(std::string_view text) {
  const std::size_t first = text.find(':');
  const std::size_t second = first == std::string_view::npos ? first : text.find(':', first + 1);
  if (second == std::string_view::npos || text.find(':', second + 1) != std::string_view::npos) {
    throw BadInput("bad item " + in_quotes(text) +
                   ": expected SKU:QTY:PRICE, such as mug-01:2:12.50");
  }
  Item item;
  item.sku = std::string(text.substr(0, first));
  check_sku(item.sku);
  item.quantity = parse_quantity(text.substr(first + 1, second - first - 1), text);
  const std::string_view price = text.substr(second + 1);
  try {
    item.unit_cents = parse_amount(price);
  } catch (const BadInput&) {
    throw BadInput("malformed amount " + in_quotes(price) + " in " + in_quotes(text) +
                   ": expected a price from 0.01 to 1000000.00, such as 12.50");
  }
  return item;
}

std::string email_of(std::string_view customer) {
  if (customer.find('@') != std::string_view::npos) return std::string(customer);
  return std::string(customer) + "@example.com";
}

}  // namespace orders
