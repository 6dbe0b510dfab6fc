// samples/bank/audit.cpp — the audit: hash chain, accounts rebuilt from their events against
// the read models, and every transfer's outcome.
#include "audit.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "account.hpp"
#include "read_models.hpp"

namespace bank {
namespace {

struct ExpectedLine {
  Entry entry;
  Money balance_after;
};

// An account as its events up to a position make it.
struct View {
  Account account;
  factum::StreamVersion version = 0;  // of the last event folded in; 0: none yet
};

// An account as its events make it, as of each read model's checkpoint, with the statement
// they imply.
struct Folded {
  View balances;    // the events up to the balances' checkpoint
  View statements;  // the events up to the statements' checkpoint
  std::map<factum::StreamVersion, ExpectedLine> lines;
};

struct Debit {
  std::string from;
  std::string to;
  factum::Position position = 0;
  factum::Timestamp recorded_at{};
  int credits = 0;
  int reversals = 0;
};

std::string short_id(const factum::EventId& id) { return id.to_string().substr(0, 8); }

std::string describe(const Entry& e, Money balance_after) {
  return e.kind + " " + e.amount.to_display() + " -> balance " + balance_after.to_display();
}

void fold_into(View& view, factum::StreamVersion version, const BankEvent* event) {
  view.version = version;
  if (event) std::visit([&](const auto& e) { view.account.apply(e); }, *event);
}

class Auditor {
 public:
  Auditor(const factum::EventStore& store, const factum::EventRegistry& registry,
          const AuditOptions& options)
      : store_(store), registry_(registry), options_(options) {}

