// factum/eventstore/expected_version.hpp — the optimistic-concurrency condition of an append.
//
//   ExpectedVersion::any()            always succeeds
//   ExpectedVersion::no_stream()      the stream has no events
//   ExpectedVersion::stream_exists()  the stream has at least one event
//   ExpectedVersion::exact(n)         the stream's last version is exactly n (exact(0) is
//                                     the same as no_stream())
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <string>

namespace factum {

class ExpectedVersion {
 public:
  enum class Kind { any, no_stream, stream_exists, exact };

  static constexpr ExpectedVersion any() noexcept { return ExpectedVersion(Kind::any, 0); }
  static constexpr ExpectedVersion no_stream() noexcept {
    return ExpectedVersion(Kind::no_stream, 0);
  }
  static constexpr ExpectedVersion stream_exists() noexcept {
    return ExpectedVersion(Kind::stream_exists, 0);
  }
  static constexpr ExpectedVersion exact(std::uint64_t version) noexcept {
    return ExpectedVersion(Kind::exact, version);
  }

  Kind kind() const noexcept { return kind_; }
  // The version named by exact(n); 0 for the other kinds.
  std::uint64_t version() const noexcept { return version_; }

  // True when a stream whose last version is `actual` (0: no events) satisfies this.
  bool matches(std::uint64_t actual) const noexcept;

  // "any", "no stream", "stream exists" or "exactly 7", for messages.
  std::string to_string() const;

  friend bool operator==(const ExpectedVersion&, const ExpectedVersion&) = default;

 private:
  constexpr ExpectedVersion(Kind kind, std::uint64_t version) noexcept
      : kind_(kind), version_(version) {}
  Kind kind_;
  std::uint64_t version_;
};

}  // namespace factum
