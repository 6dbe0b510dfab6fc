// samples/bank/account.hpp — the Account aggregate: a bank account's state, derived only from
// its events, and the commands that check its invariants before raising new ones.
//
// Invariants, each refused with a Refused naming the account:
//   - an account is opened once; every other command needs it open (a closed account refuses
//     everything; reads still work);
//   - amounts are positive;
//   - no overdraft past the account's limit: balance - amount >= -overdraft_limit;
//   - no balance above Money::max();
//   - an account closes only with a zero balance.
// The compensating reversal of a transfer is the one command that is always accepted: it
// corrects history that has already happened.
//
// Thread-safety: an Account is a plain value used by one thread at a time.
#pragma once

#include <factum/factum.hpp>

#include <stdexcept>
#include <string>

#include "events.hpp"
#include "money.hpp"

namespace bank {

// A command the bank refuses. The message names the account; reason() says which rule.
class Refused : public std::runtime_error {
 public:
  enum class Reason {
    invalid,          // malformed input: an account id, an owner, an amount of zero
    unknown_account,  // no such account
    already_open,     // open of an account that exists
    closed,           // the account is closed
    overdraft,        // past the overdraft limit
    balance_limit,    // above Money::max()
    not_empty,        // close with a balance left
    still_open,       // forget the owner of an open account
    not_erasable,     // forget an owner forgotten already, or stored in plain text (schema 1)
    reference_used,   // a payment reference used already, in any account
  };
  Refused(Reason reason, std::string account, const std::string& message)
      : std::runtime_error(message), reason_(reason), account_(std::move(account)) {}
  Reason reason() const noexcept { return reason_; }
  const std::string& account() const noexcept { return account_; }

 private:
  Reason reason_;
  std::string account_;
};

// Refuses an account id unless it is 1-40 letters, digits, '-', '_' or '.', starting with a
// letter or digit ("acc-1", "savings.ann").
void check_account_id(std::string_view id);
// Refuses an owner's name unless it is 1-80 characters without control characters.
void check_owner(std::string_view account, std::string_view owner);
// Refuses a memo over 200 characters or with control characters (it is printed in tables).
void check_memo(std::string_view account, std::string_view memo);
// Refuses a payment reference unless it is 1-40 letters, digits, '-', '_', '.' or '/',
// starting with a letter or digit ("INV-2024-0042"): an id, which a tag can carry.
void check_reference(std::string_view account, std::string_view reference);

class Account
    : public factum::Aggregate<Account, AccountOpened, Deposited, Withdrawn, TransferDebited,
                               TransferCredited, TransferReversed, AccountClosed> {
 public:
  static constexpr std::string_view category = "account";  // streams "account-<id>"
  // 2: the owner's name is personal data (encrypted in snapshots too); version 1 snapshots
  // (a plain name) are not read: the account is folded from its events instead.
  static constexpr std::uint32_t snapshot_version = 2;

  // Commands: each checks every invariant, then raises one event.
  void open(std::string owner, Money overdraft_limit, factum::Timestamp at);
  void deposit(Money amount, std::string memo, factum::Timestamp at);
  void withdraw(Money amount, std::string memo, factum::Timestamp at);
  void debit_transfer(std::string to, Money amount, std::string memo, factum::Timestamp at);
  void credit_transfer(std::string from, Money amount, std::string memo, factum::Timestamp at);
  void reverse_transfer(std::string to, Money amount, std::string reason, factum::Timestamp at);
  void close(factum::Timestamp at);
  // Throws Refused unless the owner may be forgotten: the account exists, is closed, and its
  // owner's name is personal data not forgotten yet.
  void check_forgettable() const;

  // Folding history: no checks, history is history.
  void apply(const AccountOpened& e);
  void apply(const Deposited& e) { balance_ += e.amount; }
  void apply(const Withdrawn& e) { balance_ -= e.amount; }
  void apply(const TransferDebited& e) { balance_ -= e.amount; }
  void apply(const TransferCredited& e) { balance_ += e.amount; }
  void apply(const TransferReversed& e) { balance_ += e.amount; }
  void apply(const AccountClosed&) { open_ = false; }

  bool exists() const noexcept { return exists_; }
  bool is_open() const noexcept { return open_; }
  // The owner's name; "" once the owner was forgotten.
  std::string owner() const { return owner_.text(); }
  const OwnerName& owner_name() const noexcept { return owner_; }
  Money balance() const noexcept { return balance_; }
  Money overdraft_limit() const noexcept { return limit_; }
  // What may still be withdrawn: balance + overdraft limit (0 when closed).
  Money available() const noexcept { return open_ ? balance_ + limit_ : Money{}; }
  // "open", "closed", or "unknown" for an account never opened.
  std::string status() const;

  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& exists_& open_& owner_& limit_& balance_;
  }

 private:
  void require_open() const;
  void require_positive(Money amount) const;
  void require_room_for(Money amount) const;
  void require_funds_for(Money amount) const;

  bool exists_ = false;
  bool open_ = false;
  OwnerName owner_;
  Money limit_;
  Money balance_;
};

}  // namespace bank
