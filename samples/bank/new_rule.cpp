// samples/bank/new_rule.cpp — the month-end fee and interest rule as a projection, its build
// over the whole history, and the comparison with today's balances.
#include "new_rule.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <thread>

#include "events.hpp"
#include "read_models.hpp"

namespace bank {
namespace {

using factum::SqlValue;

// Months since year 0: 2024-03 -> 2024 * 12 + 2.
std::int64_t month_index(factum::Timestamp t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(
      std::chrono::time_point_cast<std::chrono::system_clock::duration>(t));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return std::int64_t{tm.tm_year + 1900} * 12 + tm.tm_mon;
}

std::string month_name(std::int64_t index) {
  const std::int64_t month = index % 12 + 1;
  return std::to_string(index / 12) + (month < 10 ? "-0" : "-") + std::to_string(month);
}

bool recorded_already(const factum::EventStore& store, const std::string& name) {
  try {
    for (const factum::ProjectionStatus& s : factum::ProjectionEngine::recorded(store)) {
      if (s.name == name) return true;
    }
  } catch (const factum::StorageError&) {
    // No projection has ever run on this file.
  }
  return false;
}

}  // namespace

std::string FeeRule::describe() const {
  const std::string rate =
      std::to_string(interest_per_mille / 10) + "." + std::to_string(interest_per_mille % 10) + "%";
  return rate + " monthly interest on positive balances, " + monthly_fee.to_display() +
         " monthly fee below " + fee_waived_from.to_display();
}

std::vector<std::string> NewRuleProjection::event_types() const { return event_type_names(); }

void NewRuleProjection::reset(factum::ProjectionContext& ctx) {
  ctx.sql().execute(factum::table_ddl(
      ctx.sql(), "CREATE TABLE " + ctx.table("fee_balances") +
                     " (account TEXT PRIMARY KEY, balance INTEGER NOT NULL,"
                     " interest INTEGER NOT NULL, fees INTEGER NOT NULL, status TEXT NOT NULL)"));
  // The month of the newest event seen: months before it are settled.
  ctx.sql().execute(factum::table_ddl(
      ctx.sql(), "CREATE TABLE " + ctx.table("fee_clock") + " (month INTEGER NOT NULL)"));
  ctx.sql().execute("INSERT INTO " + ctx.table("fee_clock") + " VALUES (0)");
}

void NewRuleProjection::apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) {
  const BankEvent decoded = registry_.decode_variant<BankEvent>(event);
  const std::int64_t month = month_index(event_time(decoded));
  const std::string clock = ctx.table("fee_clock");
  const std::int64_t seen = ctx.sql().query_integer("SELECT month FROM " + clock).value_or(0);
  if (month > seen) {
    if (seen != 0) settle_months(ctx, seen, month);
    ctx.sql().execute("UPDATE " + clock + " SET month = ?1", {SqlValue(month)});
  }
  const std::string table = ctx.table("fee_balances");
  const SqlValue account(account_of(event.stream_id));
  if (std::holds_alternative<AccountOpened>(decoded)) {
    ctx.sql().execute("INSERT INTO " + table + " VALUES (?1, 0, 0, 0, 'open')", {account});
  } else if (std::holds_alternative<AccountClosed>(decoded)) {
    ctx.sql().execute("UPDATE " + table + " SET status = 'closed' WHERE account = ?1", {account});
  } else {
    ctx.sql().execute("UPDATE " + table + " SET balance = balance + ?2 WHERE account = ?1",
                      {account, SqlValue(entry_of(decoded).amount.minor())});
  }
}

// Settles the month ends of months [from, to): interest first, then the fee.
void NewRuleProjection::settle_months(factum::ProjectionContext& ctx, std::int64_t from,
                                      std::int64_t to) {
  const std::string table = ctx.table("fee_balances");
  for (std::int64_t m = from; m < to; ++m) {
    ctx.sql().execute("UPDATE " + table +
                          " SET interest = interest + balance * ?1 / 1000,"
                          " balance = balance + balance * ?1 / 1000"
                          " WHERE status = 'open' AND balance > 0",
                      {SqlValue(rule_.interest_per_mille)});
    ctx.sql().execute(
        "UPDATE " + table +
            " SET fees = fees + ?1, balance = balance - ?1"
            " WHERE status = 'open' AND balance < ?2",
        {SqlValue(rule_.monthly_fee.minor()), SqlValue(rule_.fee_waived_from.minor())});
  }
}

// --- Building it ---------------------------------------------------------------------------

void build_new_rule(factum::EventStore& store, const factum::EventRegistry& registry, bool rebuild,
                    const std::function<void(factum::Position, factum::Position)>& progress) {
  std::atomic<bool> rebuilt{false};
  factum::EngineOptions options;
  options.progress_interval = std::chrono::milliseconds(100);
  options.on_progress = [&](const factum::RebuildProgress& p) {
    if (progress) progress(p.done, p.total);
    if (p.finished) rebuilt = true;
  };
  const std::string name = "balances-with-fees";
  rebuild = rebuild && recorded_already(store, name);  // a first build replays everything anyway
  factum::ProjectionEngine engine(store, options);
  engine.add(std::make_shared<NewRuleProjection>(registry));
  if (rebuild) engine.rebuild(name);
  const factum::Position head = store.head_position();
  for (;;) {
    const bool done = rebuild ? rebuilt.load() : engine.wait_for(name, head, {});
    const factum::ProjectionStatus s = engine.status(name);
    if (s.state == factum::ProjectionState::failed) {
      throw std::runtime_error("the projection '" + name + "' failed at position " +
                               std::to_string(s.error ? s.error->position : 0) + ": " +
                               (s.error ? s.error->message : std::string("?")));
    }
    if (done) break;
    if (progress && !rebuild) progress(s.checkpoint, head);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (progress) progress(head, head);
}

// --- Comparing -----------------------------------------------------------------------------

RuleComparison compare_new_rule(const factum::EventStore& store) {
  RuleComparison out;
  out.totals.account = "total";
  store.read_sql([&](factum::Sql& sql) {
    sql.query(
        "SELECT b.account, b.owner, b.balance, f.balance, f.interest, f.fees"
        " FROM balances b JOIN fee_balances f ON f.account = b.account",
        {}, [&](const factum::SqlRow& row) {
          RuleRow r{row.text(0),
                    row.text(1),
                    Money::from_minor(row.integer(2)),
                    Money::from_minor(row.integer(3)),
                    Money::from_minor(row.integer(4)),
                    Money::from_minor(row.integer(5))};
          out.totals.today += r.today;
          out.totals.with_rule += r.with_rule;
          out.totals.interest += r.interest;
          out.totals.fees += r.fees;
          out.rows.push_back(std::move(r));
        });
    const std::int64_t month = sql.query_integer("SELECT month FROM fee_clock").value_or(0);
    if (month != 0) out.settled_through = month_name(month - 1);
  });
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const RuleRow& a, const RuleRow& b) {
    return std::llabs(a.difference().minor()) > std::llabs(b.difference().minor());
  });
  return out;
}

}  // namespace bank
