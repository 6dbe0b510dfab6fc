// Loading a shared library on first use instead of linking it (libpq for the PostgreSQL backend,
// librdkafka for the Kafka bridge): a linked library, and every library it needs, is loaded and
// initialised at each start of every program that links factum, used or not (docs/performance.md,
// "What a program pays at start").
//
// Internal to factum's libraries (not installed). Thread-safety: safe from any thread (dlopen and
// dlsym are); callers load once, under a function-local static.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace factum::detail {

// The library file that the environment variable `variable` names (a file name or a path), or
// `fallback` when it is unset or empty.
inline std::string library_file(const char* variable, const char* fallback) {
  const char* configured = std::getenv(variable);
  return configured != nullptr && *configured != '\0' ? configured : fallback;
}

// dlopen(file), never closed: the functions taken from it (and the threads a library such as
// librdkafka starts) need it for the life of the program. Returns nullptr and sets `why` (the
// loader's message) when it cannot be loaded.
inline void* open_library(const std::string& file, std::string& why) {
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* message = ::dlerror();
    why = message != nullptr ? message : "unknown error";
  }
  return handle;
}

// Sets `function` to the symbol `name` of `handle`; false when the library lacks it.
template <class Function>
bool find_function(void* handle, const char* name, Function& function) {
  function = reinterpret_cast<Function>(::dlsym(handle, name));
  return function != nullptr;
}

}  // namespace factum::detail
