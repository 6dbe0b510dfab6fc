// samples/bank/read_models.cpp — the balances and statements projections and their queries.
#include "read_models.hpp"

namespace bank {
namespace {

using factum::SqlValue;

SqlValue text(std::string s) { return SqlValue(std::move(s)); }
SqlValue integer(std::int64_t v) { return SqlValue(v); }
SqlValue integer(std::uint64_t v) { return SqlValue(static_cast<std::int64_t>(v)); }

AccountRow account_row(const factum::SqlRow& row) {
  AccountRow a;
  a.account = row.text(0);
  a.owner = row.text(1);
  a.balance = Money::from_minor(row.integer(2));
  a.overdraft_limit = Money::from_minor(row.integer(3));
  a.status = row.text(4);
  a.version = static_cast<factum::StreamVersion>(row.integer(5));
  return a;
}

// A statement line from the columns line, position, at, kind, amount, balance_after,
// counterparty, memo, the first of them at `first`.
StatementLine statement_line(const factum::SqlRow& row, int first = 0) {
  StatementLine l;
  l.line = static_cast<factum::StreamVersion>(row.integer(first));
  l.position = static_cast<factum::Position>(row.integer(first + 1));
  l.at = from_micros(row.integer(first + 2));
  l.entry.kind = row.text(first + 3);
  l.entry.amount = Money::from_minor(row.integer(first + 4));
  l.balance_after = Money::from_minor(row.integer(first + 5));
  l.entry.counterparty = row.text(first + 6);
  l.entry.memo = row.text(first + 7);
  return l;
}

constexpr const char* kAccountColumns =
    "SELECT account, owner, balance, overdraft_limit, status, version FROM balances";

std::optional<AccountRow> account_in(factum::Sql& sql, std::string_view id) {
  std::optional<AccountRow> out;
  sql.query(std::string(kAccountColumns) + " WHERE account = ?1", {text(std::string(id))},
            [&](const factum::SqlRow& row) { out = account_row(row); });
  return out;
}

std::vector<AccountRow> accounts_in(factum::Sql& sql) {
  std::vector<AccountRow> out;
  sql.query(std::string(kAccountColumns) + " ORDER BY length(account), account", {},
            [&](const factum::SqlRow& row) { out.push_back(account_row(row)); });
  return out;
}

std::vector<StatementLine> statement_in(factum::Sql& sql, std::string_view id) {
  std::vector<StatementLine> out;
  sql.query(
      "SELECT line, position, at, kind, amount, balance_after, counterparty, memo"
      " FROM statements WHERE account = ?1 ORDER BY line",
      {text(std::string(id))},
      [&](const factum::SqlRow& row) { out.push_back(statement_line(row)); });
  return out;
}

}  // namespace

Entry entry_of(const BankEvent& event) {
  return std::visit(
      factum::overloaded{
          [](const AccountOpened& e) {
            const std::string name = e.owner.text();  // "" when erased
            return Entry{"opened", {}, {}, "owner " + (name.empty() ? std::string(kErased) : name)};
          },
          [](const Deposited& e) {
            return Entry{"deposit", e.amount, {}, e.memo};
          },
          [](const Withdrawn& e) {
            return Entry{"withdrawal", -e.amount, {}, e.memo};
          },
          [](const TransferDebited& e) {
            return Entry{"transfer out", -e.amount, e.to, e.memo};
          },
          [](const TransferCredited& e) {
            return Entry{"transfer in", e.amount, e.from, e.memo};
          },
          [](const TransferReversed& e) {
            return Entry{"reversal", e.amount, e.to, e.reason};
          },
          [](const AccountClosed&) {
            return Entry{"closed", {}, {}, {}};
          },
      },
      event);
}

std::int64_t to_micros(factum::Timestamp t) { return t.time_since_epoch().count(); }

factum::Timestamp from_micros(std::int64_t micros) {
  return factum::Timestamp(std::chrono::microseconds(micros));
}

// --- balances ------------------------------------------------------------------------------

void BalancesProjection::reset(factum::ProjectionContext& ctx) {
  ctx.sql().execute(factum::table_ddl(
      ctx.sql(), "CREATE TABLE " + ctx.table("balances") +
                     " (account TEXT PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL,"
                     " overdraft_limit INTEGER NOT NULL, status TEXT NOT NULL,"
                     " version INTEGER NOT NULL, updated_at INTEGER NOT NULL)"));
}

void BalancesProjection::apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) {
  const BankEvent decoded = registry_.decode_variant<BankEvent>(event);
  const std::string account = account_of(event.stream_id);
  const std::int64_t at = to_micros(event_time(decoded));
  if (const auto* opened = std::get_if<AccountOpened>(&decoded)) {
    ctx.sql().execute(
        "INSERT INTO " + ctx.table("balances") + " VALUES (?1, ?2, 0, ?3, 'open', ?4, ?5)",
        {text(account), text(opened->owner.text()), integer(opened->overdraft_limit.minor()),
         integer(event.stream_version), integer(at)});
    return;
  }
  const bool closed = std::holds_alternative<AccountClosed>(decoded);
  ctx.sql().execute(
      "UPDATE " + ctx.table("balances") +
          " SET balance = balance + ?2, version = ?3, updated_at = ?4,"
          " status = CASE WHEN ?5 THEN 'closed' ELSE status END WHERE account = ?1",
      {text(account), integer(entry_of(decoded).amount.minor()), integer(event.stream_version),
       integer(at), integer(std::int64_t{closed ? 1 : 0})});
}

