#include "libpq.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "factum/eventstore/errors.hpp"

namespace factum::detail {
namespace {

LibPq load() {
  const char* configured = std::getenv("FACTUM_LIBPQ");
  const std::string file = configured != nullptr && *configured != '\0' ? configured : "libpq.so.5";
  // Never unloaded: the functions stay valid for the life of the program.
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    throw StorageError(StorageError::Kind::other,
                       "factum: the PostgreSQL backend cannot load libpq ('" + file +
                           "'): " + (why != nullptr ? why : "unknown error") +
                           "; install it (Debian: libpq5) or set FACTUM_LIBPQ to its path");
  }
  LibPq lib;
#define FACTUM_LIBPQ_LOAD(name)                                                                 \
  lib.name = reinterpret_cast<decltype(&::name)>(::dlsym(handle, #name));                       \
  if (lib.name == nullptr) {                                                                    \
    throw StorageError(StorageError::Kind::other, "factum: the PostgreSQL backend needs " #name \
                                                  " from libpq, which '" +                      \
                                                      file + "' lacks (libpq 14 or newer)");    \
  }
  FACTUM_LIBPQ_FUNCTIONS(FACTUM_LIBPQ_LOAD)
#undef FACTUM_LIBPQ_LOAD
  return lib;
}

}  // namespace

const LibPq& libpq() {
  static const LibPq lib = load();  // a throw leaves it uninitialised: the next call tries again
  return lib;
}

}  // namespace factum::detail
