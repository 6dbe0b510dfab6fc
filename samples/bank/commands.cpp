// samples/bank/commands.cpp — the one-step subcommands of factum-bank: open, deposit,
// withdraw, transfer, close, balance, statement, accounts, audit, replay-with-new-logic.
#include "commands.hpp"

#include <iostream>
#include <stdexcept>

#include "audit.hpp"
#include "bank.hpp"
#include "new_rule.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "store_file.hpp"

namespace bank {
namespace {

// Refuses an unknown account from its events, before the read models are brought up to date
// (which may write to the file).
void require_account(Bank& bank, const std::string& account) {
  if (!bank.load(account).exists()) throw std::runtime_error("no account " + account);
}

// The account's row in the read models.
AccountRow require_row(Bank& bank, const std::string& account) {
  require_account(bank, account);
  std::optional<AccountRow> row = bank.account(account);
  if (!row) throw std::runtime_error("no account " + account);
  return *row;
}

// Runs `fn(bank)` on the store at `db`, which must exist already.
template <class Fn>
int with_bank(const std::filesystem::path& db, Fn&& fn) {
  factum::EventStore store = open_store(db, false);
  Bank bank(store);
  return fn(bank);
}

}  // namespace

int open_command(const std::filesystem::path& db, const std::string& account,
                 const std::string& owner, const std::string& limit) {
  check_account_id(account);
  check_owner(account, owner);
  const Money overdraft_limit = Money::parse(limit);
  factum::EventStore store = open_store(db, true);
  Bank bank(store);
  bank.open(account, owner, overdraft_limit);
  std::cout << "opened " << account << "\n";
  print_account(std::cout, require_row(bank, account));
  return 0;
}

int deposit_command(const std::filesystem::path& db, const std::string& account,
                    const std::string& amount, const std::string& memo,
                    const std::string& reference) {
  check_account_id(account);
  if (!reference.empty()) check_reference(account, reference);
  const Money m = Money::parse(amount);
  return with_bank(db, [&](Bank& bank) {
    bank.deposit(account, m, memo, reference);
    std::cout << "deposited " << m.to_display() << " into " << account << "\n";
    print_account(std::cout, require_row(bank, account));
    return 0;
  });
}

int withdraw_command(const std::filesystem::path& db, const std::string& account,
                     const std::string& amount, const std::string& memo,
                     const std::string& reference) {
  check_account_id(account);
  if (!reference.empty()) check_reference(account, reference);
  const Money m = Money::parse(amount);
  return with_bank(db, [&](Bank& bank) {
    bank.withdraw(account, m, memo, reference);
    std::cout << "withdrew " << m.to_display() << " from " << account << "\n";
    print_account(std::cout, require_row(bank, account));
    return 0;
  });
}

int transfer_command(const std::filesystem::path& db, const std::string& from,
                     const std::string& to, const std::string& amount, const std::string& memo,
                     const std::string& reference) {
  check_account_id(from);
  check_account_id(to);
  if (!reference.empty()) check_reference(from, reference);
  const Money m = Money::parse(amount);
  return with_bank(db, [&](Bank& bank) {
    const TransferResult t = bank.transfer(from, to, m, memo, reference);
    if (!t.completed()) {
      throw std::runtime_error("transfer refused by " + to + " (" + t.refusal + "); " +
                               m.to_display() + " returned to " + from + " by event " +
                               t.reversal_id->to_string() + ", which compensates debit " +
                               t.debit_id.to_string());
    }
    std::cout << "transferred " << m.to_display() << " from " << from << " to " << to
              << " (transfer " << t.transfer_id.to_string() << ")\n";
    print_account(std::cout, require_row(bank, from));
    print_account(std::cout, require_row(bank, to));
    return 0;
  });
}

int close_command(const std::filesystem::path& db, const std::string& account) {
  check_account_id(account);
  return with_bank(db, [&](Bank& bank) {
    bank.close(account);
    std::cout << "closed " << account << "\n";
    print_account(std::cout, require_row(bank, account));
    return 0;
  });
}

int forget_command(const std::filesystem::path& db, const std::string& account) {
  check_account_id(account);
  return with_bank(db, [&](Bank& bank) {
    const factum::Position fact = bank.forget(account);
    std::cout << "forgot the owner of " << account << " (subject " << owner_subject(account)
              << ", fact at position " << fact
              << "): the name is erased; the balance, the statement and the audit are as "
                 "they were\n";
    print_account(std::cout, require_row(bank, account));
    return 0;
  });
}

int balance_command(const std::filesystem::path& db, const std::string& account) {
  return with_bank(db, [&](Bank& bank) {
    print_account(std::cout, require_row(bank, account));
    return 0;
  });
}

int statement_command(const std::filesystem::path& db, const std::string& account,
                      std::size_t last) {
  return with_bank(db, [&](Bank& bank) {
    require_account(bank, account);
    const std::optional<AccountStatement> s = bank.account_statement(account);  // one moment
    if (!s) throw std::runtime_error("no account " + account);
    print_statement(std::cout, s->row, s->lines, last);
    return 0;
  });
}

int accounts_command(const std::filesystem::path& db) {
  return with_bank(db, [&](Bank& bank) {
    const std::vector<AccountRow> rows = bank.accounts();
    print_accounts(std::cout, rows);
    Money total;
    for (const AccountRow& r : rows) total += r.balance;
    std::cout << rows.size() << " accounts, " << total.to_display() << " in all\n";
    return 0;
  });
}

int audit_command(const std::filesystem::path& db) {
  return with_bank(db, [&](Bank& bank) {
    std::string behind;  // a read model that cannot catch up is a finding, not a crash
    try {
      bank.sync_read_models();
    } catch (const std::exception& e) {
      behind = e.what();
    }
    AuditReport report = audit(bank.store(), bank.registry());
    if (!behind.empty()) report.differences.insert(report.differences.begin(), behind);
    for (const std::string& d : report.differences) std::cout << "audit: " << d << "\n";
    std::cout << report.verdict() << "\n";
    return report.ok() ? 0 : 1;
  });
}

int replay_command(const std::filesystem::path& db, std::size_t top, bool rebuild) {
  return with_bank(db, [&](Bank& bank) {
    bank.sync_read_models();
    factum::samples::Progress bar("replaying history with the new rule",
                                  bank.store().head_position());
    factum::Position shown = 0;
    build_new_rule(bank.store(), bank.registry(), rebuild,
                   [&](factum::Position done, factum::Position) {
                     if (done > shown) bar.advance(done - shown);
                     shown = std::max(shown, done);
                   });
    bar.finish();
    print_comparison(std::cout, compare_new_rule(bank.store()), FeeRule{}, top);
    return 0;
  });
}

}  // namespace bank
