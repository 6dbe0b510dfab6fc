// factum/eventstore/event_id.hpp — the 128-bit identity of an event (a UUID).
//
// EventId::generate() makes a UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random
// bits, so ids made later sort later and the store's id index grows at its end. Any UUID
// (v4 from another system, say) is accepted as an id; only its 16 bytes matter.
//
// Thread-safety: EventId is a value type. generate() may be called from any thread.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace factum {

class EventId {
 public:
  using Bytes = std::array<std::uint8_t, 16>;

  // The nil UUID (all zero).
  constexpr EventId() noexcept = default;
  constexpr explicit EventId(const Bytes& bytes) noexcept : bytes_(bytes) {}

  // A new UUIDv7. Within one thread, ids are strictly increasing.
  static EventId generate();

  // Parses the canonical 8-4-4-4-12 hexadecimal form (either case).
  // Throws InvalidArgument naming the text when it is not a UUID.
  static EventId parse(std::string_view text);

  // Canonical lowercase 8-4-4-4-12 form.
  std::string to_string() const;

  bool is_nil() const noexcept;
  const Bytes& bytes() const noexcept { return bytes_; }

  friend auto operator<=>(const EventId&, const EventId&) = default;

 private:
  Bytes bytes_{};
};

}  // namespace factum

template <>
struct std::hash<factum::EventId> {
  std::size_t operator()(const factum::EventId& id) const noexcept;
};
