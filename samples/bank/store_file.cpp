// samples/bank/store_file.cpp — the store file of a factum-bank command.
#include "store_file.hpp"

#include <stdexcept>

namespace bank {

factum::EventStore open_store(const std::filesystem::path& db, bool create,
                              factum::Durability durability) {
  if (!create && !std::filesystem::exists(db)) {
    throw std::runtime_error("no bank at '" + db.string() +
                             "': create one with 'factum-bank open' or 'factum-bank demo'");
  }
  factum::StoreOptions options;
  options.create_if_missing = create;
  options.durability = durability;
  return factum::EventStore::open(db, options);
}

factum::Position events_in(const std::filesystem::path& db) {
  if (!std::filesystem::exists(db)) return 0;
  factum::StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  return factum::EventStore::open(db, options).head_position();
}

void delete_store(const std::filesystem::path& db) {
  events_in(db);  // throws unless it is a factum store
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(std::filesystem::path(db.string() + suffix));
  }
}

}  // namespace bank
