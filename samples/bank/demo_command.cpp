// samples/bank/demo_command.cpp — `factum-bank demo`: a fresh year of history with a progress
// bar, a short tour of what it holds, and the audit's verdict as its last line.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <stdexcept>

#include <factum/eventstore/text.hpp>

#include "audit.hpp"
#include "bank.hpp"
#include "commands.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "store_file.hpp"
#include "store_location.hpp"

namespace bank {
namespace {

// Refuses to mix a demo into an existing history, unless --fresh deletes it first.
void prepare_file(const std::filesystem::path& db, bool fresh) {
  const factum::Position events = events_in(db);
  if (events == 0) return;
  if (factum::is_server_location(db.string())) {  // never emptied, --fresh or not
    throw std::runtime_error(factum::samples::no_delete_on_server("factum-bank", db, events));
  }
  if (!fresh) {
    throw std::runtime_error("'" + db.string() + "' already holds " + group_thousands(events) +
                             " events; use --fresh to delete it and start over, or another --db");
  }
  delete_store(db);
}

// `db` as a shell word: a URI (with '?', '&') quoted, its password masked; a path as it is.
std::string shell_word(const std::filesystem::path& db) {
  if (!factum::is_server_location(db.string())) return db.string();
  return "'" + factum::shown_location(db.string()) + "'";
}

std::string n(int count) { return group_thousands(static_cast<std::uint64_t>(count)); }

void print_summary(const DemoSummary& s, factum::Position events, double seconds) {
  std::cout << "Created " << group_thousands(events) << " events in " << std::fixed
            << std::setprecision(1) << seconds << " s:\n"
            << "  " << n(s.opened) << " accounts opened, " << n(s.closed) << " closed\n"
            << "  " << n(s.deposits) << " deposits, " << n(s.withdrawals) << " withdrawals, "
            << n(s.transfers) << " transfers\n"
            << "  " << n(s.reversed)
            << " transfers reversed: the target was closed, a compensating event returned "
               "the money\n"
            << "  " << n(s.refused) << " operations refused before anything was written, e.g.\n";
  for (const std::string& r : s.refusals) std::cout << "    " << r << "\n";
}

void print_top(Bank& bank) {
  std::vector<AccountRow> rows = bank.accounts();
  std::sort(rows.begin(), rows.end(),
            [](const AccountRow& a, const AccountRow& b) { return a.balance > b.balance; });
  rows.resize(std::min<std::size_t>(rows.size(), 5));
  std::cout << "\nTop balances (from the balances read model):\n";
  print_accounts(std::cout, rows);
  if (rows.empty()) return;
  std::cout << "\n";
  const std::optional<AccountStatement> top = bank.account_statement(rows.front().account);
  if (top) print_statement(std::cout, top->row, top->lines, 8);
}

// Shows the first compensation in the log with the debit it names.
void print_compensation(Bank& bank) {
  for (const factum::RecordedEvent& e : bank.store().read_category("account")) {
    if (e.type != TransferReversed::event_type || !e.metadata.compensates) continue;
    const auto debit = bank.store().read_event(*e.metadata.compensates);
    const auto reversal = bank.registry().decode<TransferReversed>(e);
    std::cout << "\nA compensation, as stored:\n"
              << "  position " << debit->position << "  " << debit->stream_id << " v"
              << debit->stream_version << "  " << debit->type << "  id " << debit->id.to_string()
              << "\n  position " << e.position << "  " << e.stream_id << " v" << e.stream_version
              << "  " << e.type << "  compensates " << e.metadata.compensates->to_string()
              << "\n    " << reversal.amount.to_display() << " back from " << reversal.to << ": "
              << factum::printable(reversal.reason) << "\n";
    return;
  }
}

// A payment delivered twice: the first salary's reference, booked again to another account, is
// refused (a reference is used once across all accounts, decided by query over its tag).
void print_reference(Bank& bank, const std::string& reference) {
  if (reference.empty()) return;
  const factum::QueryResult used =
      factum::read_query(bank.store(), factum::Query::tagged({reference_tag(reference)}));
  if (used.events.empty()) return;
  const std::string first = account_of(used.events.front().stream_id);
  const std::vector<AccountRow> rows = bank.accounts();
  const auto other = std::find_if(rows.begin(), rows.end(), [&](const AccountRow& r) {
    return r.status == "open" && r.account != first;
  });
  if (other == rows.end()) return;
  std::cout << "\nA payment delivered twice (a payment reference is used once across all "
               "accounts; tag "
            << reference_tag(reference) << ", docs/dcb.md):\n  factum-bank deposit "
            << other->account << " 100 --reference " << reference << ": ";
  try {
    bank.deposit(other->account, Money::parse("100"), "salary", reference);
    std::cout << "accepted (unexpected)\n";
  } catch (const Refused& refused) {
    std::cout << "refused: " << refused.what() << "\n";
  }
}

// The right to be forgotten: the owner of the first closed account is forgotten (before and
// after), and forgetting the owner of an open account is refused.
void print_forget(Bank& bank) {
  const std::vector<AccountRow> rows = bank.accounts();
  const auto closed = std::find_if(rows.begin(), rows.end(),
                                   [](const AccountRow& r) { return r.status == "closed"; });
  if (closed == rows.end()) return;
  std::cout << "\nThe right to be forgotten: factum-bank forget " << closed->account
            << "\n  before: ";
  print_account(std::cout, *closed);
  const factum::Position fact = bank.forget(closed->account);
  std::cout << "  after:  ";
  print_account(std::cout, *bank.account(closed->account));
  std::cout << "  (the key of subject " << owner_subject(closed->account)
            << " is deleted, fact at position " << fact
            << "; the log is unchanged, so the audit below still passes)\n";
  const auto open = std::find_if(rows.begin(), rows.end(),
                                 [](const AccountRow& r) { return r.status == "open"; });
  if (open == rows.end()) return;
  try {
    bank.forget(open->account);
  } catch (const Refused& refused) {
    std::cout << "  factum-bank forget " << open->account << ": refused: " << refused.what()
              << "\n";
  }
}

}  // namespace

int demo_command(const std::filesystem::path& db, const DemoOptions& options, bool fresh) {
  prepare_file(db, fresh);
  factum::EventStore store = open_store(db, true, factum::Durability::normal);
  std::cout << "factum-bank demo: a year of banking (2024) into "
            << factum::shown_location(db.string()) << ", seed " << options.seed << "\n"
            << "(durability 'normal' for speed: a crash of this program loses nothing, a power "
               "cut may lose the newest commits)\n";
  const auto start = std::chrono::steady_clock::now();
  factum::samples::Progress bar("creating history", demo_steps(options));
  const DemoSummary summary = create_history(store, options, [&] { bar.advance(); });
  bar.finish();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  print_summary(summary, store.head_position(), took.count());
  Bank bank(store);
  print_top(bank);
  print_compensation(bank);
  print_reference(bank, summary.salary_reference);
  print_forget(bank);
  std::cout << "\nTry next, one at a time: factum-bank --db " << shell_word(db)
            << " accounts / statement ACCOUNT / replay-with-new-logic / forget ACCOUNT / "
               "audit\n\n";
  bank.sync_read_models();
  const AuditReport report = audit(store, bank.registry());
  for (const std::string& d : report.differences) std::cout << "audit: " << d << "\n";
  std::cout << report.verdict() << "\n";
  return report.ok() ? 0 : 1;
}

}  // namespace bank
