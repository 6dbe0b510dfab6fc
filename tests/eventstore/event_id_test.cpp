// EventId: UUIDv7 generation, parsing and printing.
#include <doctest/doctest.h>

#include <set>
#include <thread>

#include "support/temp_dir.hpp"

using namespace factum;

TEST_CASE("generated ids are UUIDv7 with the RFC 9562 variant") {
  const EventId id = EventId::generate();
  CHECK((id.bytes()[6] >> 4) == 7);
  CHECK((id.bytes()[8] >> 6) == 2);
  CHECK_FALSE(id.is_nil());
}

TEST_CASE("generated ids carry the current Unix time in milliseconds") {
  using namespace std::chrono;
  const auto now = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  const EventId id = EventId::generate();
  std::int64_t ms = 0;
  for (int i = 0; i < 6; ++i) ms = (ms << 8) | id.bytes()[i];
  CHECK(ms >= now);
  CHECK(ms - now < 5000);
}

TEST_CASE("ids generated on one thread strictly increase") {
  EventId previous = EventId::generate();
  for (int i = 0; i < 100000; ++i) {
    const EventId next = EventId::generate();
    REQUIRE(previous < next);
    previous = next;
  }
}

TEST_CASE("ids parse from and print to the canonical form") {
  const EventId id = EventId::generate();
  CHECK(EventId::parse(id.to_string()) == id);
  const EventId fixed = EventId::parse("0190A1B2-C3D4-7E5F-8A6B-7C8D9E0F1A2B");
  CHECK(fixed.to_string() == "0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b");
  CHECK(EventId().to_string() == "00000000-0000-0000-0000-000000000000");
}

TEST_CASE("parsing text that is not a UUID throws InvalidArgument") {
  CHECK_THROWS_AS(EventId::parse(""), InvalidArgument);
  CHECK_THROWS_AS(EventId::parse("0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2"), InvalidArgument);
  CHECK_THROWS_AS(EventId::parse("0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2bb"), InvalidArgument);
  CHECK_THROWS_AS(EventId::parse("0190a1b2xc3d4-7e5f-8a6b-7c8d9e0f1a2b"), InvalidArgument);
  CHECK_THROWS_AS(EventId::parse("0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2g"), InvalidArgument);
}

TEST_CASE("hashes print as 64 hex digits and parse back") {
  Hash h{};
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::uint8_t>(i * 7);
  CHECK(to_hex(h).size() == 64);
  CHECK(hash_from_hex(to_hex(h)) == h);
  CHECK_THROWS_AS(hash_from_hex("abc"), InvalidArgument);
  CHECK_THROWS_AS(hash_from_hex(std::string(64, 'z')), InvalidArgument);
}
