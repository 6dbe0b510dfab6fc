// The fuzzer's inputs as regression cases, in every build (not only with FACTUM_BUILD_FUZZ):
// each file of tests/fuzz/regressions/ (hand-made hostile payloads and the crash inputs the
// fuzzer found) goes through the fuzzer's own decode function and must be decoded or refused
// with PayloadError; each seed of tests/fuzz/corpus/ must decode. Under the CI's
// AddressSanitizer + UndefinedBehaviorSanitizer build this also replays them with sanitizers.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/decode_one.hpp"

using namespace factum::fuzz;

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Outcome decode(const std::string& input) {
  return decode_one({reinterpret_cast<const std::byte*>(input.data()), input.size()});
}

}  // namespace

TEST_CASE("every regression input is decoded or refused with PayloadError") {
  const auto files = files_in(FACTUM_FUZZ_REGRESSIONS_DIR);
  REQUIRE(files.size() >= 8);
  for (const auto& file : files) {
    CAPTURE(file);
    CHECK_NOTHROW(decode(read_file(file)));
  }
}

TEST_CASE("every seed of the fuzz corpus decodes") {
  const auto files = files_in(FACTUM_FUZZ_CORPUS_DIR);
  REQUIRE(files.size() >= target_count());
  for (const auto& file : files) {
    CAPTURE(file);
    Outcome outcome = Outcome::rejected;
    CHECK_NOTHROW(outcome = decode(read_file(file)));
    CHECK(outcome == Outcome::decoded);
  }
}

TEST_CASE("the corpus has a seed for every fuzz target") {
  const auto files = files_in(FACTUM_FUZZ_CORPUS_DIR);
  for (std::size_t i = 0; i < target_count(); ++i) {
    CAPTURE(target_name(i));
    CHECK(std::any_of(files.begin(), files.end(), [&](const fs::path& file) {
      const std::string input = read_file(file);
      return !input.empty() && static_cast<unsigned char>(input[0]) == i;
    }));
  }
}

TEST_CASE("a payload is refused, not crashed on, for the hostile shapes") {
  // The hand-made shapes of tests/fuzz/regressions/, spelled out.
  CHECK(decode(make_input("money_deposited", std::string(11, '\x80'))) == Outcome::rejected);
  CHECK(decode(make_input("optional_int_lists", "\xff\xff\xff\xff\x0f")) == Outcome::rejected);
  CHECK(decode(make_input("registry_v1",
                          "\x05"
                          "ab")) == Outcome::rejected);
  CHECK(decode(std::string()) == Outcome::rejected);
}
