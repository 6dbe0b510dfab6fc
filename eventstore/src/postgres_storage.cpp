// The PostgreSQL backend (docs/postgres.md). Placeholder while it is being written.
#include <libpq-fe.h>

#include "storage.hpp"

namespace factum::detail {

std::shared_ptr<Storage> open_postgres_storage(const std::string& uri, const StoreOptions&) {
  throw StorageError(StorageError::Kind::other,
                     "factum: cannot open '" + uri + "': the PostgreSQL backend is not written yet");
}

}  // namespace factum::detail
