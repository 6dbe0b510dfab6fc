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

TEST_CASE("printable writes the C1 controls as \\uXXXX, CSI U+009B included") {
  CHECK(factum::printable("a\xc2\x9b"
                          "31mb") == "a\\u009b31mb");
  CHECK(factum::printable("\xc2\x80\xc2\x85\xc2\x9f") == "\\u0080\\u0085\\u009f");
  CHECK(factum::printable("\xc2\xa0\xc2\xa9") == "\xc2\xa0\xc2\xa9");  // U+00A0, U+00A9 stay
}

TEST_CASE("printable writes bidirectional controls as \\uXXXX, so text cannot be reordered") {
  CHECK(factum::printable("acc-\xe2\x80\xae"
                          "1tnuocca") == "acc-\\u202e1tnuocca");
  for (const char* bidi : {"\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad",
                           "\xe2\x80\xae", "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8",
                           "\xe2\x81\xa9", "\xe2\x80\x8e", "\xe2\x80\x8f", "\xd8\x9c"}) {
    CAPTURE(bidi);
    CHECK(factum::printable(bidi).rfind("\\u", 0) == 0);
  }
}

TEST_CASE("printable writes invisible characters and line separators as escapes") {
  CHECK(factum::printable("acc\xe2\x80\x8b-1") == "acc\\u200b-1");  // zero width space
  CHECK(factum::printable("\xef\xbb\xbf"
                          "x") == "\\ufeffx");  // BOM
  CHECK(factum::printable("soft\xc2\xadhyphen") == "soft\\u00adhyphen");
  CHECK(factum::printable("one\xe2\x80\xa8two") == "one\\u2028two");    // U+2028
  CHECK(factum::printable("tag\xf3\xa0\x81\x81") == "tag\\U000e0041");  // U+E0041
  CHECK(factum::printable("\xe2\x80\x94 \xf0\x9f\x99\x82") == "\xe2\x80\x94 \xf0\x9f\x99\x82");
}

TEST_CASE("printable is idempotent: escaped text passes through unchanged") {
  for (const char* text : {"acc\x1b[31m\x07", "a\xc2\x9b", "x\xe2\x80\xae", "bad \xff",
                           "tag\xf3\xa0\x81\x81", "caf\xc3\xa9"}) {
    CAPTURE(text);
    const std::string once = factum::printable(text);
    CHECK(factum::printable(once) == once);
  }
}

TEST_CASE("is_hidden_code_point is true exactly for the ranges text.hpp lists") {
  for (char32_t cp : {0x00u, 0x1fu, 0x7fu, 0x80u, 0x9fu, 0xadu, 0x61cu, 0x200bu, 0x202eu, 0x2066u,
                      0x2069u, 0x206fu, 0xfeffu, 0xfffbu, 0xe0001u, 0xe0fffu}) {
    CAPTURE(static_cast<unsigned>(cp));
    CHECK(factum::is_hidden_code_point(cp));
  }
  for (char32_t cp : {0x20u, 0x7eu, 0xa0u, 0xe9u, 0x2014u, 0x2030u, 0x2070u, 0xfffdu, 0x1f642u,
                      0xe1000u, 0x10ffffu}) {
    CAPTURE(static_cast<unsigned>(cp));
    CHECK_FALSE(factum::is_hidden_code_point(cp));
  }
}
