// tests/eventstore/text_test.cpp — factum::printable and factum::is_utf8
// (<factum/eventstore/text.hpp>): text made safe for a terminal, as the tools and the samples
// print it.
#include <doctest/doctest.h>

#include <factum/eventstore/text.hpp>

TEST_CASE("printable writes control characters as \\xNN, ESC and BEL included") {
  CHECK(factum::printable("acc\x1b[31m\x07") == "acc\\x1b[31m\\x07");
  CHECK(factum::printable("two\nlines\r\t") == "two\\x0alines\\x0d\\x09");
  CHECK(factum::printable(std::string("nul\0del\x7f", 8)) == "nul\\x00del\\x7f");
}

TEST_CASE("printable keeps valid UTF-8 and escapes each byte that is not") {
  CHECK(factum::printable("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x99\x82") ==
        "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x99\x82");
  CHECK(factum::printable("bad \xff byte") == "bad \\xff byte");
  CHECK(factum::printable("cut \xe2\x80") == "cut \\xe2\\x80");
  CHECK(factum::printable("overlong \xc0\xaf") == "overlong \\xc0\\xaf");
  CHECK(factum::printable("surrogate \xed\xa0\x80") == "surrogate \\xed\\xa0\\x80");
  CHECK(factum::printable("back\\slash") == "back\\slash");  // nothing else is escaped
}

TEST_CASE("is_utf8 refuses stray, cut, overlong, surrogate and too large sequences") {
  CHECK(factum::is_utf8(""));
  CHECK(factum::is_utf8("caf\xc3\xa9 \xf4\x8f\xbf\xbf"));  // U+10FFFF, the last code point
  for (const char* bad : {"\x80", "\xc3", "\xc0\x80", "\xe0\x80\x80", "\xed\xbf\xbf",
                          "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80"}) {
    CHECK_FALSE(factum::is_utf8(bad));
  }
}
