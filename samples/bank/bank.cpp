// samples/bank/bank.cpp — the Bank service: commands through the Account aggregate, the
// transfer saga with its compensation, and the inline read models.
#include "bank.hpp"

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <variant>

#include <factum/eventstore/decision.hpp>
#include <factum/eventstore/personal.hpp>
#include <factum/eventstore/tags.hpp>

namespace bank {
namespace {

factum::RepositoryOptions repository_options(const BankOptions& options) {
  factum::RepositoryOptions out;
  out.snapshots = factum::SnapshotPolicy::every_n(options.snapshot_every, 2);
  return out;
}

}  // namespace

Bank::Bank(factum::EventStore& store, BankOptions options)
    : store_(store),
      options_(std::move(options)),
      snapshots_(store),
      repository_(store, registry_, snapshots_, repository_options(options_)) {
  if (auto keyring = store.keyring()) registry_.use_keyring(std::move(keyring));
  register_events(registry_);
}

Bank::~Bank() = default;

// --- Commands ------------------------------------------------------------------------------

void Bank::open(std::string_view account, std::string owner, Money overdraft_limit) {
  check_account_id(account);
  const factum::Timestamp at = now();
  run(account, context(), [&](Account& a) { a.open(owner, overdraft_limit, at); });
}

void Bank::deposit(std::string_view account, Money amount, std::string memo,
                   std::string reference) {
  check_account_id(account);
  check_memo(account, memo);
  if (!reference.empty()) check_reference(account, reference);
  const factum::Timestamp at = now();
  run(account, context(), reference, [&](Account& a) { a.deposit(amount, memo, at); });
}

void Bank::withdraw(std::string_view account, Money amount, std::string memo,
                    std::string reference) {
  check_account_id(account);
  check_memo(account, memo);
  if (!reference.empty()) check_reference(account, reference);
  const factum::Timestamp at = now();
  run(account, context(), reference, [&](Account& a) { a.withdraw(amount, memo, at); });
}

void Bank::close(std::string_view account) {
  check_account_id(account);
  const factum::Timestamp at = now();
  run(account, context(), [&](Account& a) { a.close(at); });
}

factum::Position Bank::forget(std::string_view account) {
  check_account_id(account);
  load(account).check_forgettable();
  start_projections();  // the read models purge the name in the forget's own transaction
  return store_.forget(owner_subject(account)).position;
}

TransferResult Bank::transfer(std::string_view from, std::string_view to, Money amount,
                              std::string memo, std::string reference) {
  check_account_id(from);
  check_account_id(to);
  check_memo(from, memo);
  if (!reference.empty()) check_reference(from, reference);
  if (from == to) {
    throw Refused(Refused::Reason::invalid, std::string(from),
                  "cannot transfer from account " + std::string(from) + " to itself");
  }
  // An unknown target is bad input, refused before anything is written. Whether the target
  // accepts the money is its own decision, taken below in its own stream.
  if (!load(to).exists()) {
    throw Refused(Refused::Reason::unknown_account, std::string(to),
                  "no account " + std::string(to));
  }
  TransferResult result;
  result.transfer_id = factum::EventId::generate();
  const factum::Timestamp at = now();
  const factum::StreamVersion debited =
      run(from, context(result.transfer_id), reference,
          [&](Account& a) { a.debit_transfer(std::string(to), amount, memo, at); });
  const factum::RecordedEvent debit = *store_.read_stream(stream_of(from), debited).begin();
  result.debit_id = debit.id;
  try {
    const factum::StreamVersion credited = run(to, factum::caused_by(debit), [&](Account& a) {
      a.credit_transfer(std::string(from), amount, memo, at);
    });
    result.credit_id = event_id(to, credited);
  } catch (const Refused& refused) {
    reverse(result, debit, to, amount, refused.what());
  }
  return result;
}

// The compensation: the money goes back to the source, naming the debit it undoes.
void Bank::reverse(TransferResult& result, const factum::RecordedEvent& debit, std::string_view to,
                   Money amount, std::string reason) {
  factum::Metadata metadata = factum::caused_by(debit);
  metadata.compensates = debit.id;
  const factum::Timestamp at = now();
  result.refusal = reason;
  const std::string from = account_of(debit.stream_id);
  const factum::StreamVersion reversed = run(
      from, metadata, [&](Account& a) { a.reverse_transfer(std::string(to), amount, reason, at); });
  result.reversal_id = event_id(from, reversed);
}

factum::StreamVersion Bank::run(std::string_view account, const factum::Metadata& metadata,
                                const std::function<void(Account&)>& command) {
  const Account saved = repository_.execute(
      account,
      [&](Account& a) {
        command(a);           // throws Refused: nothing written, projections not started
        start_projections();  // about to write: the read models must see it
      },
      {}, metadata);
  return saved.version();
}

factum::StreamVersion Bank::run(std::string_view account, const factum::Metadata& metadata,
                                const std::string& reference,
                                const std::function<void(Account&)>& command) {
  if (reference.empty()) return run(account, metadata, command);
  for (int attempt = 1;; ++attempt) {
    try {
      const std::vector<factum::AppendResult> results =
          factum::decide(store_, factum::Query::tagged({reference_tag(reference)}),
                         [&](const factum::QueryResult& seen) {
                           return std::vector<factum::StreamAppend>{
                               decide_payment(account, metadata, reference, seen, command)};
                         });
      return results.front().stream_version;
    } catch (const factum::ConcurrencyError&) {
      if (attempt >= 10) throw;  // the account moved after the load: load and decide again
    }
  }
}

factum::StreamAppend Bank::decide_payment(std::string_view account,
                                          const factum::Metadata& metadata,
                                          const std::string& reference,
                                          const factum::QueryResult& seen,
                                          const std::function<void(Account&)>& command) {
  if (!seen.events.empty()) {
    const factum::RecordedEvent& used = seen.events.front();
    throw Refused(Refused::Reason::reference_used, std::string(account),
                  "payment reference " + reference + " was used already, by account " +
                      account_of(used.stream_id) + " (position " + std::to_string(used.position) +
                      "): nothing booked to account " + std::string(account));
  }
  Account a = repository_.load(account);
  command(a);           // throws Refused: nothing written, projections not started
  start_projections();  // about to write: the read models must see it
  factum::Metadata tagged = metadata;
  factum::set_tags(tagged, {reference_tag(reference)});
  factum::StreamAppend append{
      stream_of(account), factum::ExpectedVersion::exact(a.loaded_version()), {}};
  for (const auto& event : a.pending()) {
    std::visit([&](const auto& e) { append.events.push_back(registry_.encode(e, tagged)); }, event);
  }
  return append;
}

factum::EventId Bank::event_id(std::string_view account, factum::StreamVersion version) const {
  return store_.read_stream(stream_of(account), version).begin()->id;
}

Account Bank::load(std::string_view account) const {
  check_account_id(account);
  return repository_.load(account);
}

// --- Reads ---------------------------------------------------------------------------------

std::optional<AccountRow> Bank::account(std::string_view id) {
  sync_read_models();
  return read_account(store_, id);
}

std::vector<AccountRow> Bank::accounts() {
  sync_read_models();
  return read_accounts(store_);
}

std::vector<StatementLine> Bank::statement(std::string_view id) {
  sync_read_models();
  return read_statement(store_, id);
}

std::optional<AccountStatement> Bank::account_statement(std::string_view id) {
  sync_read_models();
  return read_account_statement(store_, id);
}

void Bank::sync_read_models() {
  {
    std::lock_guard lock(engine_mu_);
    if (!engine_ && read_models_current()) return;
  }
  start_projections();
  std::lock_guard lock(engine_mu_);
  wait_for_read_models();
}

void Bank::wait_for_read_models() {
  if (engine_->wait_idle(std::chrono::minutes(1))) return;
  for (const factum::ProjectionStatus& s : engine_->status()) {
    if (s.error) {
      throw std::runtime_error("the read model '" + s.name + "' stopped at position " +
                               std::to_string(s.error->position) + ": " + s.error->message);
    }
  }
  throw std::runtime_error("the read models did not catch up with the log within a minute");
}

// True when both read models exist and reflect the head (read without writing anything).
bool Bank::read_models_current() const {
  try {
    int current = 0;
    for (const factum::ProjectionStatus& s : factum::ProjectionEngine::recorded(store_)) {
      const bool ours = s.name == "balances" || s.name == "statements";
      if (ours && s.version == 1 && s.lag == 0 && !s.error) ++current;
    }
    return current == 2;
  } catch (const factum::StorageError&) {
    return false;  // no projection tables yet
  }
}

void Bank::start_projections() {
  std::lock_guard lock(engine_mu_);
  if (engine_) return;
  engine_ = std::make_unique<factum::ProjectionEngine>(store_);
  const factum::ProjectionOptions inline_mode{.mode = factum::ProjectionMode::inline_append};
  engine_->add(std::make_shared<BalancesProjection>(registry_), inline_mode);
  engine_->add(std::make_shared<StatementsProjection>(registry_), inline_mode);
  // An inline projection applies appends itself only once its thread has caught up after
  // add(); appends before that would reach the read model later, on the thread. Wait, so that
  // the read models show a command's events as soon as it returns.
  wait_for_read_models();
}

// --- Helpers -------------------------------------------------------------------------------

factum::Timestamp Bank::now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::floor<std::chrono::microseconds>(std::chrono::system_clock::now());
}

factum::Metadata Bank::context(std::optional<factum::EventId> correlation) const {
  factum::Metadata m;
  m.actor = options_.actor;
  m.correlation_id = correlation ? *correlation : factum::EventId::generate();
  return m;
}

}  // namespace bank
