#include "walk_check.hpp"

#include <algorithm>

#include "factum/eventstore/text.hpp"

namespace factum::detail {
namespace {

std::string in_quotes(std::string_view stream) { return "'" + printable(stream) + "'"; }

[[noreturn]] void missing_positions(Position first, Position next_seen) {
  throw CorruptStoreError(first, {}, 0,
                          "events at positions " + std::to_string(first) + " to " +
                              std::to_string(next_seen - 1) +
                              " are missing from the log (deleted behind the library's back; "
                              "run factum verify)");
}

[[noreturn]] void missing_version(std::string_view stream, StreamVersion missing,
                                  const std::string& what) {
  throw CorruptStoreError(0, std::string(stream), missing,
                          "stream " + in_quotes(stream) + " is missing version " +
                              std::to_string(missing) + " (" + what +
                              "; deleted behind the library's back; run factum verify)");
}

}  // namespace

WalkCheck::WalkCheck(const PageQuery& query)
    : kind_(query.kind),
      key_(query.key),
      from_start_(query.from <= 1),
      next_(kind_ == PageQuery::Kind::stream_backward ? 0
                                                      : std::max<std::uint64_t>(query.from, 1)) {}

void WalkCheck::row(Position position, std::string_view stream, StreamVersion version) {
  switch (kind_) {
    case PageQuery::Kind::all:
      if (position > next_) missing_positions(next_, position);
      next_ = position + 1;
      return;
    case PageQuery::Kind::category:
      category_row(stream, version);
      return;
    case PageQuery::Kind::stream_forward:
    case PageQuery::Kind::stream_backward:
      stream_row(version);
      return;
  }
}

void WalkCheck::stream_row(StreamVersion version) {
  if (kind_ == PageQuery::Kind::stream_forward) {
    if (version > next_) {
      missing_version(key_, next_,
                      "the read went from version " + std::to_string(next_ - 1) + " to " +
                          std::to_string(version));
    }
    next_ = version + 1;
    return;
  }
  // Backward: next_ is the version expected now (0 before the first event).
  if (next_ != 0 && version < next_) {
    missing_version(key_, next_,
                    "the read went from version " + std::to_string(next_ + 1) + " down to " +
                        std::to_string(version));
  }
  next_ = version - 1;
}

void WalkCheck::category_row(std::string_view stream, StreamVersion version) {
  auto it = versions_.find(stream);
  if (it == versions_.end()) {
    // From the log's start, a stream's first event is its version 1.
    if (from_start_ && versions_.size() < kMaxStreams && version > 1) {
      missing_version(stream, 1,
                      "a read of category " + in_quotes(key_) +
                          " from the log's start found version " + std::to_string(version) +
                          " first");
    }
    if (versions_.size() >= kMaxStreams) {
      versions_.clear();
      from_start_ = false;  // forgotten streams are met again mid-way
    }
    versions_.emplace(std::string(stream), version);
    return;
  }
  if (version != it->second + 1) {
    missing_version(stream, it->second + 1,
                    "a read of category " + in_quotes(key_) + " went from version " +
                        std::to_string(it->second) + " to " + std::to_string(version));
  }
  it->second = version;
}

void WalkCheck::end(Storage& storage) {
  switch (kind_) {
    case PageQuery::Kind::stream_forward:
      return;
    case PageQuery::Kind::stream_backward:
      // next_ == 0: the read reached version 1 (or saw no event at all).
      if (next_ != 0) {
        missing_version(key_, next_,
                        "a backward read ended at version " + std::to_string(next_ + 1) +
                            " instead of version 1");
      }
      return;
    case PageQuery::Kind::all:
    case PageQuery::Kind::category:
      check_log_end(storage.log_end());
      return;
  }
}

void check_log_end(const LogEnd& end) {
  if (end.stored >= end.written) return;
  throw CorruptStoreError(end.stored + 1, {}, 0,
                          "the log ends at position " + std::to_string(end.stored) +
                              " but positions up to " + std::to_string(end.written) +
                              " were written: events were removed from its end (run factum "
                              "verify)");
}

}  // namespace factum::detail
