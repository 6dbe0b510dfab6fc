#include "factum/kafka/librdkafka.hpp"

#include <string>

#include "factum/detail/shared_library.hpp"
#include "factum/eventstore/text.hpp"
#include "factum/kafka/errors.hpp"

namespace factum::kafka {
namespace {

LibRdKafka load() {
  const std::string file = detail::library_file("FACTUM_LIBRDKAFKA", FACTUM_LIBRDKAFKA_DEFAULT);
  std::string why;
  void* handle = detail::open_library(file, why);
  if (handle == nullptr) {
    throw KafkaError("librdkafka", 0,
                     "factum: kafka: cannot load librdkafka ('" + printable(file) +
                         "'): " + printable(why) +
                         "; install it (Debian: librdkafka1) or set FACTUM_LIBRDKAFKA to its path");
  }
  LibRdKafka lib;
#define FACTUM_RDKAFKA_LOAD(name)                                                \
  if (!detail::find_function(handle, #name, lib.name)) {                         \
    throw KafkaError("librdkafka", 0,                                            \
                     "factum: kafka: the Kafka bridge needs " #name              \
                     " from librdkafka, "                                        \
                     "which '" +                                                 \
                         printable(file) + "' lacks (librdkafka 1.9 or newer)"); \
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
