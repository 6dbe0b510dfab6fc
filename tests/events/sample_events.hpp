// Event types shared by the typed-event tests: every kind of field the samples use.
#pragma once

#include <factum/factum.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace factum::test {

enum class Currency : std::uint16_t { eur = 978, usd = 840, jpy = 392 };

struct Money {
  std::int64_t minor_units = 0;  // cents, never floating point
  Currency currency = Currency::eur;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& minor_units& currency;
  }
  friend bool operator==(const Money&, const Money&) = default;
};

struct Address {
  std::string street;
  std::optional<std::string> unit;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& BOOST_SERIALIZATION_NVP(street) & BOOST_SERIALIZATION_NVP(unit);
  }
  friend bool operator==(const Address&, const Address&) = default;
};

// Every kind of field at once.
struct EverythingHappened {
  static constexpr std::string_view event_type = "test.EverythingHappened";
  static constexpr std::uint32_t schema_version = 1;
  std::string text;
  std::int8_t i8 = 0;
  std::uint8_t u8 = 0;
  std::int16_t i16 = 0;
  std::uint16_t u16 = 0;
  std::int32_t i32 = 0;
  std::uint32_t u32 = 0;
  std::int64_t i64 = 0;
  std::uint64_t u64 = 0;
  bool flag = false;
  double ratio = 0;
  Money amount;
  std::chrono::sys_time<std::chrono::microseconds> at{};
  std::chrono::milliseconds timeout{0};
  std::optional<std::int32_t> maybe_number;
  std::optional<Address> maybe_address;
  std::vector<std::string> tags;
  std::vector<Money> history;
  std::map<std::string, std::int64_t> counters;
  std::set<std::uint32_t> ids;
  std::array<std::uint8_t, 4> ip{};
  std::pair<std::string, int> pair;
  Currency currency = Currency::usd;
  Address address;

  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& text& i8& u8& i16& u16& i32& u32& i64& u64& flag& ratio& amount& at& timeout& maybe_number&
        maybe_address& tags& history& counters& ids& ip& pair& currency& address;
  }
  friend bool operator==(const EverythingHappened&, const EverythingHappened&) = default;
};

// A bank event in three schema versions, as code evolves:
//   v1: {account, amount in whole euros}
//   v2: {account, amount_minor in cents}
//   v3: {account, amount as Money, note}
struct MoneyDepositedV1 {
  static constexpr std::string_view event_type = "bank.Deposit";  // its name back then
  static constexpr std::uint32_t schema_version = 1;
  std::string account;
  std::int32_t euros = 0;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& account& euros;
  }
};

struct MoneyDepositedV2 {
  static constexpr std::string_view event_type = "bank.MoneyDeposited";
  static constexpr std::uint32_t schema_version = 2;
  std::string account;
  std::int64_t amount_minor = 0;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& account& amount_minor;
  }
};

struct MoneyDeposited {
  static constexpr std::string_view event_type = "bank.MoneyDeposited";
  static constexpr std::uint32_t schema_version = 3;
  std::string account;
  Money amount;
  std::string note;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& account& amount& note;
  }
  friend bool operator==(const MoneyDeposited&, const MoneyDeposited&) = default;
};

struct MoneyWithdrawn {
  static constexpr std::string_view event_type = "bank.MoneyWithdrawn";
  std::string account;
  Money amount;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& account& amount;
  }
  friend bool operator==(const MoneyWithdrawn&, const MoneyWithdrawn&) = default;
};

struct AccountOpened {
  static constexpr std::string_view event_type = "bank.AccountOpened";
  std::string account;
  std::string owner;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& account& owner;
  }
  friend bool operator==(const AccountOpened&, const AccountOpened&) = default;
};

EverythingHappened full_everything();

}  // namespace factum::test
