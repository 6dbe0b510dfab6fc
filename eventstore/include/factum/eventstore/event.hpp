// factum/eventstore/event.hpp — what an event is, before and after it is stored.
//
// EventData is what a caller appends: an id, a type name, a schema version, payload bytes
// and metadata. RecordedEvent is what a read returns: the same fields plus where the store
// put the event (global position, stream id and version), when (recorded_at, UTC) and its
// link in the hash chain (hash).
//
// Thread-safety: plain value types.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event_id.hpp"

namespace factum {

using Bytes = std::vector<std::byte>;
// Microseconds since the Unix epoch, UTC.
using Timestamp = std::chrono::sys_time<std::chrono::microseconds>;
// Global position in the log: 1, 2, 3, ... without gaps. 0 means "none".
using Position = std::uint64_t;
// Version of an event within its stream: 1, 2, 3, ... without gaps. 0 means "no events".
using StreamVersion = std::uint64_t;
// A SHA-256 digest: a link of the hash chain.
using Hash = std::array<std::uint8_t, 32>;

// Copies the characters of `text` into a byte vector (handy for tests and small payloads).
Bytes to_bytes(std::string_view text);
// The bytes as a string (no decoding; the inverse of to_bytes).
std::string to_string(const Bytes& bytes);
// Lowercase hexadecimal form of a hash (64 characters).
std::string to_hex(const Hash& hash);
// Parses 64 hexadecimal characters. Throws InvalidArgument otherwise.
Hash hash_from_hex(std::string_view hex);

// Who and what an event came from. All fields are optional; an empty string means absent.
struct Metadata {
  std::optional<EventId> correlation_id;      // the request or conversation it belongs to
  std::optional<EventId> causation_id;        // the event (or command) that caused it
  std::optional<EventId> compensates;         // the event of the same stream it corrects
  std::string actor;                          // who did it (user, service)
  std::map<std::string, std::string> values;  // free key/values, kept sorted by key

  friend bool operator==(const Metadata&, const Metadata&) = default;
};

// An event to append. A default-constructed EventData gets a fresh UUIDv7 id; keep the same
// EventData (same id) when retrying a request, so the retry is recognised as one.
struct EventData {
  EventId id = EventId::generate();
  std::string type;                  // non-empty, e.g. "bank.MoneyDeposited"
  std::uint32_t schema_version = 1;  // version of the payload's layout
  Bytes payload;                     // at most StoreOptions::max_payload_size bytes
  Metadata metadata;

  friend bool operator==(const EventData&, const EventData&) = default;
};

// An event as stored.
struct RecordedEvent {
  Position position = 0;
  std::string stream_id;
  StreamVersion stream_version = 0;
  EventId id;
  std::string type;
  std::uint32_t schema_version = 0;
  Bytes payload;
  Metadata metadata;
  Timestamp recorded_at{};
  Hash hash{};           // this event's link of the hash chain
  Hash previous_hash{};  // the previous event's hash (all zero for position 1)

  // The category of the stream: the part of stream_id before the first '-'.
  std::string_view category() const noexcept;

  friend bool operator==(const RecordedEvent&, const RecordedEvent&) = default;
};

// The category of a stream id: the part before the first '-', or the whole id.
std::string_view category_of(std::string_view stream_id) noexcept;

// True when `event.hash` is the SHA-256 of `event.previous_hash` and the event's fields (the
// chain's rule, docs/storage-format.md): its payload and metadata are as written.
bool hash_matches(const RecordedEvent& event);

// SHA-256 of `bytes` (OpenSSL's libcrypto).
Hash sha256(std::span<const std::byte> bytes);

// Metadata for an event caused by `cause`: causation id = cause's id, correlation id =
// cause's correlation id (or its id when it has none), so a chain of effects can be
// followed back to the command that started it. The actor is carried over.
Metadata caused_by(const RecordedEvent& cause);

}  // namespace factum
