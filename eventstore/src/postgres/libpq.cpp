#include "postgres/libpq.hpp"

#include <string>

#include "factum/detail/shared_library.hpp"
#include "factum/eventstore/errors.hpp"

namespace factum::detail {

LibPq load_libpq() {
  const std::string file = library_file("FACTUM_LIBPQ", FACTUM_LIBPQ_DEFAULT);
  std::string why;
  void* handle = open_library(file, why);
  if (handle == nullptr) {
    throw StorageError(StorageError::Kind::other,
                       "factum: the PostgreSQL backend cannot load libpq ('" + file + "'): " + why +
                           "; install it (Debian: libpq5) or set FACTUM_LIBPQ to its path");
  }
  LibPq lib;
#define FACTUM_LIBPQ_LOAD(name)                                                                 \
  if (!find_function(handle, #name, lib.name)) {                                                \
    throw StorageError(StorageError::Kind::other, "factum: the PostgreSQL backend needs " #name \
                                                  " from libpq, which '" +                      \
                                                      file + "' lacks (libpq 14 or newer)");    \
  }
  FACTUM_LIBPQ_FUNCTIONS(FACTUM_LIBPQ_LOAD)
#undef FACTUM_LIBPQ_LOAD
  return lib;
}

}  // namespace factum::detail
