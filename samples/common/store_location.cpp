// samples/common/store_location.cpp — store files and PostgreSQL URIs (see store_location.hpp).
#include "store_location.hpp"

#include <factum/factum.hpp>

namespace factum::samples {

bool store_exists(const std::filesystem::path& location) {
  if (!is_server_location(location.string())) return std::filesystem::exists(location);
  StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  try {
    EventStore::open(location, options);
    return true;
  } catch (const StorageError& e) {
    if (e.kind() == StorageError::Kind::not_a_store) return false;
    throw;
  }
}

std::string no_delete_on_server(std::string_view program, const std::filesystem::path& location,
                                std::uint64_t events) {
  return "'" + factum::shown_location(location.string()) + "' already holds " +
         std::to_string(events) + " events; " + std::string(program) +
         " deletes only store files (--fresh), never tables on a server: give it an empty "
         "schema with another --db, or have the schema's owner empty it (DROP SCHEMA ... "
         "CASCADE; CREATE SCHEMA ...)";
}

}  // namespace factum::samples
