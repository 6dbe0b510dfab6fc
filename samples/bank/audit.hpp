// samples/bank/audit.hpp — checks the bank against its own history.
//
// audit() trusts nothing but the events whose hashes check out:
//   1. EventStore::verify() walks the hash chain: an event edited, deleted, inserted or
//      reordered behind the library's back breaks it, and the first broken position is named;
//   2. every account is rebuilt from its events (a direct fold through Account::apply — no
//      snapshots, no read models) and compared with the `balances` row (owner, limit, balance,
//      status, version) and with its `statements`, line by line (kind, amount, balance after);
//   3. every transfer's debit must have exactly one outcome: a credit (causation = the debit)
//      or a reversal (metadata.compensates = the debit).
// Each mismatch becomes one line of AuditReport::differences. An event that cannot be decoded
// (its bytes no longer match its hash) is reported and left out of its account's fold.
//
// One moment: the read models are read in one read transaction, with their checkpoints (the
// last position each reflects, committed with its rows), and each is compared with the fold of
// the events up to its own checkpoint. Events up to a position never change, so writers running
// meanwhile are not differences. A read model whose checkpoint is behind the head the audit
// began at is one (it lags). A transfer is two appends, its debit then its outcome; a debit
// whose outcome is not in the log yet counts as in flight while it is younger than
// AuditOptions::in_flight (by its recorded-at time), and as a difference once older.
//
// Thread-safety: audit() only reads; it may run beside readers and writers, in this process or
// in others.
#pragma once

#include <factum/factum.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace bank {

struct AuditReport {
  std::vector<std::string> differences;  // one line each, naming the account or position
  std::uint64_t events = 0;              // events in the log (walked by verify)
  std::uint64_t accounts = 0;            // account streams rebuilt
  factum::Head head;                     // the log's head when the audit started
  bool chain_intact = false;
  std::uint64_t transfers_in_flight = 0;  // debits without an outcome yet, younger than allowed

  bool ok() const noexcept { return differences.empty(); }
  // "audit: OK — 3,412 events, 120 accounts, hash chain intact (head 3412 1a2b3c4d5e6f)", with
  // ", 1 transfer in flight" after "intact" when there are any; or "audit: FAILED — 2
  // differences".
  std::string verdict() const;
};

struct AuditOptions {
  // How long a transfer's debit may wait for its credit or reversal before a missing outcome
  // is a difference (a writer may be between the two appends; a crash there leaves the debit
  // alone for good). Measured from the debit's recorded-at time to the audit's start, on the
  // system clock. Default: one minute.
  std::chrono::microseconds in_flight = std::chrono::minutes(1);
};

// Audits the bank in `store` (bring its read models up to date first: Bank::sync_read_models;
// one that lags behind the head at the start is reported). Throws factum::StorageError when
// the file cannot be read at all.
AuditReport audit(const factum::EventStore& store, const factum::EventRegistry& registry,
                  const AuditOptions& options = {});

}  // namespace bank
