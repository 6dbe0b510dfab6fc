// samples/bank/money.hpp — an amount of money as an integer count of minor units (cents).
//
// Money never touches floating point: "100.50" parses to 10050 minor units, and 10050 formats
// back as "100.50". Parsing is strict, because an amount typed on a command line must mean
// exactly one thing: digits, optionally a point and one or two more digits. "100", "100.5" and
// "100.50" are accepted; "1e3", "-5", "+5", "10.123", "1,000", " 5", "5.", ".5", "abc" and ""
// are refused with InvalidAmount, which quotes the text. Amounts are bounded by Money::max()
// (just under a trillion), so sums of thousands of them never overflow.
//
// Thread-safety: a plain value type.
#pragma once

#include <compare>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace bank {

// An amount that is not one: malformed text, or out of range.
class InvalidAmount : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Money {
 public:
  constexpr Money() noexcept = default;
  static constexpr Money from_minor(std::int64_t minor) noexcept { return Money(minor); }
  // The largest amount parse accepts and a balance may reach: 999,999,999,999.99.
  static constexpr Money max() noexcept { return Money(99'999'999'999'999); }

  // Parses "123", "123.4" or "123.45". Throws InvalidAmount naming the text otherwise.
  static Money parse(std::string_view text);

  constexpr std::int64_t minor() const noexcept { return minor_; }
  constexpr bool positive() const noexcept { return minor_ > 0; }
  constexpr bool zero() const noexcept { return minor_ == 0; }

  // "-1234.50": what parse reads back (with a '-' for a negative amount).
  std::string to_string() const;
  // "-1,234.50": thousands grouped, for people.
  std::string to_display() const;

  constexpr Money operator-() const noexcept { return Money(-minor_); }
  constexpr Money operator+(Money other) const noexcept { return Money(minor_ + other.minor_); }
  constexpr Money operator-(Money other) const noexcept { return Money(minor_ - other.minor_); }
  constexpr Money& operator+=(Money other) noexcept {
    minor_ += other.minor_;
    return *this;
  }
  constexpr Money& operator-=(Money other) noexcept {
    minor_ -= other.minor_;
    return *this;
  }
  friend constexpr auto operator<=>(Money, Money) noexcept = default;

  // Stored in event payloads and snapshots as the int64 count of minor units.
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& minor_;
  }

 private:
  constexpr explicit Money(std::int64_t minor) noexcept : minor_(minor) {}
  std::int64_t minor_ = 0;
};

// Groups the digits of a count by thousands: 1234567 -> "1,234,567".
std::string group_thousands(std::uint64_t n);

}  // namespace bank
