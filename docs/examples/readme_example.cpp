// docs/examples/readme_example.cpp — the example README.md shows, whole: a typed event, an
// append with an expected version, a stream read, an aggregate loaded through a repository, and
// a projection. ctest builds and runs it (label "docs"), and tests/docs checks that README.md
// shows this file's code as it is, so the README's example cannot rot.
#include <factum/factum.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>

// An event: a plain struct with a type name and a Boost.Serialization serialize.
struct Deposited {
  static constexpr std::string_view event_type = "bank.Deposited";
  std::int64_t cents = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& cents;
  }
};

// An aggregate: its state, one apply per event, and commands that check before they raise.
class Account : public factum::Aggregate<Account, Deposited> {
 public:
  static constexpr std::string_view category = "account";  // streams "account-<id>"
  void deposit(std::int64_t cents) {
    if (cents <= 0) throw std::invalid_argument("a deposit must be positive");
    raise(Deposited{cents});
  }
  void apply(const Deposited& e) { balance_ += e.cents; }
  std::int64_t balance() const { return balance_; }

 private:
  std::int64_t balance_ = 0;
};

// A projection: a read model in the store's own file, updated exactly once per event.
class Totals : public factum::Projection {
 public:
  explicit Totals(const factum::EventRegistry& registry) : registry_(registry) {}
  std::string name() const override { return "totals"; }
  std::uint32_t version() const override { return 1; }
  void reset(factum::ProjectionContext& ctx) override {
    ctx.sql().execute("CREATE TABLE " + ctx.table("totals") + " (cents INTEGER NOT NULL)");
    ctx.sql().execute("INSERT INTO " + ctx.table("totals") + " VALUES (0)");
  }
  void apply(const factum::RecordedEvent& e, factum::ProjectionContext& ctx) override {
    const auto d = registry_.decode<Deposited>(e);
    ctx.sql().execute("UPDATE " + ctx.table("totals") + " SET cents = cents + ?1", {d.cents});
  }

 private:
  const factum::EventRegistry& registry_;
};

int main() {
  const auto path = std::filesystem::temp_directory_path() / "factum-readme-example.db";
  std::filesystem::remove(path);
  auto store = factum::EventStore::open(path);
  factum::EventRegistry registry;
  registry.add<Deposited>();

  // Append with an expected version: the stream must be new; a second writer would get
  // ConcurrencyError instead of a silent overwrite.
  store.append("account-1", factum::ExpectedVersion::no_stream(), registry, Deposited{500});

  // Read a stream, decoded.
  for (const auto& e : registry.typed<std::variant<Deposited>>(store.read_stream("account-1"))) {
    std::cout << "deposited " << std::get<Deposited>(e.event).cents << " cents\n";
  }

  // Load an aggregate, run a command, save (retried on a concurrent write).
  factum::Repository<Account> accounts(store, registry);
  accounts.execute("1", [](Account& a) { a.deposit(250); });
  const std::int64_t balance = accounts.load("1").balance();

  // A projection, caught up with the log.
  factum::ProjectionEngine engine(store);
  engine.add(std::make_shared<Totals>(registry));
  engine.wait_for("totals", store.head_position(), std::chrono::seconds(10));
  std::int64_t total = 0;
  store.read_sql([&](factum::Sql& sql) {
    total = sql.query_integer("SELECT cents FROM totals").value_or(-1);
  });
  std::cout << "balance " << balance << ", total " << total << "\n";
  return balance == 750 && total == 750 ? 0 : 1;
}
