// samples/bank/new_rule.hpp — replay with new logic: a pricing rule decided today, applied to
// the whole history as if it had always been in force, beside the balances of today.
//
// The rule: at every month end, an open account earns 0.1% interest on a positive balance
// (rounded down to the cent), then pays a 2.00 fee when its balance is below 1,000.00.
//
// It is a projection like the others ("balances-with-fees", version 1, read model
// `fee_balances`): the engine builds it from position 1 over the whole log. Month ends are
// found from the events' business times: when the log reaches a later month than the last
// event seen, every month in between is settled for every account first. So the months up to
// the one before the newest event are settled; the current month is not over yet.
//
// Thread-safety: as for every projection (projection.hpp); build_new_rule and compare_new_rule
// may be called from any thread.
#pragma once

#include <factum/factum.hpp>

#include <functional>
#include <string>
#include <vector>

#include "money.hpp"

namespace bank {

struct FeeRule {
  std::int64_t interest_per_mille = 1;                 // 0.1% a month
  Money monthly_fee = Money::from_minor(200);          // 2.00
  Money fee_waived_from = Money::from_minor(100'000);  // 1,000.00
  // "0.1% monthly interest on positive balances, 2.00 monthly fee below 1,000.00"
  std::string describe() const;
};

class NewRuleProjection : public factum::Projection {
 public:
  NewRuleProjection(const factum::EventRegistry& registry, FeeRule rule = {})
      : registry_(registry), rule_(rule) {}
  std::string name() const override { return "balances-with-fees"; }
  std::uint32_t version() const override { return 1; }
  std::vector<std::string> event_types() const override;
  void reset(factum::ProjectionContext& ctx) override;
  void apply(const factum::RecordedEvent& event, factum::ProjectionContext& ctx) override;

 private:
  void settle_months(factum::ProjectionContext& ctx, std::int64_t from, std::int64_t to);
  const factum::EventRegistry& registry_;
  FeeRule rule_;
};

// Runs the new rule's projection over the whole history with a ProjectionEngine, until it
// reflects the head: builds it the first time, catches it up later, and with `rebuild` builds
// it again from position 1 (blue/green). `progress(done, total)` is called as it goes.
// Throws std::runtime_error when the projection fails.
void build_new_rule(factum::EventStore& store, const factum::EventRegistry& registry, bool rebuild,
                    const std::function<void(factum::Position, factum::Position)>& progress);

struct RuleRow {
  std::string account;
  std::string owner;
  Money today;      // from `balances`
  Money with_rule;  // from `fee_balances`
  Money interest;   // earned under the rule
  Money fees;       // paid under the rule
  Money difference() const { return with_rule - today; }
};

struct RuleComparison {
  std::vector<RuleRow> rows;    // every account, the largest |difference| first
  RuleRow totals;               // sums over every account (account "total")
  std::string settled_through;  // the last month settled, "2024-11", or "" for none
};

// Reads both read models side by side (both must be current).
RuleComparison compare_new_rule(const factum::EventStore& store);

}  // namespace bank
