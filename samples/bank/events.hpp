// samples/bank/events.hpp — the bank's facts: typed events stored in the stream of the
// account they happened to ("account-<id>").
//
// Every event is a plain struct with a type name and a Boost.Serialization `serialize`; the
// registry from register_events() encodes and decodes them. Each carries `at`, the business
// time it happened (the demo simulates a year; commands use the clock), which is what the
// statements print and the month-end rules of replay-with-new-logic go by. The store's own
// `recorded_at` is when it was committed.
//
// Personal data (docs/erasure.md): the owner's name in AccountOpened is a
// factum::Personal value of the subject "owner:<account id>"; forgetting that subject (`factum-bank
// forget`, closed accounts only) erases it and nothing else. Account ids, amounts and memos are
// not personal data here.
//
// A transfer is three kinds of events in two streams, tied together by their metadata: the
// debit in the source stream (correlation id = the transfer's id), the credit in the target
// stream (causation id = the debit), and, when the target refuses the credit, a reversal in
// the source stream whose metadata.compensates names the debit.
//
// Thread-safety: plain value types.
#pragma once

#include <factum/factum.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "money.hpp"

namespace bank {

// The subject of an account owner's personal data: "owner:<account id>" (an account id is a
// valid subject id, and says nothing about the person).
std::string owner_subject(std::string_view account_id);
// The account of a subject "owner:<id>"; nullopt for any other subject.
std::optional<std::string> account_of_subject(std::string_view subject);

// An owner's name: personal data of the account's owner subject in events written now, so
// `factum-bank forget` erases it; plain text in AccountOpened events of schema 1 (written
// before the bank kept personal data), upcast to this form, which can never be erased.
struct OwnerName {
  std::optional<factum::Personal<std::string>> personal;
  std::string plain;  // schema 1 only

  static OwnerName of(std::string subject, std::string name) {
    return OwnerName{factum::Personal<std::string>(std::move(subject), std::move(name)), {}};
  }
  static OwnerName legacy(std::string name) { return OwnerName{std::nullopt, std::move(name)}; }

  // Its subject was forgotten (or it was decoded without the store's keyring): the name is gone.
  bool erased() const noexcept { return personal && !personal->has_value(); }
  // The name; "" when it is erased.
  std::string text() const {
    if (!personal) return plain;
    return personal->has_value() ? personal->value() : std::string();
  }

  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& personal& plain;
  }
  friend bool operator==(const OwnerName&, const OwnerName&) = default;
};

// Schema 2: the owner's name is personal data.
struct AccountOpened {
  static constexpr std::string_view event_type = "bank.AccountOpened";
  static constexpr std::uint32_t schema_version = 2;
  OwnerName owner;
  Money overdraft_limit;  // how far below zero the balance may go
  factum::Timestamp at{};
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& owner& overdraft_limit& at;
  }
};

// The layout of schema 1 (a plain owner name), read by an upcaster (register_events).
struct AccountOpenedV1 {
  static constexpr std::string_view event_type = "bank.AccountOpened";
  static constexpr std::uint32_t schema_version = 1;
  std::string owner;
  Money overdraft_limit;
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
// The tag (factum/eventstore/tags.hpp) of a payment reference: "payment:INV-2024-0042". A
// reference is used once across all accounts, checked by query over this tag (Bank, docs/dcb.md).
// A reference is an id of the payment, never free text about a person (tags are not erasable).
std::string reference_tag(std::string_view reference);
std::string stream_of(std::string_view account_id);
// The account id of stream "account-<id>".
std::string account_of(std::string_view stream_id);

}  // namespace bank
