// samples/bank/account.cpp — the Account aggregate's commands and invariants.
#include "account.hpp"

#include <algorithm>

namespace bank {
namespace {

bool id_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

bool has_control(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

}  // namespace

void check_owner(std::string_view account, std::string_view owner) {
  if (owner.empty() || owner.size() > 80 || has_control(owner)) {
    throw Refused(Refused::Reason::invalid, std::string(account),
                  "the owner of account " + std::string(account) +
                      " must be 1-80 characters without control characters");
  }
}

void check_account_id(std::string_view id) {
  const bool ok = !id.empty() && id.size() <= 40 && id.front() != '-' && id.front() != '_' &&
                  id.front() != '.' && std::all_of(id.begin(), id.end(), id_char);
  if (!ok) {
    throw Refused(Refused::Reason::invalid, std::string(id),
                  "invalid account id '" + std::string(id) +
                      "': use 1-40 letters, digits, '-', '_' or '.', starting with a letter or "
                      "digit");
  }
}

void check_memo(std::string_view account, std::string_view memo) {
  if (memo.size() > 200 || has_control(memo)) {
    throw Refused(Refused::Reason::invalid, std::string(account),
                  "the memo for account " + std::string(account) +
                      " must be at most 200 characters without control characters");
  }
}

void check_reference(std::string_view account, std::string_view reference) {
  const auto ok_char = [](char c) { return id_char(c) || c == '/'; };
  const bool ok = !reference.empty() && reference.size() <= 40 && id_char(reference.front()) &&
                  reference.front() != '-' && reference.front() != '_' &&
                  reference.front() != '.' &&
                  std::all_of(reference.begin(), reference.end(), ok_char);
  if (!ok) {
    throw Refused(Refused::Reason::invalid, std::string(account),
                  "invalid payment reference '" + std::string(reference) + "' for account " +
                      std::string(account) +
                      ": use 1-40 letters, digits, '-', '_', '.' or '/', starting with a letter "
                      "or digit");
  }
}

void Account::open(std::string owner, Money overdraft_limit, factum::Timestamp at) {
  if (exists_) throw Refused(Refused::Reason::already_open, id(), "account " + id() + " exists");
  check_owner(id(), owner);
  if (overdraft_limit < Money{} || overdraft_limit > Money::max()) {
    throw Refused(Refused::Reason::invalid, id(), "invalid overdraft limit for account " + id());
  }
  raise(AccountOpened{OwnerName::of(owner_subject(id()), std::move(owner)), overdraft_limit, at});
}

void Account::deposit(Money amount, std::string memo, factum::Timestamp at) {
  require_open();
  require_positive(amount);
  require_room_for(amount);
  raise(Deposited{amount, std::move(memo), at});
}

void Account::withdraw(Money amount, std::string memo, factum::Timestamp at) {
  require_open();
  require_positive(amount);
  require_funds_for(amount);
  raise(Withdrawn{amount, std::move(memo), at});
}

void Account::debit_transfer(std::string to, Money amount, std::string memo, factum::Timestamp at) {
  require_open();
  require_positive(amount);
  require_funds_for(amount);
  raise(TransferDebited{std::move(to), amount, std::move(memo), at});
}

void Account::credit_transfer(std::string from, Money amount, std::string memo,
                              factum::Timestamp at) {
  require_open();
  require_positive(amount);
  require_room_for(amount);
  raise(TransferCredited{std::move(from), amount, std::move(memo), at});
}

void Account::reverse_transfer(std::string to, Money amount, std::string reason,
                               factum::Timestamp at) {
  if (!exists_) throw Refused(Refused::Reason::unknown_account, id(), "no account " + id());
  raise(TransferReversed{std::move(to), amount, std::move(reason), at});
}

void Account::close(factum::Timestamp at) {
  require_open();
  if (!balance_.zero()) {
    throw Refused(Refused::Reason::not_empty, id(),
                  "account " + id() + " still holds " + balance_.to_display() +
                      "; withdraw or transfer it before closing");
  }
  raise(AccountClosed{at});
}

void Account::apply(const AccountOpened& e) {
  exists_ = true;
  open_ = true;
  owner_ = e.owner;
  limit_ = e.overdraft_limit;
}

void Account::check_forgettable() const {
  if (!exists_) throw Refused(Refused::Reason::unknown_account, id(), "no account " + id());
  if (open_) {
    throw Refused(Refused::Reason::still_open, id(),
                  "account " + id() +
                      " is open: the bank keeps the name of whom it holds money for while the "
                      "account is open; close it first (its balance must be zero), then forget "
                      "its owner");
  }
  if (owner_.erased()) {
    throw Refused(Refused::Reason::not_erasable, id(),
                  "the owner of account " + id() + " was forgotten already");
  }
  if (!owner_.personal) {
    throw Refused(Refused::Reason::not_erasable, id(),
                  "account " + id() +
                      " was opened before factum-bank kept owner names as personal data: its "
                      "owner's name is in the log in plain text, which no forget can erase");
  }
}

std::string Account::status() const {
  if (!exists_) return "unknown";
  return open_ ? "open" : "closed";
}

void Account::require_open() const {
  if (!exists_) throw Refused(Refused::Reason::unknown_account, id(), "no account " + id());
  if (!open_) throw Refused(Refused::Reason::closed, id(), "account " + id() + " is closed");
}

void Account::require_positive(Money amount) const {
  if (!amount.positive() || amount > Money::max()) {
    throw Refused(Refused::Reason::invalid, id(),
                  "the amount for account " + id() + " must be positive and at most " +
                      Money::max().to_display() + ", not " + amount.to_display());
  }
}

void Account::require_room_for(Money amount) const {
  if (amount > Money::max() - balance_) {
    throw Refused(Refused::Reason::balance_limit, id(),
                  "account " + id() + " cannot hold more than " + Money::max().to_display());
  }
}

void Account::require_funds_for(Money amount) const {
  if (balance_ - amount < -limit_) {
    throw Refused(Refused::Reason::overdraft, id(),
                  "insufficient funds in account " + id() + ": " + amount.to_display() +
                      " requested, " + available().to_display() + " available (balance " +
                      balance_.to_display() + ", overdraft limit " + limit_.to_display() + ")");
  }
}

}  // namespace bank
