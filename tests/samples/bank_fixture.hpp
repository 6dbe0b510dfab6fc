// tests/samples/bank_fixture.hpp — a temporary store with a Bank on it and a clock the test
// moves, for the bank sample's API tests.
#pragma once

#include <chrono>
#include <string>

#include "bank.hpp"
#include "personal_store.hpp"
#include "support/temp_dir.hpp"

namespace bank::test {

// 2024-01-15 12:00 UTC plus `days`.
inline factum::Timestamp day(int days) {
  using namespace std::chrono;
  return sys_days(year(2024) / 1 / 15) + hours(12) + std::chrono::days(days);
}

struct BankFixture {
  factum::test::TempStore temp{factum::test::personal_options()};
  factum::Timestamp now = day(0);
  Bank bank{temp.store, BankOptions{"test", [this] { return now; }, 50}};

  factum::EventStore& store() { return temp.store; }
  static Money m(const char* text) { return Money::parse(text); }
  // Opens `id` with `deposit` in it.
  void open_with(const std::string& id, const char* deposit, const char* limit = "0") {
    bank.open(id, "Owner of " + id, m(limit));
    if (Money::parse(deposit).positive()) bank.deposit(id, m(deposit));
  }
};

}  // namespace bank::test
