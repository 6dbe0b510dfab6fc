// samples/bank/money.cpp — strict parsing and formatting of Money.
#include "money.hpp"

namespace bank {
namespace {

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

[[noreturn]] void refuse(std::string_view text, const std::string& why) {
  throw InvalidAmount("malformed amount '" + std::string(text) + "': " + why);
}

// Reads a run of digits into `value`; refuses one that would pass Money::max().
std::int64_t read_digits(std::string_view text, std::string_view digits, std::int64_t limit) {
  std::int64_t value = 0;
  for (const char c : digits) {
    if (!is_digit(c)) refuse(text, "expected digits with up to two decimals, e.g. 100 or 100.50");
    value = value * 10 + (c - '0');
    if (value > limit) refuse(text, "above the largest amount, " + Money::max().to_display());
  }
  return value;
}

}  // namespace

Money Money::parse(std::string_view text) {
  if (text.empty()) refuse(text, "it is empty");
  const std::size_t point = text.find('.');
  const std::string_view whole = text.substr(0, point);
  const std::string_view cents = point == std::string_view::npos ? "" : text.substr(point + 1);
  if (whole.empty()) refuse(text, "expected a digit before the decimal point");
  if (point != std::string_view::npos && (cents.empty() || cents.size() > 2)) {
    refuse(text, "expected one or two digits after the decimal point");
  }
  const std::int64_t major = read_digits(text, whole, max().minor() / 100);
  std::int64_t minor = read_digits(text, cents, 99);
  if (cents.size() == 1) minor *= 10;
  const Money m(major * 100 + minor);
  if (m > max()) refuse(text, "above the largest amount, " + max().to_display());
  return m;
}

std::string Money::to_string() const {
  const std::uint64_t magnitude =
      minor_ < 0 ? 0 - static_cast<std::uint64_t>(minor_) : static_cast<std::uint64_t>(minor_);
  const std::uint64_t cents = magnitude % 100;
  return (minor_ < 0 ? "-" : "") + std::to_string(magnitude / 100) + (cents < 10 ? ".0" : ".") +
         std::to_string(cents);
}

std::string Money::to_display() const {
  const std::uint64_t magnitude =
      minor_ < 0 ? 0 - static_cast<std::uint64_t>(minor_) : static_cast<std::uint64_t>(minor_);
  const std::uint64_t cents = magnitude % 100;
  return (minor_ < 0 ? "-" : "") + group_thousands(magnitude / 100) + (cents < 10 ? ".0" : ".") +
         std::to_string(cents);
}

std::string group_thousands(std::uint64_t n) {
  std::string digits = std::to_string(n);
  for (std::size_t i = digits.size(); i > 3; i -= 3) digits.insert(i - 3, 1, ',');
  return digits;
}

}  // namespace bank
