// The payload archives: every kind of field round-trips, the bytes are the documented
// portable format, and hostile bytes are refused with PayloadError, never a crash or a huge
// allocation.
#include <doctest/doctest.h>

#include "events/sample_events.hpp"

using namespace factum;
using namespace factum::test;

namespace {

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

template <class T>
std::string hex(const T& value) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : encode_payload(value)) {
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

struct Pair2 {
  std::int32_t a = 0;
  std::string b;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& a& b;
  }
};

struct WithVector {
  std::vector<std::int64_t> values;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& values;
  }
};

struct WithFlag {
  bool flag = false;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& flag;
  }
};

// A struct serialized through separate save/load (BOOST_SERIALIZATION_SPLIT_MEMBER).
struct Split {
  std::string stored;
  std::string derived;  // rebuilt on load
  template <class Ar>
  void save(Ar& ar, unsigned) const {
    ar << stored;
  }
  template <class Ar>
  void load(Ar& ar, unsigned) {
    ar >> stored;
    derived = stored + "!";
  }
  BOOST_SERIALIZATION_SPLIT_MEMBER()
};

}  // namespace

TEST_CASE("every kind of field round-trips through the payload archives") {
  const EverythingHappened e = full_everything();
  const std::string bytes = encode_payload(e);
  CHECK(decode_payload<EverythingHappened>(bytes_of(bytes)) == e);
  const EverythingHappened empty;
  CHECK(decode_payload<EverythingHappened>(bytes_of(encode_payload(empty))) == empty);
}

TEST_CASE("split save/load members work with the payload archives") {
  Split s;
  s.stored = "x";
  const auto back = decode_payload<Split>(bytes_of(encode_payload(s)));
  CHECK(back.stored == "x");
  CHECK(back.derived == "x!");
}

TEST_CASE("payload bytes are the documented little-endian, length-prefixed format") {
  CHECK(hex(std::uint32_t{0x01020304}) == "04030201");
  CHECK(hex(std::int16_t{-2}) == "feff");
  CHECK(hex(std::int64_t{1}) == "0100000000000000");
  CHECK(hex(true) == "01");
  CHECK(hex(Currency::eur) == "d203");  // 978 as its uint16 underlying type
  CHECK(hex(1.0) == "000000000000f03f");
  CHECK(hex(std::string("ab")) == "026162");
  CHECK(hex(std::string(200, 'x')).substr(0, 4) == "c801");  // LEB128 200
  CHECK(hex(std::optional<std::uint8_t>()) == "00");
  CHECK(hex(std::optional<std::uint8_t>(5)) == "0105");
  CHECK(hex(std::vector<std::uint8_t>{1, 2}) == "020102");
  CHECK(hex(std::map<std::string, std::uint8_t>{{"a", 1}}) == "01016101");
  CHECK(hex(std::array<std::uint8_t, 2>{7, 8}) == "0708");
  CHECK(hex(Pair2{1, "z"}) == "01000000017a");
  CHECK(hex(std::chrono::seconds(2)) == "0200000000000000");
}

TEST_CASE("a payload that ends in the middle of a field is refused") {
  const std::string bytes = encode_payload(full_everything());
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    CAPTURE(cut);
    CHECK_THROWS_AS(decode_payload<EverythingHappened>(bytes_of(bytes.substr(0, cut))),
                    PayloadError);
  }
}

TEST_CASE("bytes left over after the last field are refused") {
  CHECK_THROWS_WITH_AS(decode_payload<Pair2>(bytes_of(encode_payload(Pair2{1, "z"}) + "?")),
                       doctest::Contains("left over"), PayloadError);
}

TEST_CASE("a huge length is refused before anything is allocated") {
  // 0xffffffffffffffff as LEB128, then nothing: a string or vector that claims 2^64-1 items.
  const std::string huge("\x01\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 14);
  CHECK_THROWS_WITH_AS(decode_payload<Pair2>(bytes_of(huge)),
                       doctest::Contains("only 0 bytes are left"), PayloadError);
  const std::string many = "\xff\xff\xff\x7f";  // 268 million items in 0 bytes
  CHECK_THROWS_WITH_AS(decode_payload<WithVector>(bytes_of(many)),
                       doctest::Contains("268435455 items"), PayloadError);
}

TEST_CASE("an overlong LEB128 length is refused") {
  const std::string overlong(11, '\x80');
  CHECK_THROWS_AS(decode_payload<WithVector>(bytes_of(overlong)), PayloadError);
}

TEST_CASE("a bool that is not 0 or 1 is refused") {
  CHECK_THROWS_WITH_AS(decode_payload<WithFlag>(bytes_of("\x02")), doctest::Contains("bool"),
                       PayloadError);
}

TEST_CASE("an optional flag that is not 0 or 1 is refused") {
  CHECK_THROWS_AS(decode_payload<std::optional<std::uint8_t>>(bytes_of("\x07\x01")), PayloadError);
}

TEST_CASE("a set or map with a repeated key is refused") {
  const std::string repeated = "\x02\x01\x61\x01\x01\x61\x02";  // {"a":1, "a":2}
  CHECK_THROWS_WITH_AS((decode_payload<std::map<std::string, std::uint8_t>>(bytes_of(repeated))),
                       doctest::Contains("repeats"), PayloadError);
}

TEST_CASE("tiny items that decode into large objects are refused past the memory budget") {
  // 20,000 empty optionals of 8 KB each: 20 KB of payload asking for 160 MB of objects.
  std::string bytes;
  PayloadOArchive ar(bytes);
  ar.put_varint(20000);
  bytes.append(20000, '\0');
  using Big = std::vector<std::optional<std::array<std::int64_t, 1000>>>;
  CHECK_THROWS_WITH_AS(decode_payload<Big>(bytes_of(bytes)), doctest::Contains("bytes of objects"),
                       PayloadError);
  // The same shape at a sane size decodes.
  const Big small(10);
  CHECK(decode_payload<Big>(bytes_of(encode_payload(small))).size() == 10);
}

TEST_CASE("floating-point durations keep their fraction") {
  const std::chrono::duration<double> d(1.75);
  CHECK(decode_payload<std::chrono::duration<double>>(bytes_of(encode_payload(d))).count() == 1.75);
}
