// samples/orders/demo.cpp — the demo: a seeded day of a small shop, then what the read
// models show (see demo.hpp).
#include "orders/demo.hpp"

#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "orders/errors.hpp"
#include "orders/kafka_outbox.hpp"
#include "orders/order_service.hpp"
#include "orders/parsing.hpp"
#include "orders/read_models.hpp"
#include "progress.hpp"
#include "store_location.hpp"

namespace orders {

namespace {

struct Product {
  const char* sku;
  std::int64_t unit_cents;
};

constexpr std::array<Product, 14> kCatalog{{{"mug-01", 1250},
                                            {"tea-earl-grey", 890},
                                            {"tea-green", 740},
                                            {"kettle-steel", 3900},
                                            {"teapot-glass", 2400},
                                            {"coffee-beans-1kg", 2150},
                                            {"grinder-hand", 4500},
                                            {"filter-papers", 320},
                                            {"french-press", 2990},
                                            {"cup-set-4", 1800},
                                            {"scale-digital", 2750},
                                            {"milk-frother", 1590},
                                            {"cocoa-tin", 680},
                                            {"tray-bamboo", 1100}}};

constexpr std::array<const char*, 24> kCustomers{
    "ann",   "bob",  "chen", "dana", "emil",  "fatima", "gus",  "hana",
    "ivan",  "jo",   "kofi", "lena", "marta", "noor",   "otto", "priya",
    "quinn", "rosa", "sami", "tara", "ugo",   "vera",   "wen",  "yusuf"};

enum class Step { place, pay, ship, deliver, cancel, refund };

// How an order's day goes, and how often (weights in percent).
struct Fate {
  std::string_view name;
  int weight;
  std::vector<Step> steps;
};

const std::vector<Fate>& fates() {
  using S = Step;
  static const std::vector<Fate> kFates{
      {"delivered", 66, {S::place, S::pay, S::ship, S::deliver}},
      {"cancelled unpaid", 8, {S::place, S::cancel}},
      {"cancelled paid", 8, {S::place, S::pay, S::cancel}},  // refunded as it is cancelled
      {"returned", 6, {S::place, S::pay, S::ship, S::deliver, S::refund}},
      {"in transit", 4, {S::place, S::pay, S::ship}},
      {"awaiting shipment", 4, {S::place, S::pay}},
      {"awaiting payment", 4, {S::place}},
  };
  return kFates;
}

struct Plan {
  std::string id;
  std::string customer;
  std::vector<Item> items;
  const Fate* fate = nullptr;
  std::size_t next = 0;  // index of the next step
  bool done() const { return next == fate->steps.size(); }
};

class Shop {
 public:
  Shop(OrderService& service, std::uint32_t seed) : service_(service), rng_(seed) {}

  std::vector<Plan> make_plans(std::size_t n);
  // Runs every plan's steps, interleaved at random; returns the number of commands.
  std::size_t play(std::vector<Plan>& plans);
  void step(Plan& plan);

 private:
  std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  std::vector<Item> basket();
  const Fate* fate();

