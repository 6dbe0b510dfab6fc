#include "factum/kafka/librdkafka.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "factum/kafka/errors.hpp"

namespace factum::kafka {
namespace {

LibRdKafka load() {
  const char* configured = std::getenv("FACTUM_LIBRDKAFKA");
  const std::string file =
      configured != nullptr && *configured != '\0' ? configured : "librdkafka.so.1";
  // Never unloaded: the functions, and the threads of the clients made with them, need it for
  // the life of the program.
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    throw KafkaError("librdkafka", 0,
                     "factum kafka: cannot load librdkafka ('" + file +
                         "'): " + (why != nullptr ? why : "unknown error") +
                         "; install it (Debian: librdkafka1) or set FACTUM_LIBRDKAFKA to its path");
  }
  LibRdKafka lib;
#define FACTUM_RDKAFKA_LOAD(name)                                         \
  lib.name = reinterpret_cast<decltype(&::name)>(::dlsym(handle, #name)); \
  if (lib.name == nullptr) {                                              \
    throw KafkaError("librdkafka", 0,                                     \
                     "factum kafka: the Kafka bridge needs " #name        \
                     " from librdkafka, "                                 \
                     "which '" +                                          \
                         file + "' lacks (librdkafka 1.9 or newer)");     \
  }
  FACTUM_RDKAFKA_FUNCTIONS(FACTUM_RDKAFKA_LOAD)
#undef FACTUM_RDKAFKA_LOAD
  return lib;
}

}  // namespace

const LibRdKafka& librdkafka() {
  static const LibRdKafka lib =
      load();  // a throw leaves it uninitialised: the next call tries again
  return lib;
}

}  // namespace factum::kafka