void BalancesProjection::forget(std::string_view subject, factum::ProjectionContext& ctx) {
  if (const auto account = account_of_subject(subject)) {
    ctx.sql().execute("UPDATE " + ctx.table("balances") + " SET owner = '' WHERE account = ?1",
                      {text(*account)});
  }
}

// --- statements ----------------------------------------------------------------------------

void StatementsProjection::reset(factum::ProjectionContext& ctx) {
  ctx.sql().execute(factum::table_ddl(
      ctx.sql(), "CREATE TABLE " + ctx.table("statements") +
                     " (account TEXT NOT NULL, line INTEGER NOT NULL, position INTEGER NOT NULL,"
                     " at INTEGER NOT NULL, kind TEXT NOT NULL, amount INTEGER NOT NULL,"
                     " balance_after INTEGER NOT NULL, counterparty TEXT NOT NULL,"
                     " memo TEXT NOT NULL, PRIMARY KEY (account, line))"));
}

void StatementsProjection::apply(const factum::RecordedEvent& event,
                                 factum::ProjectionContext& ctx) {
  const BankEvent decoded = registry_.decode_variant<BankEvent>(event);
  const std::string account = account_of(event.stream_id);
  const std::string table = ctx.table("statements");
  const std::int64_t before =
      ctx.sql()
          .query_integer("SELECT balance_after FROM " + table +
                             " WHERE account = ?1 ORDER BY line DESC LIMIT 1",
                         {text(account)})
          .value_or(0);
  Entry entry = entry_of(decoded);
  ctx.sql().execute("INSERT INTO " + table + " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    {text(account), integer(event.stream_version), integer(event.position),
                     integer(to_micros(event_time(decoded))), text(std::move(entry.kind)),
                     integer(entry.amount.minor()), integer(before + entry.amount.minor()),
                     text(std::move(entry.counterparty)), text(std::move(entry.memo))});
}

void StatementsProjection::forget(std::string_view subject, factum::ProjectionContext& ctx) {
  if (const auto account = account_of_subject(subject)) {
    ctx.sql().execute("UPDATE " + ctx.table("statements") +
                          " SET memo = ?2 WHERE account = ?1 AND kind = 'opened'",
                      {text(*account), text("owner " + std::string(kErased))});
  }
}

// --- queries -------------------------------------------------------------------------------

std::optional<AccountRow> read_account(const factum::EventStore& store, std::string_view id) {
  std::optional<AccountRow> out;
  store.read_sql([&](factum::Sql& sql) { out = account_in(sql, id); });
  return out;
}

std::vector<AccountRow> read_accounts(const factum::EventStore& store) {
  std::vector<AccountRow> out;
  store.read_sql([&](factum::Sql& sql) { out = accounts_in(sql); });
  return out;
}

std::vector<StatementLine> read_statement(const factum::EventStore& store, std::string_view id) {
  std::vector<StatementLine> out;
  store.read_sql([&](factum::Sql& sql) { out = statement_in(sql, id); });
  return out;
}

std::optional<AccountStatement> read_account_statement(const factum::EventStore& store,
                                                       std::string_view id) {
  std::optional<AccountStatement> out;
  store.read_sql([&](factum::Sql& sql) {
    std::optional<AccountRow> row = account_in(sql, id);
    if (row) out = AccountStatement{std::move(*row), statement_in(sql, id)};
  });
  return out;
}

ReadModelSnapshot read_snapshot(const factum::EventStore& store) {
  ReadModelSnapshot out;
  store.read_sql([&](factum::Sql& sql) {
    out.balances_through = factum::CheckpointStore::load(sql, kBalances);
    out.statements_through = factum::CheckpointStore::load(sql, kStatements);
    out.accounts = accounts_in(sql);
    sql.query(
        "SELECT account, line, position, at, kind, amount, balance_after, counterparty, memo"
        " FROM statements ORDER BY account, line",
        {}, [&](const factum::SqlRow& row) {
          out.statements[row.text(0)].push_back(statement_line(row, 1));
        });
  });
  return out;
}

}  // namespace bank