  AuditReport run() {
    started_ = std::chrono::system_clock::now();
    report_.head = store_.head();
    check_chain();
    const bool models = read_models();
    fold_log();
    report_.accounts = folded_.size();
    if (models) {
      check_lag(kBalances, models_.balances_through);
      check_lag(kStatements, models_.statements_through);
      compare_balances();
      compare_statements();
    }
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

  // Both read models and their checkpoints, in one read transaction.
  bool read_models() {
    try {
      models_ = read_snapshot(store_);
      return true;
    } catch (const factum::Error& e) {
      differ(std::string("the read models cannot be read: ") + e.what());
      return false;
    }
  }

  // Folds each account's events up to the read models' checkpoints; notes the transfer legs of
  // the log up to its head as it is now (an outcome may follow its debit past them).
  void fold_log() {
    const factum::Position through = std::max(models_.balances_through, models_.statements_through);
    const factum::Position end = std::max(through, store_.head_position());
    try {
      for (const factum::RecordedEvent& e : store_.read_category("account")) {
        if (e.position > end) break;
        fold_one(e, through);
      }
    } catch (const factum::Error& e) {
      differ(std::string("the log cannot be read to its end: ") + e.what());
    }
  }

  void fold_one(const factum::RecordedEvent& e, factum::Position through) {
    const std::optional<BankEvent> event = decode(e);
    if (event) note_transfer(e, *event);
    if (e.position > through) return;
    Folded& f = folded_[account_of(e.stream_id)];
    const BankEvent* applied = event ? &*event : nullptr;  // an unreadable one is left out
    if (e.position <= models_.balances_through) fold_into(f.balances, e.stream_version, applied);
    if (e.position <= models_.statements_through) {
      fold_into(f.statements, e.stream_version, applied);
      if (event) {
        f.lines[e.stream_version] = ExpectedLine{entry_of(*event), f.statements.account.balance()};
      }
    }
  }

  std::optional<BankEvent> decode(const factum::RecordedEvent& e) {
    try {
      return registry_.decode_variant<BankEvent>(e);
    } catch (const factum::Error& error) {
      differ(account_of(e.stream_id) + ": event " + std::to_string(e.stream_version) +
             " (position " + std::to_string(e.position) + ") is unreadable: " + error.what());
      return std::nullopt;
    }
  }

  void note_transfer(const factum::RecordedEvent& e, const BankEvent& event) {
    if (const auto* debit = std::get_if<TransferDebited>(&event)) {
      Debit& d = debits_[e.id];
      d.from = account_of(e.stream_id);
      d.to = debit->to;
      d.position = e.position;
      d.recorded_at = e.recorded_at;
    } else if (std::holds_alternative<TransferCredited>(event) && e.metadata.causation_id) {
      ++debits_[*e.metadata.causation_id].credits;
    } else if (std::holds_alternative<TransferReversed>(event) && e.metadata.compensates) {
      ++debits_[*e.metadata.compensates].reversals;
    }
  }

  // A read model must reflect at least the head the audit began at (it was brought up to it).
  void check_lag(std::string_view name, factum::Position through) {
    if (through >= report_.head.position) return;
    differ("the " + std::string(name) + " read model reflects the log up to position " +
           std::to_string(through) + ", its head was at " + std::to_string(report_.head.position) +
           " when the audit began");
  }

  void compare_balances() {
    std::map<std::string, const AccountRow*> rows;
    for (const AccountRow& r : models_.accounts) rows.emplace(r.account, &r);
    for (const auto& [id, f] : folded_) {
      if (f.balances.version == 0) continue;  // opened after the balances' checkpoint
      const auto it = rows.find(id);
      if (it == rows.end()) {
        differ(id + ": missing from the balances read model");
        continue;
      }
      compare_row(id, f.balances, *it->second);
      rows.erase(it);
    }
    for (const auto& [id, row] : rows)
      differ(id + ": in the balances read model, but has no events");
  }

  void compare_row(const std::string& id, const View& v, const AccountRow& row) {
    const Account& a = v.account;
    const std::string events = "from its " + std::to_string(v.version) + " events";
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
    if (row.version != v.version) {
      differ(id + ": the balances read model reflects event " + std::to_string(row.version) +
             " of " + std::to_string(v.version));
    }
  }

  void compare_statements() {
    static const std::vector<StatementLine> kNone;
    for (const auto& [id, f] : folded_) {
      if (f.statements.version == 0) continue;  // opened after the statements' checkpoint
      const auto it = models_.statements.find(id);
      compare_statement(id, f, it == models_.statements.end() ? kNone : it->second);
    }
    for (const auto& [id, lines] : models_.statements) {
      const auto it = folded_.find(id);
      if (it == folded_.end() || it->second.statements.version == 0)
        differ(id + ": in the statements read model, but has no events");
    }
  }

  // Reports the first line that differs, and a difference in the number of lines.
  void compare_statement(const std::string& id, const Folded& f,
                         const std::vector<StatementLine>& lines) {
    if (lines.size() != f.statements.version) {
      differ(id + ": the statement has " + std::to_string(lines.size()) + " lines, the account " +
             std::to_string(f.statements.version) + " events");
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
      } else if (d.credits + d.reversals == 0 && started_ - d.recorded_at < options_.in_flight) {
        ++report_.transfers_in_flight;
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
  AuditOptions options_;
  std::chrono::system_clock::time_point started_;
  AuditReport report_;
  ReadModelSnapshot models_;
  std::map<std::string, Folded> folded_;
  std::map<factum::EventId, Debit> debits_;
};

}  // namespace

std::string AuditReport::verdict() const {
  if (!ok()) {
    const std::size_t n = differences.size();
    return "audit: FAILED — " + std::to_string(n) + (n == 1 ? " difference" : " differences");
  }
  const std::string in_flight =
      transfers_in_flight == 0
          ? ""
          : ", " + group_thousands(transfers_in_flight) +
                (transfers_in_flight == 1 ? " transfer in flight" : " transfers in flight");
  return "audit: OK — " + group_thousands(events) + " events, " + group_thousands(accounts) +
         " accounts, hash chain intact" + in_flight + " (head " + std::to_string(head.position) +
         " " + factum::to_hex(head.hash).substr(0, 12) + ")";
}

AuditReport audit(const factum::EventStore& store, const factum::EventRegistry& registry,
                  const AuditOptions& options) {
  return Auditor(store, registry, options).run();
}

}  // namespace bank
