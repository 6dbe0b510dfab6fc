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
// Run it on a quiet store: a transfer committed while the audit reads looks half done.
// Thread-safety: audit() only reads; it may run beside other readers.
#pragma once

#include <factum/factum.hpp>

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

  bool ok() const noexcept { return differences.empty(); }
  // "audit: OK — 3,412 events, 120 accounts, hash chain intact (head 3412 1a2b3c4d5e6f)"
  // or "audit: FAILED — 2 differences".
  std::string verdict() const;
};

// Audits the bank in `store` (its read models must be up to date: Bank::sync_read_models).
// Throws factum::StorageError when the file cannot be read at all.
AuditReport audit(const factum::EventStore& store, const factum::EventRegistry& registry);

}  // namespace bank
