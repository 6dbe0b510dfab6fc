// samples/bank/report.hpp — how factum-bank prints things: accounts, statements, the new rule
// beside today's balances. Plain ASCII tables, amounts right-aligned with thousands grouped,
// dates in UTC.
//
// Thread-safety: stateless functions.
#pragma once

#include <factum/factum.hpp>

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "new_rule.hpp"
#include "read_models.hpp"

namespace bank {

// "2024-03-05 14:22" (UTC).
std::string format_time(factum::Timestamp t);

// "acc-1  Ada Lovelace  balance 1,234.56  overdraft limit 500.00  available 1,734.56  open"
void print_account(std::ostream& out, const AccountRow& row);
// One line per account, under a header.
void print_accounts(std::ostream& out, const std::vector<AccountRow>& rows);
// The statement's last `last` lines (all when 0), under a title naming the account.
void print_statement(std::ostream& out, const AccountRow& row,
                     const std::vector<StatementLine>& lines, std::size_t last = 0);
// The `top` accounts the rule changes most, and the totals over all accounts.
void print_comparison(std::ostream& out, const RuleComparison& comparison, const FeeRule& rule,
                      std::size_t top);

}  // namespace bank
