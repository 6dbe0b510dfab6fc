// tests/samples/orders_cli_test.cpp — factum-orders end to end: runs the binary (its path comes
// from the build, FACTUM_ORDERS_BIN) in a temporary folder and checks what it prints, its exit
// code, and that a refused command leaves the store file exactly as it was.
#include <doctest/doctest.h>

#include <string>

#include "sample_cli.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace {

using factum::test::contains;
using factum::test::slurp;
using Result = factum::test::ProgramRun;

// A temporary folder to run factum-orders in; `args` is shell text (quote what needs it).
struct Folder {
  factum::test::TempDir dir;

  Result run(const std::string& args) const {
    return factum::test::run_shell("'" FACTUM_ORDERS_BIN "' " + args, dir.path());
  }
  // Runs `args`, which must succeed; returns what it printed.
  std::string ok(const std::string& args) const {
    const Result r = run(args);
    INFO(args, "\n", r.err);
    REQUIRE(r.code == 0);
    return r.out;
  }
  std::filesystem::path db() const { return dir.file("orders.db"); }
  factum::Position head() const { return factum::EventStore::open(db()).head_position(); }
};

// Checks that `args` fails with exactly `message` on one line of stderr, exit code 1, and
// leaves the store's file byte for byte as it was.
void refused(const Folder& f, const std::string& args, const std::string& message) {
  const bool existed = std::filesystem::exists(f.db());
  const std::string before = existed ? slurp(f.db()) : "";
  const factum::Position head = existed ? f.head() : 0;
  const Result r = f.run(args);
  INFO(args);
  CHECK(r.code == 1);
  CHECK(r.err == "factum-orders: " + message + "\n");
  CHECK(r.out.empty());
  CHECK(std::filesystem::exists(f.db()) == existed);
  if (existed) {
    CHECK(slurp(f.db()) == before);
    CHECK(f.head() == head);
  }
}

}  // namespace

TEST_CASE("--help lists every command and exits 0") {
  Folder f;
  const std::string help = f.ok("--help");
  for (const char* command : {"place", "pay", "ship", "deliver", "cancel", "refund", "show",
                              "board", "inventory", "outbox", "search", "demo", "--db"}) {
    CHECK(contains(help, command));
  }
  CHECK(contains(f.ok("place --help"), "SKU:QTY:PRICE"));
}

TEST_CASE("an order's lifecycle from the command line, with the e-mails it sends") {
  Folder f;
  CHECK(f.ok("place o-7 ann mug-01:2:12.50 tea-green:1:7.4") ==
        "placed order o-7 for ann: 2 items, total 32.40\n"
        "  email to ann@example.com: Order o-7 confirmed: 32.40\n");
  CHECK(std::filesystem::exists(f.db()));  // --db defaults to orders.db in the current folder
  CHECK(f.ok("pay o-7") == "order o-7 paid: 32.40\n");
  CHECK(f.ok("ship o-7") ==
        "order o-7 shipped, tracking TRK-o-7\n"
        "  email to ann@example.com: Order o-7 is on its way (tracking TRK-o-7)\n");
  CHECK(f.ok("deliver o-7") ==
        "order o-7 delivered\n  email to ann@example.com: Order o-7 was delivered\n");
  CHECK(f.ok("refund o-7 --reason broken") ==
        "order o-7 refunded: 32.40\n  email to ann@example.com: Refund of 32.40 for order o-7\n");
  CHECK(f.head() == 5);
}

TEST_CASE("cancelling a paid order refunds it, and show names what each event compensates") {
  Folder f;
  f.ok("place o-1 bob kettle:1:39");
  f.ok("pay o-1");
  CHECK(f.ok("cancel o-1") ==
        "order o-1 cancelled; payment of 39.00 refunded\n"
        "  email to bob@example.com: Order o-1 was cancelled\n"
        "  email to bob@example.com: Refund of 39.00 for order o-1\n");
  const std::string show = f.ok("show o-1");
  CHECK(contains(show, "order o-1: cancelled\n"));
  CHECK(contains(show, "  items     kettle x1 at 39.00\n"));
  CHECK(contains(show, "  total     39.00 (paid 39.00, refunded 39.00)\n"));
  CHECK(contains(show, "compensates 1 (orders.OrderPlaced)\n"));
  CHECK(contains(show,
                 "compensates 2 (orders.PaymentProcessed), caused by 3 "
                 "(orders.OrderCancelled)\n"));
}

