// libFuzzer target: random and mutated payloads through PayloadIArchive (decode_payload<T>)
// and through an EventRegistry with upcasters. See decode_one.hpp for the input layout.
// A payload may be refused only with factum::PayloadError (CorruptEventError from the
// registry); any other exception, a crash, a sanitizer report, a leak, a timeout or an
// allocation past -malloc_limit_mb is a bug. Built with -DFACTUM_BUILD_FUZZ=ON (clang).
//
//   payload_fuzz -max_total_time=60 -rss_limit_mb=512 -malloc_limit_mb=64 CORPUS_COPY \
//       tests/fuzz/corpus tests/fuzz/regressions
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>

#include "fuzz/decode_one.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    factum::fuzz::decode_one({reinterpret_cast<const std::byte*>(data), size});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "payload_fuzz: BUG: %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "payload_fuzz: BUG: an exception that is not a std::exception\n");
    std::abort();
  }
  return 0;
}
