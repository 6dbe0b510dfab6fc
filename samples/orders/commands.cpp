// samples/orders/commands.cpp — the subcommands of factum-orders: one function each, which
// validates, acts through OrderService or reads the read models, and prints (see
// commands.hpp).
#include "orders/commands.hpp"

#include <factum/factum.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "orders/demo.hpp"
#include "orders/errors.hpp"
#include "orders/kafka_outbox.hpp"
#include "orders/order_service.hpp"
#include "orders/parsing.hpp"
#include "orders/read_models.hpp"
#include "own_store.hpp"
#include "store_location.hpp"

namespace orders {

namespace {

std::string pad(std::string_view text, std::size_t width) {
  std::string out(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

// --- Commands that write ---------------------------------------------------------------------

// Runs `act` (which throws, writing nothing, when refused), prints its line, then brings the
// read models up to date and prints the e-mails the outbox sent for it.
void write_command(const CommandLine& line, std::ostream& out, bool create,
                   const std::function<std::string(OrderService&)>& act) {
  check_order_id(line.order);
  factum::EventStore store = open_store(line.db, create);
  OrderService service(store);
  out << act(service) << std::endl;
  ReadModels models(store);
  models.catch_up();
  for (const Email& email : models.outbox().sent_emails()) {
    out << "  email to " << email.recipient << ": " << email.subject << "\n";
  }
}

std::vector<Item> parse_items(const std::vector<std::string>& texts) {
  std::vector<Item> items;
  for (const std::string& text : texts) items.push_back(parse_item(text));
  check_items(items);
  return items;
}

void place(const CommandLine& line, std::ostream& out) {
  check_order_id(line.order);
  check_customer(line.customer);
  const std::vector<Item> items = parse_items(line.items);  // all input checked before opening
  write_command(line, out, true, [&](OrderService& s) {
    const Order o = s.place(line.order, line.customer, items);
    return "placed order " + o.id() + " for " + o.customer() + ": " +
           std::to_string(o.items().size()) + (o.items().size() == 1 ? " item" : " items") +
           ", total " + format_cents(o.total_cents());
  });
}

void pay(const CommandLine& line, std::ostream& out) {
  write_command(line, out, false, [&](OrderService& s) {
    const Order o = s.pay(line.order);
    return "order " + o.id() + " paid: " + format_cents(o.paid_cents());
  });
}

void ship(const CommandLine& line, std::ostream& out) {
  write_command(line, out, false, [&](OrderService& s) {
    const Order o = s.ship(line.order);
    return "order " + o.id() + " shipped, tracking " + o.tracking();
  });
}

void deliver(const CommandLine& line, std::ostream& out) {
  write_command(line, out, false, [&](OrderService& s) {
    return "order " + s.deliver(line.order).id() + " delivered";
  });
}

void cancel(const CommandLine& line, std::ostream& out) {
  write_command(line, out, false, [&](OrderService& s) {
    const Order o = line.reason.empty() ? s.cancel(line.order) : s.cancel(line.order, line.reason);
    std::string text = "order " + o.id() + " cancelled";
    if (o.refunded_cents() > 0)
      text += "; payment of " + format_cents(o.refunded_cents()) + " refunded";
    return text;
  });
}

void refund(const CommandLine& line, std::ostream& out) {
  write_command(line, out, false, [&](OrderService& s) {
    const Order o = line.reason.empty() ? s.refund(line.order) : s.refund(line.order, line.reason);
    return "order " + o.id() + " refunded: " + format_cents(o.refunded_cents());
  });
}

// --- Commands that read --------------------------------------------------------------------

std::string describe_items(const std::vector<Item>& items) {
  std::string out;
  for (const Item& item : items) {
    if (!out.empty()) out += ", ";
    out += item.sku + " x" + std::to_string(item.quantity) + " at " + format_cents(item.unit_cents);
  }
  return out;
}

// "compensates 1 (orders.OrderPlaced), caused by 3" for an event of `history`.
std::string links_of(const factum::RecordedEvent& e,
                     const std::vector<factum::RecordedEvent>& history) {
  auto version_of = [&](const factum::EventId& id) -> std::string {
    for (const auto& h : history) {
      if (h.id == id) return std::to_string(h.stream_version) + " (" + h.type + ")";
    }
    return id.to_string();
  };
  std::string out;
  if (e.metadata.compensates) out += "  compensates " + version_of(*e.metadata.compensates);
  if (e.metadata.causation_id) out += ", caused by " + version_of(*e.metadata.causation_id);
  return out;
}

void show(const CommandLine& line, std::ostream& out) {
  check_order_id(line.order);
  factum::EventStore store = open_store(line.db, false);
  const OrderService service(store);
  // The history first, then the order as exactly those events make it: the two agree, however
  // many commands land in between.
  const std::vector<factum::RecordedEvent> history = service.history(line.order);
  const Order o = service.load_at(line.order, history.back().stream_version);
  out << "order " << o.id() << ": " << to_string(o.status()) << "\n"
      << "  customer  " << o.customer() << "\n"
      << "  items     " << describe_items(o.items()) << "\n"
      << "  total     " << format_cents(o.total_cents()) << " (paid "
      << format_cents(o.paid_cents()) << ", refunded " << format_cents(o.refunded_cents()) << ")\n"
      << "  history\n";
  for (const factum::RecordedEvent& e : history) {
    out << "    " << e.stream_version << "  " << pad(e.type, 25) << " position "
        << pad(std::to_string(e.position), 6) << " " << format_utc(e.recorded_at)
        << links_of(e, history) << "\n";
  }
}

// Opens the store and brings every read model up to date, for a query. Check the query's input
// first: bringing the read models up to date writes to the file.
struct QuerySession {
  explicit QuerySession(const CommandLine& line) : store(open_store(line.db, false)) {
    ReadModels(store).catch_up();
  }
  factum::EventStore store;
};

void print_board(const CommandLine& line, std::ostream& out) {
  if (!line.status.empty()) check_status(line.status);
  QuerySession session(line);
  const BoardView view = board_view(session.store, line.limit, line.status);  // one moment
  out << pad("order", 12) << pad("customer", 20) << pad("status", 11) << pad("total", 11)
      << pad("refunded", 10) << "updated\n";
  for (const BoardRow& r : view.rows) {
    out << pad(r.order_id, 12) << pad(r.customer, 20) << pad(r.status, 11)
        << pad(format_cents(r.total_cents), 11) << pad(format_cents(r.refunded_cents), 10)
        << r.updated << "\n";
  }
  std::int64_t total = 0;
  std::string counts;
  for (const auto& [status, n] : view.counts) {
    total += n;
    counts += (counts.empty() ? "" : ", ") + status + " " + std::to_string(n);
  }
  out << total << (total == 1 ? " order" : " orders") << (counts.empty() ? "" : ": " + counts)
      << "\n";
}

void print_inventory(const CommandLine& line, std::ostream& out) {
  QuerySession session(line);
  out << pad("sku", 20) << pad("reserved", 10) << "shipped\n";
  for (const InventoryRow& r : inventory(session.store)) {
    out << pad(r.sku, 20) << pad(std::to_string(r.reserved), 10) << r.shipped << "\n";
  }
}

// The outbox's Kafka channel, from the command line; checked before the store is opened.
std::optional<KafkaTarget> kafka_target(const CommandLine& line) {
  if (!line.kafka_brokers) return std::nullopt;
  require_kafka("outbox --kafka");
  if (line.kafka_brokers->empty()) {
    throw BadInput("outbox --kafka: give the brokers, HOST:PORT[,HOST:PORT...]");
  }
  if (line.kafka_topic.empty()) throw BadInput("outbox --topic: give a topic");
  KafkaTarget target;
  target.brokers = *line.kafka_brokers;
  target.topic = line.kafka_topic;
  target.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(line.kafka_timeout * 1000));
  return target;
}

// Prints nothing until everything succeeded: a failed publication is one line on stderr.
void print_outbox(const CommandLine& line, std::ostream& out) {
  const std::optional<KafkaTarget> kafka = kafka_target(line);
  QuerySession session(line);
  std::string report;
  if (line.redeliver) {
    const Redelivery r = redeliver_outbox(session.store);
    report += "redelivered " + std::to_string(r.delivered) +
              " events from position 1: " + std::to_string(r.sent) + " emails sent again, " +
              std::to_string(r.duplicates) + " recognised by their key\n";
  }
  if (kafka) {
    const KafkaPublication p = publish_to_kafka(session.store, *kafka);
    report += "published " + std::to_string(p.published) + " order events to Kafka topic '" +
              factum::printable(kafka->topic) + "' (relay '" + kKafkaRelayName + "'); checkpoint " +
              std::to_string(p.checkpoint) + ", head " + std::to_string(p.head) + "\n";
  }
  out << report;
  const SentEmailsView sent = sent_emails_view(session.store, line.limit);  // one moment
  out << sent.count << " emails sent\n";
  for (const SentEmail& e : sent.newest) {
    out << "  #" << pad(e.key.substr(0, e.key.find(':')), 6) << "to " << pad(e.recipient, 24)
        << e.subject << "\n";
  }
}

void print_search(const CommandLine& line, std::ostream& out) {
  SearchIndex::check_query(line.text);
  QuerySession session(line);
  const std::vector<SearchHit> hits = SearchIndex::search(session.store, line.text);
  for (const SearchHit& h : hits) {
    out << pad(h.order_id, 12) << pad(h.customer, 20) << pad(h.status, 11) << h.skus << "\n";
  }
  out << hits.size() << (hits.size() == 1 ? " order matches '" : " orders match '")
      << factum::printable(line.text) << "'\n";
}

}  // namespace

factum::EventStore open_store(const std::filesystem::path& db, bool create) {
  if (!create && !factum::samples::store_exists(db)) {
    throw Error("no store at " + factum::shown_location(db.string()) +
                " (place an order or run the demo first)");
  }
  factum::EventStore store = factum::EventStore::open(db);
  static const factum::samples::StoreOwner kOrders{
      "factum-orders", {std::string(kCategory)}, factum::samples::event_types_of<OrderEvent>()};
  factum::samples::require_own_store(store, kOrders);
  return store;
}

void run_command(const CommandLine& line, std::ostream& out) {
  static const std::map<std::string, std::function<void(const CommandLine&, std::ostream&)>,
                        std::less<>>
      kCommands{{"place", place},
                {"pay", pay},
                {"ship", ship},
                {"deliver", deliver},
                {"cancel", cancel},
                {"refund", refund},
                {"show", show},
                {"board", print_board},
                {"inventory", print_inventory},
                {"outbox", print_outbox},
                {"search", print_search},
                {"demo", run_demo_command}};
  const auto found = kCommands.find(line.command);
  if (found == kCommands.end()) throw Error("unknown command " + line.command);
  found->second(line, out);
}

}  // namespace orders
