// factum/eventstore/query.hpp — consistency by query (DCB, docs/dcb.md): queries over event
// types and tags (tags.hpp), reads by query, and the condition of a conditional append.
//
//   const factum::Query handle = factum::Query::tagged({"username:alice"});
//   const factum::QueryResult seen = factum::read_query(store, handle);
//   if (!seen.events.empty()) throw HandleTaken();
//   store.append("user-7", factum::ExpectedVersion::no_stream(), {&joined, 1},
//                factum::AppendCondition{handle, seen.position});  // AppendConditionFailed if
//                                                                   // alice was taken meanwhile
//
// Thread-safety: Query and AppendCondition are values; read_query and visit_query are safe to
// call from several threads on one store (as its reads are).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/event.hpp"

namespace factum {

class EventStore;

// An item matches an event whose type is one of `types` (any type when empty) and that carries
// every tag of `tags` (tags.hpp; any tags when empty).
struct QueryItem {
  std::vector<std::string> types;
  std::vector<std::string> tags;
  friend bool operator==(const QueryItem&, const QueryItem&) = default;
};

// A query matches an event when any of its items does (none: when it has no items). An item
// with tags is read through the tag index; an item without tags reads the log from the
// position asked for (a scan, filtered by type in SQL: name a tag where speed matters).
struct Query {
  std::vector<QueryItem> items;

  // One item: events carrying all of `tags`, of any type.
  static Query tagged(std::vector<std::string> tags) { return {{QueryItem{{}, std::move(tags)}}}; }
  // One item: events of one of `types` carrying all of `tags`.
  static Query of(std::vector<std::string> types, std::vector<std::string> tags = {}) {
    return {{QueryItem{std::move(types), std::move(tags)}}};
  }
  friend bool operator==(const Query&, const Query&) = default;
};

// Throws InvalidArgument for an invalid tag (validate_tag) or an empty type name.
void validate_query(const Query& query);

// Whether `event` matches `query` (its type, and its tags: tags_of(event.metadata)).
bool matches(const Query& query, const RecordedEvent& event);

// What a read by query found: the matching events in log order, and the position the read saw
// the log up to (the head when it read its last page): the `after` of a condition that must
// fail if a matching event is appended after this read.
struct QueryResult {
  std::vector<RecordedEvent> events;
  Position position = 0;
};

// The events matching `query` with positions after `after`, in log order. Each event's hash
// is checked (CorruptEventError). Throws InvalidArgument (validate_query), StorageError.
QueryResult read_query(const EventStore& store, const Query& query, Position after = 0);

// As read_query, a page at a time (a page of each item per read transaction), handing each
// event to `fn` until it returns false. Returns the position the read saw the log up to, or
// the position of the event `fn` stopped at.
Position visit_query(const EventStore& store, const Query& query, Position after,
                     const std::function<bool(const RecordedEvent&)>& fn);

// The condition of a conditional append (EventStore::append with an AppendCondition): no event
// matching `fail_if_events_match` may have been appended after position `after`.
struct AppendCondition {
  Query fail_if_events_match;
  Position after = 0;
};

// A conditional append found events matching its condition after its position: nothing was
// written. positions() holds the first of them (at most 8), in log order. Read again, decide
// again, and append with the new position (or give up: the rule is broken).
class AppendConditionFailed : public Error {
 public:
  AppendConditionFailed(Position after, std::vector<Position> positions);
  Position after() const noexcept { return after_; }
  const std::vector<Position>& positions() const noexcept { return positions_; }

 private:
  Position after_;
  std::vector<Position> positions_;
};

}  // namespace factum
