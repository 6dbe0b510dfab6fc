#include "events/sample_events.hpp"

namespace factum::test {

EverythingHappened full_everything() {
  using namespace std::chrono;
  EverythingHappened e;
  e.text = std::string("h\xc3\xa9llo\0world", 12);  // UTF-8 and an embedded NUL
  e.i8 = -128;
  e.u8 = 255;
  e.i16 = -32768;
  e.u16 = 65535;
  e.i32 = -2147483647 - 1;
  e.u32 = 4294967295u;
  e.i64 = INT64_MIN;
  e.u64 = UINT64_MAX;
  e.flag = true;
  e.ratio = -0.125;
  e.amount = {123456789012, Currency::jpy};
  e.at = sys_time<microseconds>(microseconds(1'733'000'000'123'456));
  e.timeout = milliseconds(-5000);
  e.maybe_number = -7;
  e.maybe_address = Address{"Rue de Rivoli 1", std::nullopt};
  e.tags = {"a", "", std::string(300, 'z')};
  e.history = {{1, Currency::eur}, {-2, Currency::usd}};
  e.counters = {{"likes", 10}, {"shares", -1}};
  e.ids = {1, 7, 4000000000u};
  e.ip = {10, 0, 0, 255};
  e.pair = {"k", -1};
  e.currency = Currency::eur;
  e.address = {"Main St 5", "4B"};
  return e;
}

}  // namespace factum::test
