// samples/orders/cli.cpp — the command line of factum-orders (CLI11): subcommands, their
// arguments and help; a failed command becomes one line on stderr and exit code 1, a usage
// error one line and exit code 2 (cli_errors.hpp).
#include <CLI/CLI.hpp>

#include <exception>

#include "cli_errors.hpp"
#include "orders/commands.hpp"
#include "orders/demo.hpp"

namespace orders {

namespace {

// What --limit takes: a negative number is a usage error, not a huge count.
const CLI::Range kLimits(std::size_t{0}, std::size_t{1000000});

void add_order(CLI::App& sub, CommandLine& line) {
  sub.add_option("ORDER", line.order, "the order's id, e.g. o-7")->required();
}

void add_writes(CLI::App& app, CommandLine& line) {
  CLI::App* place = app.add_subcommand("place", "place an order: ORDER CUSTOMER SKU:QTY:PRICE...");
  add_order(*place, line);
  place->add_option("CUSTOMER", line.customer, "who orders, e.g. ann or ann@example.com")
      ->required();
  place->add_option("ITEMS", line.items, "one or more SKU:QTY:PRICE, e.g. mug-01:2:12.50")
      ->required();
  add_order(*app.add_subcommand("pay", "record the payment of a placed order"), line);
  add_order(*app.add_subcommand("ship", "ship a paid order"), line);
  add_order(*app.add_subcommand("deliver", "record the delivery of a shipped order"), line);
  CLI::App* cancel = app.add_subcommand("cancel",
                                        "cancel an order before it ships (refunds it "
                                        "if paid)");
  add_order(*cancel, line);
  cancel->add_option("--reason", line.reason, "why");
  CLI::App* refund = app.add_subcommand("refund", "refund a delivered order (a return)");
  add_order(*refund, line);
  refund->add_option("--reason", line.reason, "why");
}

void add_reads(CLI::App& app, CommandLine& line) {
  add_order(*app.add_subcommand("show", "an order's state and its events"), line);
  CLI::App* board = app.add_subcommand("board", "the order board, most recently changed first");
  board->add_option("--status", line.status, "only orders with this status");
  board->add_option("--limit", line.limit, "rows to show (default 20)")->check(kLimits);
  app.add_subcommand("inventory", "units reserved and shipped per SKU");
  CLI::App* outbox = app.add_subcommand("outbox", "the e-mails the outbox sent");
  outbox->add_option("--limit", line.limit, "e-mails to list (default 20)")->check(kLimits);
  outbox->add_flag("--redeliver", line.redeliver,
                   "reset the outbox's checkpoint and deliver every event again first");
  CLI::Option* kafka = outbox->add_option(
      "--kafka", line.kafka_brokers,
      "also publish the order events to Kafka through the relay (from its checkpoint): the "
      "bootstrap servers, HOST:PORT[,HOST:PORT...]");
  outbox->add_option("--topic", line.kafka_topic, "the Kafka topic (default orders)")->needs(kafka);
  outbox
      ->add_option("--timeout", line.kafka_timeout,
                   "seconds the broker may take to confirm an event (default 30)")
      ->check(CLI::Range(0.1, 3600.0))
      ->needs(kafka);
  CLI::App* search = app.add_subcommand("search",
                                        "orders whose id, customer, SKUs or status "
                                        "contain every word of TEXT");
  search->add_option("TEXT", line.text, "words to look for")->required();
}

void add_demo(CLI::App& app, CommandLine& line) {
  CLI::App* demo = app.add_subcommand("demo",
                                      "write a realistic day of orders and show the "
                                      "read models");
  demo->add_option("--orders", line.demo_orders, "how many orders (default 800)")
      ->check(CLI::Range(std::size_t{1}, kMaxDemoOrders));
  demo->add_option("--seed", line.seed, "the random seed (default 42)");
  demo->add_flag("--fresh", line.fresh,
                 "replace a store file that holds events already (files only: on a PostgreSQL "
                 "URI the demo wants a schema without events)");
  demo->add_flag("--kafka-mock", line.kafka_mock,
                 "then publish the order events through the Kafka relay to librdkafka's "
                 "in-process mock cluster and read them back");
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app("factum-orders: an order lifecycle on factum, an event-sourced store",
               "factum-orders");
  CommandLine line;
  std::string db = line.db.string();
  app.add_option("--db", db,
                 "the store file (default: orders.db in the current folder), or a PostgreSQL URI "
                 "(postgresql://...; the store lives in its search_path's schema)");
  app.require_subcommand(1);
  app.fallthrough();  // --db may also follow the subcommand
  add_writes(app, line);
  add_reads(app, line);
  add_demo(app, line);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return factum::samples::report_parse_error(app, e, out, err);
  }
  line.db = db;
  line.command = app.get_subcommands().front()->get_name();
  try {
    run_command(line, out);
  } catch (const std::exception& e) {
    out.flush();
    return factum::samples::report_error(err, "factum-orders", e.what());
  }
  return 0;
}

}  // namespace orders
