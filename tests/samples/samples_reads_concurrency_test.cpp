// tests/samples/samples_reads_concurrency_test.cpp — what the sample programs print beside a
// writer agrees with itself: a command that shows two things derived from the same history
// (a state and its events, rows and their count, a header and its lines) reads them as of one
// moment, so a write landing between its reads cannot make them disagree. Each test runs a
// command many times, each time after the writer (a thread with a store handle of its own, as
// another process would be) moved on, and checks what it printed.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

// By their folder under samples/: bank and feed both have a commands.hpp.
#include "bank/bank.hpp"
#include "bank/commands.hpp"
#include "bank/store_file.hpp"
#include "feed/commands.hpp"
#include "feed/feed_service.hpp"
#include "feed/time_text.hpp"
#include "orders/commands.hpp"
#include "orders/order_service.hpp"
#include "orders/read_models.hpp"
#include "personal_store.hpp"
#include "support/background_loop.hpp"
#include "support/temp_dir.hpp"

namespace {

constexpr int kReads = 150;
constexpr int kBoards = 80;  // each brings the read models up to date: slower

using factum::test::BackgroundLoop;

factum::EventStore open_fast(const std::filesystem::path& db) {
  return factum::EventStore::open(db, factum::test::personal_options());
}

// Runs `read` `reads` times beside `writer`, and `check`s what it printed. Each read waits for
// the writer to have moved on since the one before; with `in_step` false, only the first does
// (the reads then fall anywhere in the writer's steps, not just after one).
template <class Read, class Check>
void read_beside(BackgroundLoop& writer, Read&& read, Check&& check, int reads = kReads,
                 bool in_step = true) {
  for (int i = 0; i < reads; ++i) {
    if (i == 0 || in_step) {
      REQUIRE_MESSAGE(writer.await_progress(), "the writer failed: ", writer.error());
    }
    const std::string out = read();
    INFO(out);
    check(out);
  }
  writer.stop();
  REQUIRE_MESSAGE(writer.error().empty(), writer.error());
}

// The numbers of `text` matched by the first two groups of `pattern`.
std::pair<long, long> two_numbers(const std::string& text, const std::regex& pattern) {
  std::smatch m;
  REQUIRE(std::regex_search(text, m, pattern));
  return {std::stol(m[1].str()), std::stol(m[2].str())};
}

// What factum-bank's statement command printed (it prints on std::cout).
std::string bank_statement(const std::filesystem::path& db, const std::string& account) {
  std::ostringstream out;
  std::streambuf* const previous = std::cout.rdbuf(out.rdbuf());
  try {
    bank::set_key_file(factum::test::samples_kek());  // the store's KEK (personal_options)
    bank::statement_command(db, account, 0);
  } catch (...) {
    std::cout.rdbuf(previous);
    throw;
  }
  std::cout.rdbuf(previous);
  return out.str();
}

std::string run_orders(const orders::CommandLine& line) {
  std::ostringstream out;
  orders::run_command(line, out);
  return out.str();
}

orders::CommandLine orders_command(const std::filesystem::path& db, std::string command,
                                   std::string order = {}) {
  orders::CommandLine line;
  line.db = db;
  line.command = std::move(command);
  line.order = std::move(order);
  line.limit = 1000;
  return line;
}

// The order of the writer's step `i`: each order is placed, paid, shipped and delivered, then
// the next.
std::string order_of(std::uint64_t step) { return "o-" + std::to_string(step / 4); }

void order_step(orders::OrderService& service, std::uint64_t step) {
  const std::string order = order_of(step);
  switch (step % 4) {
    case 0:
      service.place(order, "ann", {{"mug-01", 1, 500}});
      break;
    case 1:
      service.pay(order);
      break;
    case 2:
      service.ship(order);
      break;
    default:
      service.deliver(order);
  }
}

}  // namespace

TEST_CASE("factum-bank statement: its header's status and its lines are of one moment") {
  factum::test::TempDir dir;
  const std::filesystem::path db = dir.file("bank.db");
  factum::EventStore store = open_fast(db);
  bank::Bank writer_bank(store);
  writer_bank.open("acc-0", "Ann");
  std::atomic<int> newest{0};  // the account the writer opened last
  // Opens an account, makes a few deposits into acc-0 (0 to 15: the account's close then falls
  // anywhere in the reads of it that started meanwhile), and closes it.
  BackgroundLoop writer([&](std::uint64_t i) {
    const std::string id = "acc-" + std::to_string(i + 1);
    writer_bank.open(id, "Ann");
    newest = static_cast<int>(i + 1);
    for (std::uint64_t d = 0; d < i % 16; ++d)
      writer_bank.deposit("acc-0", bank::Money::parse("1"));
    writer_bank.close(id);
  });
  read_beside(
      writer, [&] { return bank_statement(db, "acc-" + std::to_string(newest.load())); },
      [](const std::string& out) {
        const bool closed_line = out.find(" closed ") != std::string::npos;
        const bool closed_header = out.find(", closed): ") != std::string::npos;
        CHECK(closed_line == closed_header);
      },
      200, false);
}