TEST_CASE("board, inventory, outbox and search print the read models") {
  Folder f;
  f.ok("place o-1 ann mug-01:2:12.50");
  f.ok("place o-2 bob mug-01:1:12.50 tea-green:3:7.40");
  f.ok("pay o-1");
  f.ok("ship o-1");
  f.ok("cancel o-2");
  const std::string board = f.ok("board");
  CHECK(contains(board, "o-2         bob                 cancelled  34.70      0.00      "));
  CHECK(contains(board, "o-1         ann                 shipped    25.00      0.00      "));
  CHECK(contains(board, "2 orders: cancelled 1, shipped 1\n"));
  CHECK(f.ok("board --status shipped --limit 5").find("o-2 ") == std::string::npos);
  CHECK(f.ok("inventory") ==
        "sku                 reserved  shipped\n"
        "mug-01              0         2\n"
        "tea-green           0         0\n");
  const std::string outbox = f.ok("outbox");
  CHECK(contains(outbox, "4 emails sent\n"));
  CHECK(contains(outbox, "to bob@example.com         Order o-2 was cancelled\n"));
  CHECK(f.ok("search 'ann ship'") ==
        "o-1         ann                 shipped    mug-01\n1 order matches 'ann ship'\n");
  CHECK(f.ok("search tea") ==
        "o-2         bob                 cancelled  mug-01 tea-green\n1 order matches 'tea'\n");
  CHECK(f.ok("--db orders.db search nothing-like-it") == "0 orders match 'nothing-like-it'\n");
}

TEST_CASE("outbox --redelivery delivers every event again and sends nothing twice") {
  Folder f;
  f.ok("place o-1 ann mug-01:1:1");
  f.ok("pay o-1");
  f.ok("ship o-1");
  const std::string out = f.ok("outbox --redeliver");
  CHECK(contains(out,
                 "redelivered 2 events from position 1: 0 emails sent again, 2 recognised "
                 "by their key\n"));
  CHECK(contains(out, "2 emails sent\n"));
}

TEST_CASE("refused commands print one line, exit 1 and leave the store unchanged") {
  Folder f;
  f.ok("place o-1 ann mug-01:1:12.50");
  refused(f, "ship o-1", "order o-1 is placed, not paid: cannot ship it");
  refused(f, "deliver o-1", "order o-1 is placed, not shipped: cannot deliver it");
  refused(f, "pay o-2", "unknown order o-2");
  refused(f, "show o-2", "unknown order o-2");
  refused(f, "place o-1 bob mug-01:1:1",
          "order o-1 exists already (it is placed): cannot place "
          "it again");
  refused(f, "place o-3 ann mug-01:1:12.505",
          "malformed amount '12.505' in 'mug-01:1:12.505': expected a price from 0.01 to "
          "1000000.00, such as 12.50");
  refused(f, "place o-3 ann mug-01:two:1",
          "bad quantity 'two' in 'mug-01:two:1': expected a "
          "whole number from 1 to 10000");
  refused(f, "place o-3 ann mug-01",
          "bad item 'mug-01': expected SKU:QTY:PRICE, such as "
          "mug-01:2:12.50");
  refused(f, "pay 'o 1'",
          "bad order id 'o 1': use 1-40 letters, digits, '-' or '_', starting "
          "with a letter or digit");
  f.ok("pay o-1");
  f.ok("cancel o-1");
  refused(f, "refund o-1", "order o-1 is cancelled: cannot refund it");
  refused(f, "cancel o-1", "order o-1 is cancelled: cannot cancel it");
}

TEST_CASE("commands on a store that does not exist fail without creating it") {
  Folder f;
  refused(f, "pay o-1", "no store at orders.db (place an order or run the demo first)");
  refused(f, "board", "no store at orders.db (place an order or run the demo first)");
  refused(f, "place o-1 ann mug:1:0",
          "malformed amount '0' in 'mug:1:0': expected a price from "
          "0.01 to 1000000.00, such as 12.50");
  CHECK(!std::filesystem::exists(f.db()));
}