  OrderService& service_;
  std::mt19937 rng_;
};

std::vector<Item> Shop::basket() {
  std::vector<Item> items;
  const std::size_t lines = 1 + pick(3);
  const std::size_t first = pick(kCatalog.size());
  for (std::size_t i = 0; i < lines; ++i) {
    const Product& p = kCatalog[(first + i * 5) % kCatalog.size()];
    items.push_back({p.sku, static_cast<std::uint32_t>(1 + pick(3) / 2), p.unit_cents});
  }
  return items;
}

const Fate* Shop::fate() {
  int roll = static_cast<int>(pick(100));
  for (const Fate& f : fates()) {
    if (roll < f.weight) return &f;
    roll -= f.weight;
  }
  return &fates().front();
}

std::vector<Plan> Shop::make_plans(std::size_t n) {
  std::vector<Plan> plans;
  for (std::size_t i = 1; i <= n; ++i) {
    plans.push_back(
        {"o-" + std::to_string(i), kCustomers[pick(kCustomers.size())], basket(), fate()});
  }
  return plans;
}

void Shop::step(Plan& plan) {
  switch (plan.fate->steps[plan.next++]) {
    case Step::place:
      service_.place(plan.id, plan.customer, plan.items);
      break;
    case Step::pay:
      service_.pay(plan.id);
      break;
    case Step::ship:
      service_.ship(plan.id);
      break;
    case Step::deliver:
      service_.deliver(plan.id);
      break;
    case Step::cancel:
      service_.cancel(plan.id, "customer changed their mind");
      break;
    case Step::refund:
      service_.refund(plan.id, "returned: arrived damaged");
      break;
  }
}

std::size_t Shop::play(std::vector<Plan>& plans) {
  std::size_t total = 0;
  for (const Plan& p : plans) total += p.fate->steps.size();
  factum::samples::Progress bar("writing the day's orders", total);
  std::vector<std::size_t> open;  // plans in flight
  std::size_t started = 0;
  while (started < plans.size() || !open.empty()) {
    const bool start = started < plans.size() && (open.size() < 8 || pick(100) < 22);
    const std::size_t k = start ? open.size() : pick(open.size());
    if (start) open.push_back(started++);
    Plan& plan = plans[open[k]];
    step(plan);
    bar.advance();
    if (plan.done()) {
      open[k] = open.back();
      open.pop_back();
    }
  }
  bar.finish();
  return total;
}

// --- The report ------------------------------------------------------------------------------

// The first order whose day went as the fate `name` says.
const Plan* find_fate(const std::vector<Plan>& plans, std::string_view name) {
  for (const Plan& p : plans) {
    if (p.fate->name == name) return &p;
  }
  return nullptr;
}

// Tries commands that are out of order for the orders they name; prints each refusal.
std::size_t try_out_of_order(OrderService& service, const std::vector<Plan>& plans,
                             std::ostream& out) {
  const std::vector<std::pair<std::string_view, std::function<void(const std::string&)>>> attempts{
      {"awaiting payment", [&](const std::string& id) { service.ship(id); }},
      {"cancelled unpaid", [&](const std::string& id) { service.deliver(id); }},
      {"in transit", [&](const std::string& id) { service.refund(id); }},
      {"delivered", [&](const std::string& id) { service.cancel(id); }},
  };
  std::size_t refused = 0;
  for (const auto& [fate, command] : attempts) {
    const Plan* plan = find_fate(plans, fate);
    if (plan == nullptr) continue;
    try {
      command(plan->id);
    } catch (const Refused& e) {
      out << "    " << e.what() << "\n";
      ++refused;
    }
  }
  return refused;
}

void print_board(const factum::EventStore& store, std::ostream& out) {
  const BoardTotals totals = board_totals(store);
  out << "  order board: " << totals.orders << " orders\n   ";
  const auto counts = status_counts(store);
  for (const char* status : {"placed", "paid", "shipped", "delivered", "cancelled", "refunded"}) {
    const auto found = counts.find(status);
    out << " " << status << " " << (found == counts.end() ? 0 : found->second);
  }
  out << "\n    takings " << format_cents(totals.takings_cents)
      << " (paid, not refunded), refunded " << format_cents(totals.refunded_cents) << "\n";
}

void print_inventory(const factum::EventStore& store, std::ostream& out) {
  out << "  inventory, top SKUs by units shipped:\n";
  const std::vector<InventoryRow> rows = inventory(store);
  for (std::size_t i = 0; i < rows.size() && i < 5; ++i) {
    char line[96];
    std::snprintf(line, sizeof line, "    %-18s shipped %5lld  reserved %4lld\n",
                  rows[i].sku.c_str(), static_cast<long long>(rows[i].shipped),
                  static_cast<long long>(rows[i].reserved));
    out << line;
  }
}

void print_outbox(factum::EventStore& store, std::ostream& out) {
  const SentEmailsView sent = sent_emails_view(store, 2);
  out << "  outbox: " << sent.count << " emails sent, e.g.\n";
  for (const SentEmail& e : sent.newest) {
    out << "    to " << e.recipient << ": " << e.subject << "\n";
  }
  const Redelivery r = redeliver_outbox(store);
  out << "    redelivery (checkpoint reset to 0): " << r.delivered << " events delivered again, "
      << r.sent << " emails sent twice\n";
}

void print_search(const factum::EventStore& store, const std::vector<Plan>& plans,
                  std::ostream& out) {
  const std::string query = plans.front().customer + " delivered";
  const std::vector<SearchHit> hits = SearchIndex::search(store, query);
  out << "  search index (a subscription, change data capture): search \"" << query << "\" -> "
      << hits.size() << " orders";
  if (!hits.empty()) out << ", e.g. " << hits.front().order_id << " (" << hits.front().skus << ")";
  out << "\n";
}

void print_compensation(const OrderService& service, const std::vector<Plan>& plans,
                        std::ostream& out) {
  const Plan* plan = find_fate(plans, "cancelled paid");
  if (plan == nullptr) return;
  out << "  compensating events of " << plan->id << " (cancelled after payment):\n";
  const std::vector<factum::RecordedEvent> history = service.history(plan->id);
  for (const factum::RecordedEvent& e : history) {
    if (!e.metadata.compensates) continue;
    for (const factum::RecordedEvent& target : history) {
      if (target.id == *e.metadata.compensates) {
        out << "    " << e.type << " compensates " << target.type << " (event "
            << target.stream_version << ")\n";
      }
    }
  }
}

// `db` as a shell word: a URI (with '?', '&') quoted, its password masked; a path as it is.
std::string shell_word(const std::filesystem::path& db) {
  if (!factum::is_server_location(db.string())) return db.string();
  return "'" + factum::shown_location(db.string()) + "'";
}

}  // namespace

DemoResult run_demo(factum::EventStore& store, const DemoOptions& options, std::ostream& out) {
  OrderService service(store, "demo");
  Shop shop(service, options.seed);
  std::vector<Plan> plans = shop.make_plans(options.orders);
  DemoResult result;
  result.orders = plans.size();
  ReadModels models(store);
  const auto start = std::chrono::steady_clock::now();
  result.commands = shop.play(plans);
  result.events = store.head_position();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  char line[160];
  std::snprintf(line, sizeof line, "  %zu orders, %zu commands, %llu events in %.1f s\n",
                result.orders, result.commands, static_cast<unsigned long long>(result.events),
                took.count());
  out << line << "  out-of-order commands, refused:\n";
  result.refused = try_out_of_order(service, plans, out);
  out << "    (the log did not change: head still at " << store.head_position() << ")\n";
  models.catch_up();
  models.stop();
  print_board(store, out);
  print_inventory(store, out);
  print_search(store, plans, out);
  print_compensation(service, plans, out);
  print_outbox(store, out);
  if (options.kafka_mock) run_kafka_mock_demo(store, out);
  return result;
}

void run_demo_command(const CommandLine& line, std::ostream& out) {
  if (line.demo_orders < 1 || line.demo_orders > kMaxDemoOrders) {
    throw BadInput("demo: --orders must be from 1 to " + std::to_string(kMaxDemoOrders));
  }
  if (line.kafka_mock) require_kafka("demo --kafka-mock");
  if (factum::samples::store_exists(line.db)) {
    factum::Position head = 0;
    {
      // Throws for a file that is not a factum store, or a store that is not the orders'.
      factum::EventStore existing = open_store(line.db, false);
      head = existing.head_position();
    }
    // On a server the demo wants a schema without events: it never drops tables there.
    if (head > 0 && factum::is_server_location(line.db.string())) {
      throw Error(factum::samples::no_delete_on_server("factum-orders", line.db, head));
    }
    if (head > 0 && !line.fresh) {
      throw Error(line.db.string() + " holds " + std::to_string(head) +
                  " events already: use --fresh to replace it, or another --db");
    }
    if (!factum::is_server_location(line.db.string())) {
      for (const char* suffix : {"", "-wal", "-shm"}) {
        std::filesystem::remove(line.db.string() + suffix);
      }
    }
  }
  factum::StoreOptions options;
  options.durability = factum::Durability::normal;  // a demo: speed over power-cut safety
  factum::EventStore store = factum::EventStore::open(line.db, options);
  out << "factum-orders demo: a day of a small shop, written to "
      << factum::shown_location(line.db.string()) << "\n";
  run_demo(store, {line.demo_orders, line.seed, line.kafka_mock}, out);
  out << "  explore: factum-orders --db " << shell_word(line.db)
      << " show o-1 | board | inventory | outbox | search TEXT\n";
}

}  // namespace orders
