// samples/bank/events.hpp — the bank's facts: typed events stored in the stream of the
// account they happened to ("account-<id>").
//
// Every event is a plain struct with a type name and a Boost.Serialization `serialize`; the
// registry from register_events() encodes and decodes them. Each carries `at`, the business
// time it happened (the demo simulates a year; commands use the clock), which is what the
// statements print and the month-end rules of replay-with-new-logic go by. The store's own
// `recorded_at` is when it was committed.
//
// A transfer is three kinds of events in two streams, tied together by their metadata: the
// debit in the source stream (correlation id = the transfer's id), the credit in the target
// stream (causation id = the debit), and, when the target refuses the credit, a reversal in
// the source stream whose metadata.compensates names the debit.
//
// Thread-safety: plain value types.
#pragma once

#include <factum/factum.hpp>

#include <string>
#include <string_view>
#include <variant>

#include "money.hpp"

namespace bank {

struct AccountOpened {
  static constexpr std::string_view event_type = "bank.AccountOpened";
  std::string owner;
  Money overdraft_limit;  // how far below zero the balance may go
  factum::Timestamp at{};
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& owner& overdraft_limit& at;
  }
};

struct Deposited {
  static constexpr std::string_view event_type = "bank.Deposited";
  Money amount;
  std::string memo;
  factum::Timestamp at{};
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& amount& memo& at;
  }
};

struct Withdrawn {
  static constexpr std::string_view event_type = "bank.Withdrawn";
  Money amount;
  std::string memo;
  factum::Timestamp at{};
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& amount& memo& at;
  }
};

// The first leg of a transfer, in the source account's stream.
struct TransferDebited {
  static constexpr std::string_view event_type = "bank.TransferDebited";
  std::string to;  // the target account's id
  Money amount;
  std::string memo;
  factum::Timestamp at{};
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& to& amount& memo& at;
  }
};

// The second leg, in the target account's stream.
struct TransferCredited {
  static constexpr std::string_view event_type = "bank.TransferCredited";
  std::string from;  // the source account's id
  Money amount;
  std::string memo;
  factum::Timestamp at{};
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& from& amount& memo& at;
  }
};

// The compensation of a debit whose credit was refused: the money goes back to the source.
// Its metadata.compensates names the TransferDebited event.
struct TransferReversed {
  static constexpr std::string_view event_type = "bank.TransferReversed";
  std::string to;  // the target that refused
  Money amount;
  std::string reason;  // why the target refused
  factum::Timestamp at{};
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& to& amount& reason& at;
  }
};

struct AccountClosed {
  static constexpr std::string_view event_type = "bank.AccountClosed";
  factum::Timestamp at{};
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& at;
  }
};

using BankEvent = std::variant<AccountOpened, Deposited, Withdrawn, TransferDebited,
                               TransferCredited, TransferReversed, AccountClosed>;

// Registers every bank event type with `registry` and validates it.
void register_events(factum::EventRegistry& registry);

// The event types, for Projection::event_types().
std::vector<std::string> event_type_names();

// When the event happened (its `at`).
factum::Timestamp event_time(const BankEvent& event);

// The stream of account `id`: "account-<id>".
std::string stream_of(std::string_view account_id);
// The account id of stream "account-<id>".
std::string account_of(std::string_view stream_id);

}  // namespace bank