TEST_CASE("factum-orders show: the order's state is the one its history shows") {
  factum::test::TempDir dir;
  const std::filesystem::path db = dir.file("orders.db");
  factum::EventStore store = open_fast(db);
  orders::OrderService service(store);
  std::atomic<std::uint64_t> last{0};  // the writer's last step
  BackgroundLoop writer([&](std::uint64_t i) {
    order_step(service, i);
    last = i;
  });
  const std::map<std::string, int> events_of{
      {"placed", 1}, {"paid", 2}, {"shipped", 3}, {"delivered", 4}};
  read_beside(
      writer, [&] { return run_orders(orders_command(db, "show", order_of(last.load()))); },
      [&](const std::string& out) {
        std::smatch m;
        REQUIRE(std::regex_search(out, m, std::regex("^order o-[0-9]+: ([a-z]+)\n")));
        const std::regex event_line("^    [0-9]+  orders\\.");
        int history = 0;
        std::istringstream lines(out);
        for (std::string line; std::getline(lines, line);) {
          if (std::regex_search(line, event_line)) ++history;
        }
        CHECK(events_of.at(m[1].str()) == history);
      },
      300, false);
}

TEST_CASE("factum-orders board: its rows and its count per status are of one moment") {
  factum::test::TempDir dir;
  const std::filesystem::path db = dir.file("orders.db");
  factum::EventStore store = open_fast(db);
  orders::OrderService service(store);
  orders::ReadModels models(store);  // a program that keeps the read models following the log
  BackgroundLoop writer([&](std::uint64_t i) { order_step(service, i); });
  read_beside(
      writer, [&] { return run_orders(orders_command(db, "board")); },
      [](const std::string& out) {
        std::map<std::string, long> rows;
        std::istringstream lines(out);
        std::string line;
        std::getline(lines, line);  // the header
        long shown = 0;
        while (std::getline(lines, line) && line.rfind("o-", 0) == 0) {
          std::istringstream words(line);
          std::string order, customer, status;
          words >> order >> customer >> status;
          ++rows[status];
          ++shown;
        }
        std::map<std::string, long> counted;
        long total = 0;
        const std::regex count("(placed|paid|shipped|delivered) ([0-9]+)");
        for (std::sregex_iterator it(line.begin(), line.end(), count), end; it != end; ++it) {
          counted[(*it)[1].str()] = std::stol((*it)[2].str());
          total += std::stol((*it)[2].str());
        }
        CHECK(line.rfind(std::to_string(total) + " order", 0) == 0);
        CHECK(shown == std::min(total, 1000L));  // the limit: 1,000 rows
        if (shown == total) CHECK(counted == rows);
      },
      kBoards);
}

TEST_CASE("factum-feed feed: its posts and its count are of one moment") {
  factum::test::TempDir dir;
  const std::filesystem::path db = dir.file("feed.db");
  factum::EventStore store = open_fast(db);
  feed::FeedService service(store);
  const factum::Timestamp at = feed::now();
  service.join("alice", at);
  service.join("bob", at);
  service.follow("bob", "alice", at);
  BackgroundLoop writer([&](std::uint64_t i) { service.post("alice", std::to_string(i), at); });
  read_beside(
      writer,
      [&] {
        std::ostringstream out;
        feed::run_feed(feed::CommandContext{db, std::nullopt, &out, factum::test::samples_kek()},
                       "bob", 1000);
        return out.str();
      },
      [](const std::string& out) {
        const auto [shown, total] =
            two_numbers(out, std::regex("^Feed of bob: ([0-9]+) of ([0-9]+) post"));
        CHECK(shown == std::min(total, 1000L));  // the limit: 1,000 posts
      });
}

TEST_CASE("factum-feed's totals are of one moment") {
  factum::test::TempDir dir;
  const std::filesystem::path db = dir.file("feed.db");
  factum::EventStore store = open_fast(db);
  feed::FeedService service(store);
  const factum::Timestamp at = feed::now();
  service.join("alice", at);
  service.join("bob", at);
  service.follow("bob", "alice", at);
  BackgroundLoop writer([&](std::uint64_t i) { service.post("alice", std::to_string(i), at); });
  factum::EventStore reader_store = open_fast(db);
  const feed::FeedService reader(reader_store);
  read_beside(
      writer,
      [&] {
        const feed::Totals t = reader.totals();
        return std::to_string(t.posts) + " posts, " + std::to_string(t.feed_items) + " in feeds";
      },
      [](const std::string& out) {
        const auto [posts, in_feeds] = two_numbers(out, std::regex("^([0-9]+) posts, ([0-9]+)"));
        CHECK(posts == in_feeds);  // bob follows alice, the only one who posts
      });
}
