// samples/bank/audit.cpp — the audit: hash chain, accounts rebuilt from their events against
// the read models, and every transfer's outcome.
#include "audit.hpp"

#include <map>

#include "account.hpp"
#include "read_models.hpp"

namespace bank {
namespace {

struct ExpectedLine {
  Entry entry;
  Money balance_after;
};

// An account as its events make it, with the statement they imply.
struct Folded {
  Account account;
  factum::StreamVersion version = 0;
  std::map<factum::StreamVersion, ExpectedLine> lines;
};

struct Debit {
  std::string from;
  std::string to;
  factum::Position position = 0;
  int credits = 0;
  int reversals = 0;
};

std::string short_id(const factum::EventId& id) { return id.to_string().substr(0, 8); }

std::string describe(const Entry& e, Money balance_after) {
  return e.kind + " " + e.amount.to_display() + " -> balance " + balance_after.to_display();
}

class Auditor {
 public:
  Auditor(const factum::EventStore& store, const factum::EventRegistry& registry)
      : store_(store), registry_(registry) {}

  AuditReport run() {
    report_.head = store_.head();
    check_chain();
    fold_log();
    report_.accounts = folded_.size();
    compare_balances();
    compare_statements();
    check_transfers();
    return std::move(report_);
  }

 private:
  void differ(std::string line) { report_.differences.push_back(std::move(line)); }

  void check_chain() {
    // Against the head read at the start: a log cut off meanwhile would fail too.
    const factum::VerifyResult v =
        report_.head.position == 0 ? store_.verify() : store_.verify(report_.head.hash);
    report_.events = v.events_checked;
    report_.chain_intact = v.ok();
    if (!v.ok())
      differ("hash chain broken at position " + std::to_string(v.position) + ": " + v.message);
  }

  void fold_log() {
    try {
      for (const factum::RecordedEvent& e : store_.read_category("account")) fold_one(e);
    } catch (const factum::Error& e) {
      differ(std::string("the log cannot be read to its end: ") + e.what());
    }
  }

  void fold_one(const factum::RecordedEvent& e) {
    Folded& f = folded_[account_of(e.stream_id)];
    f.version = e.stream_version;
    BankEvent event;
    try {
      event = registry_.decode_variant<BankEvent>(e);
    } catch (const factum::Error& error) {
      differ(account_of(e.stream_id) + ": event " + std::to_string(e.stream_version) +
             " (position " + std::to_string(e.position) + ") is unreadable: " + error.what());
      return;
    }
    std::visit([&](const auto& ev) { f.account.apply(ev); }, event);
    f.lines[e.stream_version] = ExpectedLine{entry_of(event), f.account.balance()};
    note_transfer(e, event);
  }

  void note_transfer(const factum::RecordedEvent& e, const BankEvent& event) {
    if (const auto* debit = std::get_if<TransferDebited>(&event)) {
      Debit& d = debits_[e.id];
      d.from = account_of(e.stream_id);
      d.to = debit->to;
      d.position = e.position;
    } else if (std::holds_alternative<TransferCredited>(event) && e.metadata.causation_id) {
      ++debits_[*e.metadata.causation_id].credits;
    } else if (std::holds_alternative<TransferReversed>(event) && e.metadata.compensates) {
      ++debits_[*e.metadata.compensates].reversals;
    }
  }

  void compare_balances() {
    std::map<std::string, AccountRow> rows;
    try {
      for (AccountRow& r : read_accounts(store_)) rows.emplace(r.account, std::move(r));
    } catch (const factum::Error& e) {
      differ(std::string("the balances read model cannot be read: ") + e.what());
      return;
    }
    for (const auto& [id, f] : folded_) {
      const auto it = rows.find(id);
      if (it == rows.end()) {
        differ(id + ": missing from the balances read model");
        continue;
      }
      compare_row(id, f, it->second);
      rows.erase(it);
    }
    for (const auto& [id, row] : rows)
      differ(id + ": in the balances read model, but has no events");
  }

  void compare_row(const std::string& id, const Folded& f, const AccountRow& row) {
    const Account& a = f.account;
    const std::string events = "from its " + std::to_string(f.version) + " events";
    if (row.balance != a.balance()) {
      differ(id + ": balance " + row.balance.to_display() + " in the balances read model, " +
             a.balance().to_display() + " " + events);
    }
    if (row.status != a.status()) {
      differ(id + ": status '" + row.status + "' in the balances read model, '" + a.status() +
             "' " + events);
    }
    if (row.owner != a.owner() || row.overdraft_limit != a.overdraft_limit()) {
      differ(id + ": owner or overdraft limit in the balances read model differ " + events);
    }
    if (row.version != f.version) {
      differ(id + ": the balances read model reflects event " + std::to_string(row.version) +
             " of " + std::to_string(f.version));
    }
  }

  void compare_statements() {
    std::map<std::string, std::vector<StatementLine>> statements;
    try {
      for (const auto& [id, f] : folded_) statements[id] = read_statement(store_, id);
    } catch (const factum::Error& e) {
      differ(std::string("the statements read model cannot be read: ") + e.what());
      return;
    }
    for (const auto& [id, f] : folded_) compare_statement(id, f, statements[id]);
  }

  // Reports the first line that differs, and a difference in the number of lines.
  void compare_statement(const std::string& id, const Folded& f,
                         const std::vector<StatementLine>& lines) {
    if (lines.size() != f.version) {
      differ(id + ": the statement has " + std::to_string(lines.size()) + " lines, the account " +
             std::to_string(f.version) + " events");
    }
    for (const StatementLine& l : lines) {
      const auto it = f.lines.find(l.line);
      if (it == f.lines.end()) continue;  // an unreadable event, reported already
      const ExpectedLine& want = it->second;
      if (l.entry.kind != want.entry.kind || l.entry.amount != want.entry.amount ||
          l.balance_after != want.balance_after) {
        differ(id + ": statement line " + std::to_string(l.line) + " says " +
               describe(l.entry, l.balance_after) + ", the events say " +
               describe(want.entry, want.balance_after));
        return;
      }
    }
  }

  void check_transfers() {
    for (const auto& [id, d] : debits_) {
      if (d.position == 0) {
        differ("a transfer leg names debit " + short_id(id) + ", which is not in the log");
      } else if (d.credits + d.reversals != 1) {
        differ("transfer " + short_id(id) + " from " + d.from + " to " + d.to +
               " (debit at position " + std::to_string(d.position) + ") has " +
               std::to_string(d.credits) + " credits and " + std::to_string(d.reversals) +
               " reversals; it needs exactly one of them");
      }
    }
  }

  const factum::EventStore& store_;
  const factum::EventRegistry& registry_;
  AuditReport report_;
  std::map<std::string, Folded> folded_;
  std::map<factum::EventId, Debit> debits_;
};

}  // namespace

std::string AuditReport::verdict() const {
  if (!ok()) {
    const std::size_t n = differences.size();
    return "audit: FAILED — " + std::to_string(n) + (n == 1 ? " difference" : " differences");
  }
  return "audit: OK — " + group_thousands(events) + " events, " + group_thousands(accounts) +
         " accounts, hash chain intact (head " + std::to_string(head.position) + " " +
         factum::to_hex(head.hash).substr(0, 12) + ")";
}

AuditReport audit(const factum::EventStore& store, const factum::EventRegistry& registry) {
  return Auditor(store, registry).run();
}

}  // namespace bank
