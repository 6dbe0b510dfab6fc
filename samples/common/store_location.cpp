// samples/common/store_location.cpp — store files and PostgreSQL URIs (see store_location.hpp).
#include "store_location.hpp"

#include <factum/factum.hpp>

#include <algorithm>

namespace factum::samples {

bool is_server_uri(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string shown_location(const std::filesystem::path& location) {
  std::string out = location.string();
  if (!is_server_uri(out)) return out;
  // user:password@host: the password lies between the user's ':' and the authority's last '@'.
  const std::size_t authority = out.find("://") + 3;
  const std::size_t authority_end = std::min(out.find_first_of("/?#", authority), out.size());
  const std::size_t at = out.rfind('@', authority_end - 1);
  if (at != std::string::npos && at >= authority) {
    const std::size_t colon = out.find(':', authority);
    if (colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  // ...?password=secret&...
  for (std::size_t sep = out.find('?'); sep != std::string::npos;) {
    const std::size_t key = sep + 1;
    if (out.compare(key, 9, "password=") == 0) {
      const std::size_t value = key + 9;
      const std::size_t end = std::min(out.find_first_of("&#", value), out.size());
      out.replace(value, end - value, "***");
    }
    sep = out.find('&', key);
  }
  return out;
}

bool store_exists(const std::filesystem::path& location) {
  if (!is_server_uri(location.string())) return std::filesystem::exists(location);
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
  return "'" + shown_location(location) + "' already holds " + std::to_string(events) +
         " events; " + std::string(program) +
         " deletes only store files (--fresh), never tables on a server: give it an empty "
         "schema with another --db, or have the schema's owner empty it (DROP SCHEMA ... "
         "CASCADE; CREATE SCHEMA ...)";
}

}  // namespace factum::samples
