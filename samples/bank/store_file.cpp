// samples/bank/store_file.cpp — the store file of a factum-bank command.
#include "store_file.hpp"

#include <stdexcept>

#include "events.hpp"
#include "own_store.hpp"
#include "store_location.hpp"

namespace bank {
namespace {

// What a bank's store holds: accounts, as "account-<id>" streams of the bank's events.
const factum::samples::StoreOwner& bank_store() {
  static const factum::samples::StoreOwner kOwner{
      "factum-bank", {"account"}, factum::samples::event_types_of<BankEvent>()};
  return kOwner;
}

}  // namespace

factum::EventStore open_store(const std::filesystem::path& db, bool create,
                              factum::Durability durability) {
  if (!create && !factum::samples::store_exists(db)) {
    throw std::runtime_error("no bank at '" + factum::shown_location(db.string()) +
                             "': create one with 'factum-bank open' or 'factum-bank demo'");
  }
  factum::StoreOptions options;
  options.create_if_missing = create;
  options.durability = durability;
  factum::EventStore store = factum::EventStore::open(db, options);
  factum::samples::require_own_store(store, bank_store());
  return store;
}

factum::Position events_in(const std::filesystem::path& db) {
  if (!factum::samples::store_exists(db)) return 0;
  // Opened for writing, though it writes nothing: the last writable connection to close
  // removes the -wal and -shm files, which a read-only one would leave behind.
  return open_store(db, false).head_position();
}

void delete_store(const std::filesystem::path& db) {
  const factum::Position events = events_in(db);  // throws unless it is a factum store
  if (factum::is_server_location(db.string())) {
    throw std::runtime_error(factum::samples::no_delete_on_server("factum-bank", db, events));
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(std::filesystem::path(db.string() + suffix));
  }
}

}  // namespace bank
