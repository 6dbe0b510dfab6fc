// factum/eventstore/event_view.hpp — a stored event seen in place, without copying it.
//
// The visiting reads of EventStore (visit_stream, visit_category, visit_all) hand their
// callback an EventView per event: the same fields as a RecordedEvent, but the stream id,
// type, actor, payload and encoded metadata key/values point into the database's own row
// memory instead of being copied. A walk of the log through views allocates nothing per event.
//
//   store.visit_all(1, [&](const factum::EventView& e) {
//     total += e.payload.size();
//     return e.position < last;  // false stops the walk; a callback may also return void
//   });
//
// Lifetime: a view, and every string_view and span in it, is valid only during the callback
// call that received it; the next event (or the end of the walk) invalidates them. Keep what
// you need by copying it (to_recorded() copies everything).
//
// Every view handed out was checked as the owned reads check a row: a damaged row throws
// CorruptEventError naming its position before any callback sees it. metadata_values() and
// metadata_value() therefore never fail on a view a visit handed out.
//
// Thread-safety: a view is a plain value over memory owned by the visiting thread; use it on
// that thread during the callback only.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "factum/eventstore/event.hpp"

namespace factum {

struct EventView {
  Position position = 0;
  std::string_view stream_id;
  StreamVersion stream_version = 0;
  EventId id;
  std::string_view type;
  std::uint32_t schema_version = 0;
  std::span<const std::byte> payload;
  std::optional<EventId> correlation_id;  // as Metadata's fields
  std::optional<EventId> causation_id;
  std::optional<EventId> compensates;
  std::string_view actor;  // empty when absent
  // Metadata::values in the stored encoding (docs/storage-format.md, the `extra` column):
  // u32 count, then per entry u32 key length, key, u32 value length, value, big-endian
  // lengths, keys sorted and unique. Empty when the event has no key/values.
  std::span<const std::byte> encoded_values;
  Timestamp recorded_at{};
  Hash hash{};           // this event's link of the hash chain
  Hash previous_hash{};  // the previous event's hash in the log (all zero for position 1)

  // The category of the stream: the part of stream_id before the first '-'.
  std::string_view category() const noexcept { return category_of(stream_id); }
  // Decodes encoded_values into a map (allocates). Throws CorruptEventError when they are
  // malformed (never for a view handed out by a visit: it was checked).
  std::map<std::string, std::string> metadata_values() const;
  // The value of one metadata key, pointing into encoded_values (no allocation); nullopt when
  // the key is absent or the encoding is malformed.
  std::optional<std::string_view> metadata_value(std::string_view key) const noexcept;
  // The whole metadata, copied. Throws as metadata_values().
  Metadata metadata() const;
  // An owned copy of the event, equal to what read_all() returns for it. Throws as
  // metadata_values(), and std::bad_alloc.
  RecordedEvent to_recorded() const;
};

// True when `event.hash` is the SHA-256 of `event.previous_hash` and the event's fields (as
// hash_matches(const RecordedEvent&), without copying the event).
bool hash_matches(const EventView& event);

namespace detail {

// A non-owning reference to a callable `bool(const EventView&)` (like C++26's
// std::function_ref): no allocation, one indirect call per event. The referenced callable
// must outlive the call it is passed to.
class ViewVisitor {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, ViewVisitor>) explicit ViewVisitor(
      F& fn) noexcept
      : object_(static_cast<void*>(std::addressof(fn))), call_(&invoke<F>) {}

  bool operator()(const EventView& e) const { return call_(object_, e); }

 private:
  template <class F>
  static bool invoke(void* object, const EventView& e) {
    F& fn = *static_cast<F*>(object);
    if constexpr (std::is_void_v<std::invoke_result_t<F&, const EventView&>>) {
      fn(e);
      return true;
    } else {
      return static_cast<bool>(fn(e));
    }
  }
  void* object_;
  bool (*call_)(void*, const EventView&);
};

// What a visiting read's callback may be: called with a view, returning void (visit all) or
// something convertible to bool (false stops the walk).
template <class F>
concept EventVisitor = std::is_invocable_v<F&, const EventView&> &&
    (std::is_void_v<std::invoke_result_t<F&, const EventView&>> ||
     std::is_convertible_v<std::invoke_result_t<F&, const EventView&>, bool>);

}  // namespace detail
}  // namespace factum
