// samples/bank/read_models.hpp — the bank's read models, kept in the store's own file by the
// projection engine: `balances` (one row per account) and `statements` (one line per event of
// each account), and the queries the commands print from.
//
//   balances   (account, owner, balance, overdraft_limit, status, version, updated_at)
//   statements (account, line, position, at, kind, amount, balance_after, counterparty, memo)
//
// Owners' names are personal data: `owner` is '' once the owner is forgotten, and the memo of
// the "opened" line is then "owner <erased>" (the projections' forget(); a rebuild decodes the
// name as erased and writes the same).
//
// Amounts are integer minor units; `line` is the event's stream version (so a statement has
// one line per event, numbered 1, 2, ...); `position` its place in the log; `at` its business
// time in microseconds since 1970 UTC. The tables are queried by their logical names (views on
// the serving generation, e.g. balances -> balances__g1; see docs/projections.md).
//
// Thread-safety: the projections are called by the engine one event at a time; the query
// functions may be called from any thread (each is one read transaction: one snapshot).
#pragma once

#include <factum/factum.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events.hpp"
#include "money.hpp"

namespace bank {

// What one event does to its account's statement.
struct Entry {
  std::string kind;          // "opened", "deposit", "withdrawal", "transfer out", "transfer in",
                             // "reversal", "closed"
  Money amount;              // signed: money in is positive, money out negative
  std::string counterparty;  // the other account of a transfer (empty otherwise)
  std::string memo;          // the memo, or a reversal's reason
};
Entry entry_of(const BankEvent& event);

// What an erased owner's name shows as.
inline constexpr std::string_view kErased = "<erased>";

// A row of `balances`.
struct AccountRow {
  std::string account;
  std::string owner;  // "" once the owner was forgotten
  Money balance;
  Money overdraft_limit;
  std::string status;                 // "open" or "closed"
  factum::StreamVersion version = 0;  // the last event of the account the row reflects
};

// A line of `statements`.
struct StatementLine {
  factum::StreamVersion line = 0;
  factum::Position position = 0;
  factum::Timestamp at{};
  Entry entry;
  Money balance_after;
};

// The projections' names, which are also their checkpoints' names.
inline constexpr std::string_view kBalances = "balances";
inline constexpr std::string_view kStatements = "statements";

// `balances`: the current state of every account.
class BalancesProjection : public factum::Projection {
 public:
  explicit BalancesProjection(const factum::EventRegistry& registry) : registry_(registry) {}
  std::string name() const override { return std::string(kBalances); }
  std::uint32_t version() const override { return 1; }
  std::vector<std::string> event_types() const override { return event_type_names(); }
  void reset(factum::ProjectionContext& ctx) override;
  void apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) override;
  // An owner was forgotten: their name in the account's row becomes "" (shown as erased).
  void forget(std::string_view subject, factum::ProjectionContext& ctx) override;

 private:
  const factum::EventRegistry& registry_;
};

// `statements`: every account's history, line by line, with the running balance.
class StatementsProjection : public factum::Projection {
 public:
  explicit StatementsProjection(const factum::EventRegistry& registry) : registry_(registry) {}
  std::string name() const override { return std::string(kStatements); }
  std::uint32_t version() const override { return 1; }
  std::vector<std::string> event_types() const override { return event_type_names(); }
  void reset(factum::ProjectionContext& ctx) override;
  void apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) override;
  // An owner was forgotten: the "opened" line's memo loses their name.
  void forget(std::string_view subject, factum::ProjectionContext& ctx) override;

 private:
  const factum::EventRegistry& registry_;
};

// Queries on the serving read models, each one read transaction. Throw factum::StorageError
// when they do not exist yet.
std::optional<AccountRow> read_account(const factum::EventStore& store, std::string_view id);
std::vector<AccountRow> read_accounts(const factum::EventStore& store);
std::vector<StatementLine> read_statement(const factum::EventStore& store, std::string_view id);

// An account's balances row and its statement, as of one moment.
struct AccountStatement {
  AccountRow row;
  std::vector<StatementLine> lines;
};
// Both read in one read transaction; nullopt when the balances read model has no such account.
std::optional<AccountStatement> read_account_statement(const factum::EventStore& store,
                                                       std::string_view id);

// Both read models as one read transaction sees them: how far each reflects the log (its
// checkpoint: the projections commit their rows and their checkpoint together), and all of
// their rows. Events up to a checkpoint are never changed or added to, so a fold of the events
// up to it, read afterwards, shows what the read model must hold (the audit does so).
struct ReadModelSnapshot {
  factum::Position balances_through = 0;    // the last position the balances reflect
  factum::Position statements_through = 0;  // the last position the statements reflect
  std::vector<AccountRow> accounts;
  std::map<std::string, std::vector<StatementLine>> statements;  // by account, lines in order
};
ReadModelSnapshot read_snapshot(const factum::EventStore& store);

// Microseconds since 1970 UTC, as stored in the read models.
std::int64_t to_micros(factum::Timestamp t);
factum::Timestamp from_micros(std::int64_t micros);

}  // namespace bank