TEST_CASE("usage errors exit 2 with one line naming the program") {
  Folder f;
  const Result none = f.run("");
  CHECK(none.code == 2);
  CHECK(none.err == "factum-orders: A subcommand is required (see factum-orders --help)\n");
  const Result missing = f.run("place o-1 ann");
  CHECK(missing.code == 2);
  CHECK(missing.err == "factum-orders: ITEMS is required (see factum-orders --help)\n");
  const Result unknown = f.run("frobnicate");
  CHECK(unknown.code == 2);
  CHECK(unknown.err == "factum-orders: unknown command 'frobnicate' (see factum-orders --help)\n");
  CHECK(f.run("board --bogus").code == 2);
  CHECK(f.run("demo --orders 0").code == 2);
  CHECK(!std::filesystem::exists(f.db()));
}

TEST_CASE("--db names the store file, before or after the subcommand") {
  Folder f;
  f.ok("--db shop.db place o-1 ann mug-01:1:1");
  f.ok("pay o-1 --db shop.db");
  CHECK(contains(f.ok("show o-1 --db shop.db"), "order o-1: paid"));
  CHECK(!std::filesystem::exists(f.db()));
}

TEST_CASE("demo writes a realistic history, and refuses a store with events unless --fresh") {
  Folder f;
  const std::string out = f.ok("demo --orders 150");
  CHECK(contains(out, "150 orders"));
  CHECK(contains(out, "is placed, not paid: cannot ship it"));
  CHECK(contains(out, "is cancelled: cannot deliver it"));
  CHECK(contains(out, "order board: 150 orders"));
  CHECK(contains(out, "inventory, top SKUs"));
  CHECK(contains(out, "orders.PaymentRefunded compensates orders.PaymentProcessed"));
  CHECK(contains(out, " 0 emails sent twice"));
  const factum::Position head = f.head();
  CHECK(head > 400);
  const Result again = f.run("demo --orders 10");
  CHECK(again.code == 1);
  CHECK(again.err == "factum-orders: orders.db holds " + std::to_string(head) +
                         " events already: use --fresh to replace it, or another --db\n");
  CHECK(f.head() == head);
  f.ok("demo --orders 10 --fresh");
  CHECK(f.head() < head);
  CHECK(contains(f.ok("board --limit 1"), "10 orders: "));
}

namespace {

using factum::test::Refusal;

// factum-orders in a folder of its own, with orders.db made by successful commands: o-1
// placed, o-2 delivered, o-3 cancelled.
struct Shop {
  factum::test::SampleFolder folder{"factum-orders", FACTUM_ORDERS_BIN};
  std::filesystem::path db = folder.file("orders.db");
  Shop() {
    folder.ok({"place", "o-1", "ann", "mug-01:1:12.50"});
    folder.ok({"place", "o-2", "bob", "kettle:1:39"});
    for (const char* step : {"pay", "ship", "deliver"}) folder.ok({step, "o-2"});
    folder.ok({"place", "o-3", "cy", "mug-01:2:1"});
    folder.ok({"cancel", "o-3"});
  }
};

}  // namespace

TEST_CASE("factum-orders: every usage error exits 2 and leaves the store byte for byte unchanged") {
  Shop shop;
  factum::test::check_refusals(
      shop.folder, shop.db,
      {
          {{}, 2, "A subcommand is required"},
          {{"frobnicate"}, 2, "unknown command 'frobnicate'"},
          {{"place", "o-9", "ann"}, 2, "ITEMS"},
          {{"pay"}, 2, "ORDER"},
          {{"pay", "o-1", "o-2"}, 2, "o-2"},
          {{"board", "--bogus"}, 2, "--bogus"},
          {{"board", "--limit", "x"}, 2, "--limit"},
          {{"outbox", "--limit", "-1"}, 2, "--limit: Value -1 not in range"},
          {{"board", "--limit", "-1"}, 2, "--limit: Value -1 not in range"},
          {{"demo", "--orders", "0"}, 2, "--orders"},
          {{"demo", "--seed", "x"}, 2, "--seed"},
          {{"--db"}, 2, "--db"},
      });
}

