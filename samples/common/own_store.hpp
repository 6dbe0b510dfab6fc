// samples/common/own_store.hpp — which program a store file belongs to. Each sample keeps its
// events in streams of its own categories ("account-…" for factum-bank, "order-…" for
// factum-orders, "user-…" and "post-…" for factum-feed), with event types of its own. A
// sample given another program's store (`factum-orders --db bank.db`) refuses it at once,
// before it writes anything: no read-model tables, checkpoints or snapshots land in a file
// that is not its own. An empty store (no events yet) belongs to anyone.
//
//   auto store = factum::EventStore::open(db);
//   factum::samples::require_own_store(store, {"factum-orders", {"order"},
//                                              factum::samples::event_types_of<OrderEvent>()});
//
// Thread-safety: plain functions; the store may be shared (as EventStore).
#pragma once

#include <factum/factum.hpp>

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace factum::samples {

// What a sample's store holds.
struct StoreOwner {
  std::string program;                  // "factum-orders", for the message
  std::vector<std::string> categories;  // the stream categories it writes: {"order"}
  std::vector<std::string> types;       // every event type it writes
};

// The event types of the alternatives of `Variant` (each has a static `event_type`).
template <class Variant>
std::vector<std::string> event_types_of() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::vector<std::string>{
        std::string(std::variant_alternative_t<I, Variant>::event_type)...};
  }
  (std::make_index_sequence<std::variant_size_v<Variant>>{});
}

// Throws std::runtime_error when `store` holds a stream of a category `owner` does not write,
// or an event of a type it does not write: "'bank.db' is not a factum-orders store: it holds
// account streams (events such as bank.AccountOpened); give factum-orders a store of its own
// with --db". Reads only: the categories through their index (a few lookups, whatever the
// store's size), then the event types (one pass over the events table's rows, stopping at the
// first foreign one). Throws StorageError when the file cannot be read.
void require_own_store(const EventStore& store, const StoreOwner& owner);

}  // namespace factum::samples
