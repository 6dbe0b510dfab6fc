// samples/bank/report.cpp — factum-bank's tables.
#include "report.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include <factum/eventstore/text.hpp>

namespace bank {
namespace {

std::string left(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string right(const std::string& s, std::size_t width) {
  return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
}

// An owner's name as printed: escaped, or "<erased>" once the owner was forgotten ("").
std::string owner_text(const std::string& owner) {
  return owner.empty() ? std::string(kErased) : factum::printable(owner);
}

std::string signed_amount(Money m) { return (m.positive() ? "+" : "") + m.to_display(); }

void print_rule_row(std::ostream& out, const RuleRow& r) {
  out << left(r.account, 10) << left(owner_text(r.owner), 20) << right(r.today.to_display(), 14)
      << right(r.with_rule.to_display(), 15) << right(signed_amount(r.difference()), 12)
      << right(r.interest.to_display(), 11) << right(r.fees.to_display(), 9) << "\n";
}

}  // namespace

std::string format_time(factum::Timestamp t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(
      std::chrono::time_point_cast<std::chrono::system_clock::duration>(t));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &tm);
  return text;
}

void print_account(std::ostream& out, const AccountRow& row) {
  const Money available =
      row.status == "open" ? row.balance + row.overdraft_limit : Money::from_minor(0);
  out << row.account << "  " << owner_text(row.owner) << "  balance " << row.balance.to_display()
      << "  overdraft limit " << row.overdraft_limit.to_display() << "  available "
      << available.to_display() << "  " << row.status << "\n";
}

void print_accounts(std::ostream& out, const std::vector<AccountRow>& rows) {
  out << left("account", 10) << left("owner", 20) << right("balance", 14) << right("limit", 12)
      << "  status\n";
  for (const AccountRow& r : rows) {
    out << left(r.account, 10) << left(owner_text(r.owner), 20) << right(r.balance.to_display(), 14)
        << right(r.overdraft_limit.to_display(), 12) << "  " << r.status << "\n";
  }
}

void print_statement(std::ostream& out, const AccountRow& row,
                     const std::vector<StatementLine>& lines, std::size_t last) {
  const std::size_t shown = last == 0 ? lines.size() : std::min(last, lines.size());
  out << "Statement of " << row.account << " (" << owner_text(row.owner) << ", " << row.status
      << "): " << lines.size() << " lines" << (shown < lines.size() ? ", the last " : "")
      << (shown < lines.size() ? std::to_string(shown) : "") << "\n";
  out << right("line", 5) << "  " << left("date (UTC)", 18) << left("kind", 14)
      << right("amount", 12) << right("balance", 14) << "  counterparty / memo\n";
  for (std::size_t i = lines.size() - shown; i < lines.size(); ++i) {
    const StatementLine& l = lines[i];
    const bool money = !l.entry.amount.zero();
    std::string note =
        l.entry.counterparty.empty() ? "" : factum::printable(l.entry.counterparty) + ": ";
    out << right(std::to_string(l.line), 5) << "  " << left(format_time(l.at), 18)
        << left(l.entry.kind, 14) << right(money ? signed_amount(l.entry.amount) : "", 12)
        << right(l.balance_after.to_display(), 14) << "  " << note
        << factum::printable(l.entry.memo) << "\n";
  }
}

void print_comparison(std::ostream& out, const RuleComparison& comparison, const FeeRule& rule,
                      std::size_t top) {
  out << "New rule: " << rule.describe() << "\n"
      << "Replayed over the whole history; month ends settled through "
      << (comparison.settled_through.empty() ? "none yet" : comparison.settled_through) << ".\n";
  out << left("account", 10) << left("owner", 20) << right("balance today", 14)
      << right("with new rule", 15) << right("difference", 12) << right("interest", 11)
      << right("fees", 9) << "\n";
  const std::size_t shown = std::min(top, comparison.rows.size());
  for (std::size_t i = 0; i < shown; ++i) print_rule_row(out, comparison.rows[i]);
  if (shown < comparison.rows.size()) {
    out << "... " << comparison.rows.size() - shown << " more accounts\n";
  }
  RuleRow totals = comparison.totals;
  totals.owner = std::to_string(comparison.rows.size()) + " accounts";
  print_rule_row(out, totals);
}

}  // namespace bank
