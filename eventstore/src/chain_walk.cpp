#include "chain_walk.hpp"

#include <cstring>
#include <string>

namespace factum::detail {
namespace {

VerifyResult broken(VerifyResult r, VerifyResult::Problem problem, Position position,
                    std::string message) {
  r.problem = problem;
  r.position = position;
  r.message = std::move(message);
  return r;
}

}  // namespace

ChainWalk::ChainWalk(const VerifyOptions& options, TagDigest* tags)
    : expected_(options.expected_head),
      seen_head_(!expected_ || *expected_ == Hash{}),
      anchors_(options.anchored_heads),
      tags_(tags) {
  std::stable_sort(anchors_.begin(), anchors_.end(),
                   [](const Head& a, const Head& b) { return a.position < b.position; });
  // An anchor of the empty log (position 0) holds for every log.
  while (next_anchor_ < anchors_.size() && anchors_[next_anchor_].position == 0) ++next_anchor_;
}

// Checks the anchored heads at `event`'s position; false (with result() filled) on a mismatch.
bool ChainWalk::anchored(const EventView& event, Position at) {
  for (; next_anchor_ < anchors_.size() && anchors_[next_anchor_].position == event.position;
       ++next_anchor_) {
    if (anchors_[next_anchor_].hash != event.hash) {
      result_ =
          broken(result_, VerifyResult::Problem::anchor_mismatch, at,
                 "the event at position " + std::to_string(at) + " has hash " + to_hex(event.hash) +
                     ", but an anchor signed hash " + to_hex(anchors_[next_anchor_].hash) +
                     " there: the log was rewritten after it was anchored");
      return false;
    }
  }
  return true;
}

bool ChainWalk::check(const char* problem, const EventView& event, Position at,
                      std::string_view category,
                      std::optional<std::span<const std::byte>> stored_previous) {
  if (problem != nullptr) {
    result_ = broken(
        result_, VerifyResult::Problem::malformed_row, at,
        "the event at position " + std::to_string(at) + " is malformed: " + std::string(problem));
    return false;
  }
  if (event.category() != category) {
    result_ =
        broken(result_, VerifyResult::Problem::malformed_row, at,
               "the event at position " + std::to_string(at) + " belongs to stream '" +
                   std::string(event.stream_id) + "', whose recorded category '" +
                   std::string(category) + "' is not '" + std::string(event.category()) + "'");
    return false;
  }
  if (event.position != next_) {
    result_ = broken(result_, VerifyResult::Problem::position_gap, next_,
                     "events at positions " + std::to_string(next_) + " to " +
                         std::to_string(event.position - 1) + " are missing (deleted)");
    return false;
  }
  // The stored key/values are hashed as stored: nothing is decoded.
  if (hasher_(previous_, event) != event.hash) {
    result_ = broken(result_, VerifyResult::Problem::hash_mismatch, at,
                     "the hash of the event at position " + std::to_string(at) +
                         " does not match its contents and the previous event's hash: it "
                         "was altered, or an event before it was inserted, removed or "
                         "reordered");
    return false;
  }
  if (stored_previous &&
      (stored_previous->size() != previous_.size() ||
       std::memcmp(stored_previous->data(), previous_.data(), previous_.size()) != 0)) {
    result_ = broken(result_, VerifyResult::Problem::hash_mismatch, at,
                     "the previous hash kept with the event at position " + std::to_string(at) +
                         " is not the hash of the event before it: it was altered (reads of "
                         "the event would give it)");
    return false;
  }
  if (!anchored(event, at)) return false;
  previous_ = event.hash;
  if (expected_ && event.hash == *expected_) seen_head_ = true;
  if (tags_ != nullptr) tags_->add(event);
  ++next_;
  ++result_.events_checked;
  return true;
}

VerifyResult ChainWalk::unchained(std::int64_t lowest) const {
  return broken(result_, VerifyResult::Problem::unchained_row, 1,
                "an event row at position " + std::to_string(lowest) +
                    " lies outside the chain (positions start at 1): it was inserted behind "
                    "the library's back");
}

VerifyResult ChainWalk::finish(Position sequence, std::int64_t rows) {
  if (next_anchor_ < anchors_.size()) {
    const Position anchored = anchors_.back().position;
    return broken(result_, VerifyResult::Problem::behind_anchor, next_,
                  "the log ends at position " + std::to_string(next_ - 1) +
                      ", behind an anchor of position " + std::to_string(anchored) +
                      ": anchored events are gone (a cut-off tail, a lost WAL, or an older "
                      "backup put back)");
  }
  if (sequence >= next_) {
    return broken(result_, VerifyResult::Problem::truncated, next_,
                  "the log ends at position " + std::to_string(next_ - 1) +
                      " but positions up to " + std::to_string(sequence) +
                      " were written: events were removed from its end");
  }
  if (rows != static_cast<std::int64_t>(result_.events_checked)) {
    return broken(result_, VerifyResult::Problem::unchained_row, next_,
                  "the events table holds " + std::to_string(rows) + " rows but the chain " +
                      std::to_string(result_.events_checked) +
                      ": rows were inserted behind the library's back");
  }
  if (!seen_head_) {
    return broken(result_, VerifyResult::Problem::head_mismatch, next_,
                  "the expected head hash " + to_hex(*expected_) +
                      " is not in the chain: the log was cut off or rewritten (it ends at "
                      "position " +
                      std::to_string(next_ - 1) + ")");
  }
  return result_;
}

VerifyResult ChainWalk::empty_stream(std::string_view stream) const {
  return broken(result_, VerifyResult::Problem::unchained_row, 0,
                "the stream '" + std::string(stream) +
                    "' has no events: its row was inserted behind the library's back");
}

}  // namespace factum::detail
