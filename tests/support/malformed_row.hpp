// Checks shared by the tests that make a stored row malformed behind the library's back
// (SQLite and PostgreSQL alike).
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "factum/factum.hpp"

namespace factum::test {

// `read` throws CorruptEventError naming `position`, with `problem` in its message.
template <class Read>
void check_names_row(Read&& read, Position position, std::string_view problem) {
  try {
    read();
    FAIL("expected CorruptEventError");
  } catch (const CorruptEventError& e) {
    CHECK(e.position() == position);
    CHECK(std::string(e.what()).find(problem) != std::string::npos);
  }
}

// Stream `stream` of `store` still reads whole: `events` events from position `first` on, each
// hash matching its fields.
inline void check_reads_intact(const EventStore& store, std::string_view stream, std::size_t events,
                               Position first) {
  const auto read = store.read_stream(stream).to_vector();
  REQUIRE(read.size() == events);
  CHECK(read.front().position == first);
  for (const RecordedEvent& e : read) CHECK(hash_matches(e));
}

}  // namespace factum::test
