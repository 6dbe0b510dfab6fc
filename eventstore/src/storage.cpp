// Choosing the backend a location names: the one place that knows both.
#include "storage.hpp"

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/location.hpp"
#include "postgres_target.hpp"

namespace factum::detail {

std::shared_ptr<Storage> open_storage(const std::filesystem::path& location,
                                      const StoreOptions& options) {
  if (is_server_location(location.native())) {
    return open_postgres_storage(std::make_shared<const PgTarget>(pg_target(location.native())),
                                 options);
  }
  return open_sqlite_storage(location, options);
}

#ifndef FACTUM_HAVE_POSTGRES
std::shared_ptr<Storage> open_postgres_storage(std::shared_ptr<const PgTarget> target,
                                               const StoreOptions&) {
  throw StorageError(StorageError::Kind::other,
                     "factum: cannot open '" + target->shown +
                         "': this build of factum has no PostgreSQL backend (install libpq-dev "
                         "and configure again)");
}
#endif

}  // namespace factum::detail
