// factum/eventstore/errors.hpp — the exception family every factum call throws.
//
// All errors derive from factum::Error (itself a std::runtime_error), so a caller can catch
// the whole family in one place. Each message names what it is about: the stream, the
// expected and actual version, the position, the event id, the type or the file. A SQLite
// error never escapes raw: it becomes a StorageError that says what factum was doing.
//
// Thread-safety: exception objects are immutable after construction.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace factum {

// Base of every exception factum throws.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// An append's expected version did not match the stream's actual version.
// actual_version() is the stream's last version (0 when the stream has no events).
class ConcurrencyError : public Error {
 public:
  ConcurrencyError(std::string stream, std::string expected, std::uint64_t actual);
  const std::string& stream() const noexcept { return stream_; }
  const std::string& expected() const noexcept { return expected_; }
  std::uint64_t actual_version() const noexcept { return actual_; }

 private:
  std::string stream_;
  std::string expected_;
  std::uint64_t actual_;
};

// An event id is stored already in a way that is not an idempotent retry: the batch only
// partly overlaps what is stored, or the id belongs to another stream.
class DuplicateEventError : public Error {
 public:
  DuplicateEventError(std::string event_id, std::string stream, const std::string& detail);
  const std::string& event_id() const noexcept { return event_id_; }
  const std::string& stream() const noexcept { return stream_; }

 private:
  std::string event_id_;
  std::string stream_;
};

// A stored event's bytes are damaged: a column of the wrong kind or size, or a payload that
// does not match its hash. position() names the event.
class CorruptEventError : public Error {
 public:
  CorruptEventError(std::uint64_t position, const std::string& detail);
  std::uint64_t position() const noexcept { return position_; }

 private:
  std::uint64_t position_;
};

// The log has a hole where a read expected an event: positions missing from the whole log (or
// from its end, below the highest position the store has written), or a stream missing a
// version. Raised by every read of the store (streams, categories, the whole log, aggregate
// loads, exports, relays, rebuilds) before the caller sees any event after the hole, so that
// no decision is taken on a history with a hole in it; `factum verify` says more. position()
// is the first missing position (0 when the hole is a stream's version); stream() and
// stream_version() name the stream and its first missing version (empty and 0 otherwise).
class CorruptStoreError : public Error {
 public:
  CorruptStoreError(std::uint64_t position, std::string stream, std::uint64_t stream_version,
                    const std::string& detail);
  std::uint64_t position() const noexcept { return position_; }
  const std::string& stream() const noexcept { return stream_; }
  std::uint64_t stream_version() const noexcept { return stream_version_; }

 private:
  std::uint64_t position_;
  std::string stream_;
  std::uint64_t stream_version_;
};

// An event's type name is not registered with the registry that decodes it.
class UnknownEventTypeError : public Error {
 public:
  explicit UnknownEventTypeError(std::string type, const std::string& detail = {});
  const std::string& type() const noexcept { return type_; }

 private:
  std::string type_;
};

// The storage failed: the file is locked, read-only, full, not a factum store, of a newer
// format, or an I/O error happened. kind() says which; the message names the file.
class StorageError : public Error {
 public:
  enum class Kind { busy, read_only, full, not_a_store, newer_format, corrupt, io, other };
  StorageError(Kind kind, const std::string& message) : Error(message), kind_(kind) {}
  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

// A caller passed something factum refuses: an empty batch, a bad stream id, an oversized
// payload, a compensation of an event that is not in the stream, ...
class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& message) : Error(message) {}
};

// Something asked for by name or id does not exist (used by lookups that must find it).
class NotFound : public Error {
 public:
  explicit NotFound(const std::string& message) : Error(message) {}
};

}  // namespace factum