TEST_CASE("factum-orders: every refused input leaves the store byte for byte unchanged") {
  Shop shop;
  factum::test::check_refusals(
      shop.folder, shop.db,
      {
          {{"place", "o-9", "ann", "mug-01:1:12.505"}, 1, "malformed amount '12.505'"},
          {{"place", "o-9", "ann", "mug-01:1:0"}, 1, "malformed amount '0'"},
          {{"place", "o-9", "ann", "mug-01:two:1"}, 1, "bad quantity 'two'"},
          {{"place", "o-9", "ann", "mug-01"}, 1, "bad item 'mug-01'"},
          {{"place", "o-9", "ann", "mug-01:1:1", "mug-01:2:1"}, 1, "SKU 'mug-01' is listed twice"},
          {{"place", "o-9", "ann smith", "mug-01:1:1"}, 1, "bad customer 'ann smith'"},
          {{"place", "o 9", "ann", "mug-01:1:1"}, 1, "bad order id 'o 9'"},
          {{"pay", "o/1"}, 1, "bad order id 'o/1'"},
          {{"show", "_o"}, 1, "bad order id '_o'"},
          {{"search", " "}, 1, "search: give at least one word"},
          {{"board", "--status", "lost"}, 1, "unknown status 'lost'"},
      });
}

TEST_CASE(
    "factum-orders: every command the rules refuse leaves the store byte for byte unchanged") {
  Shop shop;
  factum::test::check_refusals(
      shop.folder, shop.db,
      {
          {{"pay", "o-9"}, 1, "unknown order o-9"},
          {{"ship", "o-9"}, 1, "unknown order o-9"},
          {{"deliver", "o-9"}, 1, "unknown order o-9"},
          {{"cancel", "o-9"}, 1, "unknown order o-9"},
          {{"refund", "o-9"}, 1, "unknown order o-9"},
          {{"show", "o-9"}, 1, "unknown order o-9"},
          {{"place", "o-1", "bob", "mug-01:1:1"}, 1, "order o-1 exists already"},
          {{"ship", "o-1"}, 1, "order o-1 is placed, not paid: cannot ship it"},
          {{"refund", "o-1"}, 1, "cannot refund it"},
          {{"pay", "o-2"}, 1, "order o-2 is already delivered: cannot pay it"},
          {{"cancel", "o-2"}, 1, "cannot cancel it"},
          {{"refund", "o-3"}, 1, "order o-3 is cancelled: cannot refund it"},
          {{"pay", "o-3", "--db", "orders.db"}, 1, "order o-3 is cancelled: cannot pay it"},
          {{"demo"}, 1, "orders.db holds 7 events already"},
      });
}

TEST_CASE("factum-orders escapes control characters and bytes that are not UTF-8 in its errors") {
  Shop shop;
  factum::test::check_one_line_error(shop.folder.run({"pay", "o\x1b[31m\x07\xff"}), "factum-orders",
                                     1, "bad order id 'o\\x1b[31m\\x07\\xff'");
  factum::test::check_one_line_error(
      shop.folder.run({"place", "o-9", "ann", "mug-01:1:1\x1b]0;x\x07"}), "factum-orders", 1,
      "malformed amount '1\\x1b]0;x\\x07'");
  factum::test::check_one_line_error(shop.folder.run({"frob\x1b[2J\r\n"}), "factum-orders", 2,
                                     "unknown command 'frob\\x1b[2J\\x0d\\x0a'");
}

#ifndef FACTUM_HAVE_KAFKA
// A build without librdkafka (orders_kafka_test.cpp covers the options when it is there).
TEST_CASE("without the Kafka bridge, --kafka and --kafka-mock are refused before the store") {
  const std::string missing =
      ": this factum-orders was built without the Kafka bridge (librdkafka was not found by "
      "pkg-config when it was configured; see docs/kafka.md)";
  Folder f;
  refused(f, "demo --orders 3 --kafka-mock", "demo --kafka-mock" + missing);
  f.ok("place o-7 ann mug-01:1:12.50");
  refused(f, "outbox --kafka broker-1:9092", "outbox --kafka" + missing);
}
#endif
