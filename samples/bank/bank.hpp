// samples/bank/bank.hpp — the bank as a service on a factum::EventStore: commands on accounts
// (through the Account aggregate and a Repository) and reads of the read models (balances and
// statements, projected inline into the store's file).
//
//   factum::StoreOptions options;                       // owners' names need a KEK
//   options.personal_data.key_provider = std::make_shared<factum::FileKeyProvider>(kek);
//   auto store = factum::EventStore::open("bank.db", options);
//   bank::Bank bank(store);
//   bank.open("acc-1", "Ann Smith", bank::Money::parse("500"));     // overdraft limit 500.00
//   bank.deposit("acc-1", bank::Money::parse("100.00"));
//   bank::TransferResult t = bank.transfer("acc-1", "acc-2", bank::Money::parse("30"));
//   std::optional<bank::AccountRow> row = bank.account("acc-1");  // from the read model
//
// Every command checks its invariants before it writes: a refused command throws Refused
// (naming the account) and leaves the file untouched — the projections are only started, which
// records their state in the file, once a command is about to write. After a command returns,
// the read models already show it (inline projections commit with the events).
//
// A transfer is a small saga over two aggregates: the debit is appended to the source stream,
// then the credit to the target stream; when the target refuses the credit (it is closed, or
// would pass its balance limit), a compensating TransferReversed is appended to the source,
// with metadata.compensates = the debit's id. All legs share the transfer's correlation id;
// the credit and the reversal name the debit as their causation.
//
// Thread-safety: a Bank may be used from several threads (the repository retries conflicting
// commands); the clock in BankOptions must then be thread-safe too.
#pragma once

#include <factum/eventstore/query.hpp>
#include <factum/factum.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "account.hpp"
#include "money.hpp"
#include "read_models.hpp"

namespace bank {

struct BankOptions {
  // metadata.actor of every event written. Default: "factum-bank".
  std::string actor = "factum-bank";
  // The business time of new events. Default (empty): the system clock.
  std::function<factum::Timestamp()> clock{};
  // Snapshot an account every this many events (0: never). Default: 50.
  std::uint64_t snapshot_every = 50;
};

// What became of a transfer.
struct TransferResult {
  factum::EventId transfer_id;                 // the correlation id of every leg
  factum::EventId debit_id;                    // the TransferDebited in the source stream
  std::optional<factum::EventId> credit_id;    // the TransferCredited, when it landed
  std::optional<factum::EventId> reversal_id;  // the TransferReversed, when it was refused
  std::string refusal;                         // why the target refused (when reversed)
  bool completed() const noexcept { return credit_id.has_value(); }
};

class Bank {
 public:
  // Owners' names are personal data: give `store` a key provider (StoreOptions::personal_data),
  // or opening an account is refused by the library (factum::InvalidArgument).
  explicit Bank(factum::EventStore& store, BankOptions options = {});
  ~Bank();
  Bank(const Bank&) = delete;
  Bank& operator=(const Bank&) = delete;

  // Commands. Each throws Refused when an invariant or the input forbids it (nothing is
  // written), and what the store throws (factum::Error).
  //
  // `reference` (deposit, withdraw, transfer; none by default): the payment's reference, used
  // once across all accounts — a payment delivered twice is booked once. The event carries the
  // tag reference_tag(reference); the command decides over the events with that tag and appends
  // on the condition that none came meanwhile (factum::decide, docs/dcb.md), so of racing
  // payments with one reference exactly one lands. Refused (Reason::reference_used) when the
  // reference was used, naming the account that used it; Reason::invalid for a malformed one
  // (check_reference).
  void open(std::string_view account, std::string owner, Money overdraft_limit = {});
  void deposit(std::string_view account, Money amount, std::string memo = "deposit",
               std::string reference = {});
  void withdraw(std::string_view account, Money amount, std::string memo = "withdrawal",
                std::string reference = {});
  // Refused before anything is written when either account is unknown, they are the same, or
  // the source refuses the debit. A refused credit does not throw: the result says so. The
  // reference goes with the debit.
  TransferResult transfer(std::string_view from, std::string_view to, Money amount,
                          std::string memo = "transfer", std::string reference = {});
  void close(std::string_view account);
  // Forgets the owner of a closed account (EventStore::forget of owner_subject(account)): the
  // owner's name is erased from the log, the snapshots and the read models (in the forget's
  // transaction, through Projection::forget); balances, statements and the audit stay as they
  // were. Throws Refused (nothing written) for an unknown or open account, an owner forgotten
  // already, or a name stored in plain text (Account::check_forgettable). Returns the position
  // of the factum.SubjectForgotten fact.
  factum::Position forget(std::string_view account);

  // The account as its events make it (never the read models). An unknown id gives an
  // Account whose exists() is false. Throws Refused for a malformed id.
  Account load(std::string_view account) const;

  // Reads from the read models, brought up to the head of the log first (see sync).
  std::optional<AccountRow> account(std::string_view id);
  std::vector<AccountRow> accounts();
  std::vector<StatementLine> statement(std::string_view id);
  // The account's row and its statement, read as of one moment; nullopt for an unknown account.
  std::optional<AccountStatement> account_statement(std::string_view id);

  // Makes the read models reflect the whole log: returns at once when they do; otherwise
  // starts the projections and waits for them. Throws std::runtime_error when a projection
  // failed or did not catch up within a minute.
  void sync_read_models();

  const factum::EventRegistry& registry() const noexcept { return registry_; }
  factum::EventStore& store() noexcept { return store_; }

 private:
  factum::Timestamp now() const;
  factum::Metadata context(std::optional<factum::EventId> correlation = {}) const;
  // Starts the inline projections (once), before the first write.
  void start_projections();
  bool read_models_current() const;
  // Waits until the running projections reflect the head; throws when they cannot. Called
  // with engine_mu_ held.
  void wait_for_read_models();
  // Runs `command` on the account through the repository, starting the projections just
  // before the save, and returns the account's version after it.
  factum::StreamVersion run(std::string_view account, const factum::Metadata& metadata,
                            const std::function<void(Account&)>& command);
  // As run, for a payment with a reference (non-empty): decided by query over its tag, and
  // appended on the condition that no event with the tag came after the read; loaded and run
  // again when the account moved meanwhile.
  factum::StreamVersion run(std::string_view account, const factum::Metadata& metadata,
                            const std::string& reference,
                            const std::function<void(Account&)>& command);
  // One decision of the run with a reference: the append to make (throws Refused).
  factum::StreamAppend decide_payment(std::string_view account, const factum::Metadata& metadata,
                                      const std::string& reference, const factum::QueryResult& seen,
                                      const std::function<void(Account&)>& command);
  // The id of the account's event at `version`.
  factum::EventId event_id(std::string_view account, factum::StreamVersion version) const;
  void reverse(TransferResult& result, const factum::RecordedEvent& debit, std::string_view to,
               Money amount, std::string reason);

  factum::EventStore& store_;
  BankOptions options_;
  factum::EventRegistry registry_;
  factum::SnapshotStore snapshots_;
  factum::Repository<Account> repository_;
  std::mutex engine_mu_;  // guards engine_: started once, by the first writer or reader
  std::unique_ptr<factum::ProjectionEngine> engine_;
};

}  // namespace bank
