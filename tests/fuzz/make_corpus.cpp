// Writes the fuzzer's seed corpus: one valid input per file, at least one per target.
//   cmake --build build --target fuzz_make_corpus && build/tests/fuzz/fuzz_make_corpus
//   tests/fuzz/corpus
// The files are committed; regressions_test.cpp checks that each still decodes.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "events/sample_events.hpp"
#include "fuzz/decode_one.hpp"
#include "fuzz/fuzz_types.hpp"

using namespace factum;
using namespace factum::test;
using namespace factum::fuzz;

namespace {

void write(const std::filesystem::path& dir, const std::string& file, std::string_view target,
           const std::string& payload) {
  std::ofstream out(dir / file, std::ios::binary | std::ios::trunc);
  const std::string input = make_input(target, payload);
  out.write(input.data(), static_cast<std::streamsize>(input.size()));
  if (!out) throw std::runtime_error("cannot write " + (dir / file).string());
}

Kitchen full_kitchen() {
  using namespace std::chrono;
  Kitchen k;
  k.deque = {-1, 0, 32767};
  k.list = {"x", "", "yz"};
  k.unordered_map = {{"one", 1}};
  k.unordered_set = {42};
  k.bools = {true, false, true};
  k.ratio = 1.5f;
  k.code[0] = 'E';
  k.code[1] = 'U';
  k.code[2] = 'R';
  k.nested_optional = std::optional<std::uint8_t>(7);
  k.short_timeout = milliseconds(250);
  k.at = sys_seconds(seconds(1'733'000'000));
  k.groups = {{}, {Address{"Main St 5", "4B"}, Address{"Quay 2", std::nullopt}}};
  k.by_currency = {{Currency::eur, {"a", "b"}}, {Currency::jpy, {}}};
  return k;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  write(dir, "everything-full", "everything", encode_payload(full_everything()));
  write(dir, "everything-default", "everything", encode_payload(EverythingHappened{}));
  write(dir, "money_deposited", "money_deposited",
        encode_payload(MoneyDeposited{"account-1", {12345, Currency::usd}, "salary"}));
  write(dir, "money_deposited_v1", "money_deposited_v1",
        encode_payload(MoneyDepositedV1{"account-1", 100}));
  write(dir, "optional_int_lists", "optional_int_lists",
        encode_payload(OptionalIntLists{{"a", {1, std::nullopt, -3}}, {"b", {}}}));
  write(dir, "kitchen", "kitchen", encode_payload(full_kitchen()));
  write(dir, "priorities", "priorities", encode_payload(Priorities{kLow, kNormal, kHigh}));
  write(dir, "float_durations", "float_durations",
        encode_payload(FloatDurations{std::chrono::duration<double>(2), {}}));
  write(dir, "registry_v1", "registry_v1", encode_payload(MoneyDepositedV1{"account-1", 7}));
  write(dir, "registry_v2", "registry_v2", encode_payload(MoneyDepositedV2{"account-1", -250}));
  write(dir, "registry_v3", "registry_v3",
        encode_payload(MoneyDeposited{"account-1", {99, Currency::eur}, "note"}));
  std::printf("wrote the seed corpus to %s\n", dir.c_str());
  return 0;
}
