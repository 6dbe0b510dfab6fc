// LogFollower's reads by query (SubscriptionFilter::query): a batch is read with visit_query
// (an item with tags through the tag index), and the position moves to where the read saw the
// log up to, so events the query does not match are passed over without being read. With a
// second stream (a projection's forgotten subjects), that stream's events up to the same
// position are read by version and merged in by position.
#include <algorithm>

#include "factum/eventstore/query.hpp"
#include "follower.hpp"

namespace factum::detail {
namespace {

bool by_position(const RecordedEvent& a, const RecordedEvent& b) { return a.position < b.position; }
bool same_position(const RecordedEvent& a, const RecordedEvent& b) {
  return a.position == b.position;
}

}  // namespace

// Up to `limit` events in `batch` (counting those it holds already). visit_query stops at the
// event that fills the batch (the position is then that event's), or reads to the head it saw
// in the transaction of its last page (every position up to it is committed: positions become
// visible in order on both backends), which is where the position goes then.
bool LogFollower::next_by_query(std::vector<RecordedEvent>& batch, std::size_t limit) {
  if (batch.size() >= limit) return false;
  const std::size_t first = batch.size();
  const std::size_t room = limit - first;
  std::size_t seen = 0;
  bool cut = false;  // stopped before the head
  Position end = visit_query(store_, filter_.matching, position_, [&](const RecordedEvent& e) {
    if (filter_.matches(e)) batch.push_back(e);
    cut = ++seen == room;
    return !cut;
  });
  if (!also_stream_.empty()) end = merge_also(batch, first, end, room, cut);
  position_ = std::max(position_, end);
  return !cut;
}

// The second stream's events after position_ and up to `end`, merged into batch[first, ...)
// by position (an event both reads found comes once); at most `room` events in all, `end`
// moving back to the last one kept when there are more. Returns the new end.
Position LogFollower::merge_also(std::vector<RecordedEvent>& batch, std::size_t first, Position end,
                                 std::size_t room, bool& cut) {
  const std::size_t queried = batch.size();
  for (const RecordedEvent& e : store_.read_stream(also_stream_, also_version_)) {
    if (e.position > end) break;
    if (e.position <= position_) {  // passed by a restart forward
      also_version_ = e.stream_version + 1;
      continue;
    }
    batch.push_back(e);
    if (batch.size() - queried == room) {  // a batch of its own: read no further
      end = e.position;
      cut = true;
      break;
    }
  }
  if (batch.size() > queried) {
    const auto at = [&](std::size_t i) { return batch.begin() + static_cast<std::ptrdiff_t>(i); };
    std::inplace_merge(at(first), at(queried), batch.end(), by_position);
    batch.erase(std::unique(at(first), batch.end(), same_position), batch.end());
    batch.erase(std::find_if(at(first), batch.end(),
                             [&](const RecordedEvent& e) { return e.position > end; }),
                batch.end());
    if (batch.size() - first > room) {
      batch.resize(first + room);
      end = batch.back().position;
      cut = true;
    }
    for (std::size_t i = first; i < batch.size(); ++i) {
      if (batch[i].stream_id == also_stream_) also_version_ = batch[i].stream_version + 1;
    }
  }
  also_position_ = end;
  return end;
}

}  // namespace factum::detail
