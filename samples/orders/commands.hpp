// samples/orders/commands.hpp — what each subcommand of factum-orders does and prints. The
// command line itself (CLI11: options, help, usage errors) is cli.cpp.
//
// Every command throws on bad input or a refused transition before it writes anything
// (orders::Error, factum::Error); the caller prints the message as one line.
// Thread-safety: one command at a time per process.
#pragma once

#include <factum/factum.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace orders {

// What the command line parsed.
struct CommandLine {
  std::filesystem::path db = "orders.db";
  std::string command;  // "place", "board", ...
  std::string order;
  std::string customer;
  std::vector<std::string> items;  // "SKU:QTY:PRICE"
  std::string reason;
  std::string status;  // board --status
  std::string text;    // search
  std::size_t limit = 20;
  bool redeliver = false;  // outbox --redeliver
  // outbox --kafka BROKERS [--topic T] [--timeout S]: publish the order events to Kafka too
  std::optional<std::string> kafka_brokers;
  std::string kafka_topic = "orders";
  double kafka_timeout = 30;  // seconds
  bool kafka_mock = false;    // demo --kafka-mock
  bool fresh = false;         // demo --fresh
  std::size_t demo_orders = 800;
  std::uint32_t seed = 42;
};

// Runs `line.command`, printing its result to `out`. Throws on failure (nothing written).
void run_command(const CommandLine& line, std::ostream& out);

// Opens the store at `db`; unless `create`, refuses (Error) a file that does not exist. Refuses
// (std::runtime_error) a store that holds streams or event types other than the orders', such
// as another sample's, before anything is written to it (own_store.hpp). Throws
// factum::StorageError for a file that is not a factum store.
factum::EventStore open_store(const std::filesystem::path& db, bool create);

// Parses argv and runs the command: 0 on success; 1 with "factum-orders: <message>" on `err`
// for a failed command; 2 with "factum-orders: <message> (see factum-orders --help)" for a
// usage error (cli_errors.hpp). Messages are escaped (factum::printable).
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace orders
