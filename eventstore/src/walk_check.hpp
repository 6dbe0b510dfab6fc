// The checked walk: what every read of the log checks as it goes, on both backends, so that no
// caller (a stream read, an aggregate load, an export, a relay, a projection's rebuild) ever
// takes a decision on a history with a hole in it.
//
//   - a read of the whole log hands out positions without a gap, from where it starts;
//   - a stream read hands out versions without a gap (forward from where it starts; backward
//     down to version 1), and a category read each of its streams' versions without a gap;
//   - a read of the whole log or of a category that reaches the end of the log checks that the
//     log still ends where the store last wrote (the high-water mark of its positions): events
//     removed from the end are reported, as verify reports them.
//
// A hole raises CorruptStoreError naming the first missing position (or the stream and its
// first missing version) before the caller sees any event after it.
//
// Thread-safety: one WalkCheck is used by one read, on one thread at a time.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "storage.hpp"

namespace factum::detail {

class WalkCheck {
 public:
  // For a read that starts as `query` says (its kind, key and first position or version).
  explicit WalkCheck(const PageQuery& query);

  // Checks the next event the read hands out (its position, stream and version). Throws
  // CorruptStoreError at a hole.
  void row(Position position, std::string_view stream, StreamVersion version);
  // After the read found its end (a page shorter than asked for): a backward stream read must
  // have reached version 1, and a read of the log or a category must find the log ending where
  // the store last wrote (read from `storage` now, after the page). Throws CorruptStoreError.
  void end(Storage& storage);

 private:
  void stream_row(StreamVersion version);
  void category_row(std::string_view stream, StreamVersion version);

  PageQuery::Kind kind_;
  std::string key_;
  bool from_start_;
  std::uint64_t next_;  // the next position (all) or version (streams); 0: not known yet
  // The last version of each stream a category read has seen (at most kMaxStreams, then
  // forgotten all at once: a stream's next event is checked again from its first one seen).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unordered_map<std::string, StreamVersion, NameHash, std::equal_to<>> versions_;
  static constexpr std::size_t kMaxStreams = 65536;
};

// Throws CorruptStoreError when `end` says events were removed from the log's end.
void check_log_end(const LogEnd& end);

}  // namespace factum::detail
