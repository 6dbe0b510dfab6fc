// samples/bank/store_file.cpp — the store file of a factum-bank command.
#include "store_file.hpp"

#include <stdexcept>

#include <factum/eventstore/personal.hpp>

#include <key_file.hpp>
#include "events.hpp"
#include "own_store.hpp"
#include "store_location.hpp"

namespace bank {
namespace {

// What a bank's store holds: accounts, as "account-<id>" streams of the bank's events.
// And the facts of forgotten owners (factum.SubjectForgotten in the stream factum-subjects).
const factum::samples::StoreOwner& bank_store() {
  static const factum::samples::StoreOwner kOwner = [] {
    factum::samples::StoreOwner owner{
        "factum-bank", {"account", "factum"}, factum::samples::event_types_of<BankEvent>()};
    owner.types.emplace_back(factum::kSubjectForgottenType);
    return owner;
  }();
  return kOwner;
}

std::optional<std::filesystem::path>& key_file_option() {
  static std::optional<std::filesystem::path> kek;
  return kek;
}

}  // namespace

void set_key_file(std::optional<std::filesystem::path> kek) { key_file_option() = std::move(kek); }

factum::EventStore open_store(const std::filesystem::path& db, bool create,
                              factum::Durability durability) {
  const std::filesystem::path kek =
      factum::samples::key_file_for(db, key_file_option(), "factum-bank");  // before connecting
  if (!create && !factum::samples::store_exists(db)) {
    throw std::runtime_error("no bank at '" + factum::shown_location(db.string()) +
                             "': create one with 'factum-bank open' or 'factum-bank demo'");
  }
  factum::StoreOptions options;
  options.create_if_missing = create;
  options.durability = durability;
  factum::samples::use_key_file(options, db, kek, create, "account owners");
  factum::EventStore store = factum::EventStore::open(db, options);
  factum::samples::require_own_store(store, bank_store());
  return store;
}

factum::Position events_in(const std::filesystem::path& db) {
  if (!factum::samples::store_exists(db)) return 0;
  // Opened for writing, though it writes nothing: the last writable connection to close
  // removes the -wal and -shm files, which a read-only one would leave behind.
  factum::StoreOptions options;  // no KEK: counting events reads no personal data
  options.create_if_missing = false;
  factum::EventStore store = factum::EventStore::open(db, options);
  factum::samples::require_own_store(store, bank_store());
  return store.head_position();
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
