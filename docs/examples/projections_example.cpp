// docs/examples/projections_example.cpp — the complete program of docs/projections.md: an
// async balances projection, an inline one that is never behind the log, a new version of
// the balances logic rebuilt blue/green with progress, a failing projection stopped without
// harming the others, an external target made idempotent by its key, and status(). It checks
// its own results and exits 1 on any mismatch (ctest runs it, label "docs").
#include <factum/factum.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "MISMATCH: " << what << "\n";
    ++failures;
  }
}

// Payload: the amount in cents as text (a real program would use EventRegistry).
factum::EventData deposit(std::int64_t cents) {
  factum::EventData e;
  e.type = "bank.Deposited";
  e.payload = factum::to_bytes(std::to_string(cents));
  return e;
}

std::int64_t cents_of(const factum::RecordedEvent& e) {
  return std::stoll(factum::to_string(e.payload));
}

// Balances per account. Version 1 adds each deposit; version 2 charges a 1-cent fee on each
// deposit — raising the version makes the engine rebuild the read model from position 1.
class Balances : public factum::Projection {
 public:
  explicit Balances(std::uint32_t version) : version_(version) {}
  std::string name() const override { return "balances"; }
  std::uint32_t version() const override { return version_; }
  std::vector<std::string> event_types() const override { return {"bank.Deposited"}; }
  void reset(factum::ProjectionContext& ctx) override {
    ctx.sql().execute("CREATE TABLE " + ctx.table("balances") +
                      " (account TEXT PRIMARY KEY, cents INTEGER NOT NULL)");
  }
  void apply(const factum::RecordedEvent& e, factum::ProjectionContext& ctx) override {
    const std::int64_t fee = version_ >= 2 ? 1 : 0;
    ctx.sql().execute("INSERT INTO " + ctx.table("balances") +
                          " (account, cents) VALUES (?1, ?2) ON CONFLICT (account) DO UPDATE "
                          "SET cents = cents + excluded.cents",
                      {e.stream_id, cents_of(e) - fee});
  }

 private:
  std::uint32_t version_;
};

// Deposits counted inline: inside each append's own transaction.
class DepositCount : public factum::Projection {
 public:
  std::string name() const override { return "deposit-count"; }
  std::uint32_t version() const override { return 1; }
  void reset(factum::ProjectionContext& ctx) override {
    ctx.sql().execute("CREATE TABLE " + ctx.table("deposit_count") + " (n INTEGER NOT NULL)");
    ctx.sql().execute("INSERT INTO " + ctx.table("deposit_count") + " VALUES (0)");
  }
  void apply(const factum::RecordedEvent&, factum::ProjectionContext& ctx) override {
    ctx.sql().execute("UPDATE " + ctx.table("deposit_count") + " SET n = n + 1");
  }
};

// A projection with a bug: it cannot handle deposits above 1000 cents.
class Fragile : public factum::Projection {
 public:
  std::string name() const override { return "fragile"; }
  std::uint32_t version() const override { return 1; }
  void reset(factum::ProjectionContext&) override {}
  void apply(const factum::RecordedEvent& e, factum::ProjectionContext&) override {
    if (cents_of(e) > 1000) throw std::runtime_error("amount too large for this projection");
  }
};

// An external target (here: a set standing in for a mail server). Delivery is at least once;
// the key makes a redelivered event a no-op.
class Mailer : public factum::Projection {
 public:
  std::string name() const override { return "mailer"; }
  std::uint32_t version() const override { return 1; }
  void reset(factum::ProjectionContext&) override {}
  void apply(const factum::RecordedEvent&, factum::ProjectionContext& ctx) override {
    if (sent_keys.insert(ctx.key().to_string()).second) ++mails_sent;
  }
  std::set<std::string> sent_keys;
  int mails_sent = 0;
};

std::int64_t query(factum::EventStore& store, const std::string& sql_text) {
  std::int64_t out = -1;
  store.read_sql([&](factum::Sql& sql) { out = sql.query_integer(sql_text).value_or(-1); });
  return out;
}

}  // namespace

int main() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("factum-projections-example-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  auto store = factum::EventStore::open(dir / "bank.db");
  for (int i = 0; i < 300; ++i) {
    store.append("account-" + std::to_string(i % 3), factum::ExpectedVersion::any(), deposit(100));
  }

  {
    factum::ProjectionEngine engine(store);
    engine.add(std::make_shared<Balances>(1));  // async: catches up on its own thread
    engine.add(std::make_shared<DepositCount>(), {.mode = factum::ProjectionMode::inline_append});
    engine.wait_idle(10s);

    // Queries read the logical names: views on the serving generation's tables.
    expect(query(store, "SELECT cents FROM balances WHERE account = 'account-0'") == 10000,
           "balances v1");
    // Inline: once append() returns, the read model shows the event. No waiting.
    store.append("account-0", factum::ExpectedVersion::any(), deposit(100));
    expect(query(store, "SELECT n FROM deposit_count") == 301, "inline count is never behind");
    engine.wait_idle(10s);
  }

  // New logic: version 2 charges a fee. The engine rebuilds into generation 2 while
  // generation 1 keeps answering queries, then swaps them in one transaction.
  std::vector<factum::RebuildProgress> progress;
  {
    factum::EngineOptions options;
    options.on_progress = [&](const factum::RebuildProgress& p) { progress.push_back(p); };
    factum::ProjectionEngine engine(store, options);
    engine.add(std::make_shared<Balances>(2));
    engine.wait_idle(10s);
    const factum::ProjectionStatus s = engine.status("balances");
    expect(s.version == 2 && s.generation == 2, "rebuilt as generation 2 of version 2");
    expect(query(store, "SELECT cents FROM balances WHERE account = 'account-0'") == 10100 - 101,
           "balances v2 with the fee");
  }
  expect(!progress.empty() && progress.back().finished && progress.back().done == 301,
         "rebuild progress reported");

  // Failures stay local: the fragile projection stops at the large deposit, with the event
  // recorded; the others reach the head.
  {
    auto mailer = std::make_shared<Mailer>();
    factum::ProjectionEngine engine(store);
    engine.add(std::make_shared<Balances>(2));
    engine.add(std::make_shared<Fragile>());
    engine.add(mailer, {.target = factum::ProjectionTarget::external});
    const auto big = store.append("account-1", factum::ExpectedVersion::any(), deposit(5000));
    engine.wait_for("balances", big.last_position, 10s);
    engine.wait_for("mailer", big.last_position, 10s);
    engine.wait_for("fragile", big.last_position, 10s);  // returns false: it failed
    const factum::ProjectionStatus fragile = engine.status("fragile");
    expect(fragile.state == factum::ProjectionState::failed, "fragile stopped");
    expect(fragile.error && fragile.error->position == big.last_position &&
               fragile.error->event_type == "bank.Deposited",
           "failure names the event");
    expect(fragile.checkpoint == big.last_position - 1, "fragile stopped before the event");
    expect(engine.status("balances").lag == 0, "balances not harmed");
    expect(mailer->mails_sent == 302, "one mail per event");

    for (const factum::ProjectionStatus& st : engine.status()) {
      std::cout << st.name << ": v" << st.version << " " << factum::to_string(st.state)
                << " checkpoint " << st.checkpoint << " lag " << st.lag << "\n";
    }
  }

  std::filesystem::remove_all(dir);
  return failures == 0 ? 0 : 1;
}
