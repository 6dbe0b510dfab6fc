// samples/orders/demo.hpp — `factum-orders demo`: a day of a small shop written into a fresh
// store — hundreds of orders taken through their lifecycles, some cancelled before or after
// payment, some refunded after delivery, a few commands refused for being out of order —
// then what the read models show: the board, the inventory, the outbox (with a redelivery
// that sends nothing twice) and the search index.
//
// The orders are interleaved the way a shop sees them, from a seeded random generator, so a
// seed always gives the same history (ids, customers, items, fates).
//
// Thread-safety: one demo at a time per store.
#pragma once

#include <factum/factum.hpp>

#include <cstddef>
#include <cstdint>
#include <ostream>

#include "orders/commands.hpp"

namespace orders {

// The most orders a demo places (--orders).
inline constexpr std::size_t kMaxDemoOrders = 100000;

struct DemoOptions {
  std::size_t orders = 800;  // orders placed (ids o-1 .. o-<orders>)
  std::uint32_t seed = 42;   // the random generator's seed
  bool kafka_mock = false;   // then relay the order events to a mock Kafka cluster and read back
};

struct DemoResult {
  std::size_t orders = 0;
  std::size_t commands = 0;  // commands that wrote events
  std::size_t refused = 0;   // out-of-order commands tried and refused
  factum::Position events = 0;
};

// Writes the demo's history into `store` (through OrderService, with a progress bar on a
// terminal) while the read models follow; prints the summary on `out`.
DemoResult run_demo(factum::EventStore& store, const DemoOptions& options, std::ostream& out);

// The `demo` subcommand: refuses a --db that holds events unless --fresh (which replaces it,
// but only when it is a store of orders: never another program's), then run_demo.
void run_demo_command(const CommandLine& line, std::ostream& out);

}  // namespace orders
