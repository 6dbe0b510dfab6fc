// tests/samples/bank_money_test.cpp — the bank sample's Money: strict parsing, formatting.
#include <doctest/doctest.h>

#include "money.hpp"

using bank::Money;

TEST_CASE("Money parses whole units and one or two decimals into minor units") {
  CHECK(Money::parse("100").minor() == 10000);
  CHECK(Money::parse("100.5").minor() == 10050);
  CHECK(Money::parse("100.50").minor() == 10050);
  CHECK(Money::parse("0.01").minor() == 1);
  CHECK(Money::parse("0").minor() == 0);
  CHECK(Money::parse("999999999999.99") == Money::max());
}

TEST_CASE("Money refuses exponents, signs, separators, spaces, three decimals and empty text") {
  for (const char* bad : {"1e3", "-5", "+5", "10.123", "abc", "", "1,000", " 5", "5 ", "5.", ".5",
                          "1.2.3", "0x10", "5.-1", "١٢"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(Money::parse(bad), bank::InvalidAmount);
  }
}

TEST_CASE("Money refuses amounts above the largest one, naming the text") {
  CHECK_THROWS_WITH_AS(Money::parse("1000000000000"), doctest::Contains("'1000000000000'"),
                       bank::InvalidAmount);
  CHECK_THROWS_AS(Money::parse("99999999999999999999999"), bank::InvalidAmount);
}

TEST_CASE("Money formats two decimals, plain for machines and grouped for people") {
  CHECK(Money::from_minor(123456789).to_string() == "1234567.89");
  CHECK(Money::from_minor(123456789).to_display() == "1,234,567.89");
  CHECK(Money::from_minor(-5).to_string() == "-0.05");
  CHECK(Money::from_minor(-100000).to_display() == "-1,000.00");
  CHECK(Money::from_minor(0).to_display() == "0.00");
}

TEST_CASE("Money's plain text parses back to the same amount") {
  for (std::int64_t minor : {0LL, 1LL, 10LL, 99LL, 100LL, 12345LL, 99'999'999'999'999LL}) {
    CHECK(Money::parse(Money::from_minor(minor).to_string()).minor() == minor);
  }
}
