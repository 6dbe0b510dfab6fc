// factum/eventstore/event_range.hpp — a lazy, single-pass range of stored events.
//
// The reads of EventStore return an EventRange. It fetches events a page at a time
// (StoreOptions::read_page_size), each page in its own short read transaction, so reading
// ten million events takes constant memory and never holds a lock for long. Events appended
// while a range is being walked are seen if they fall after the range's current place.
//
//   for (const factum::RecordedEvent& e : store.read_all()) { ... }
//
// The range is an input range: walk it once. Dereferencing a page's event may throw
// CorruptEventError (a damaged row) or StorageError, from begin() or operator++.
//
// Thread-safety: one range must not be walked by two threads at once; distinct ranges may be
// walked concurrently, with each other and with appends. A range keeps its store open.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "factum/eventstore/event.hpp"

namespace factum {

namespace detail {
// Source of pages for an EventRange (implemented inside the store).
class EventCursor {
 public:
  virtual ~EventCursor() = default;
  // Replaces `page` with the next events; leaves it empty at the end.
  virtual void next_page(std::vector<RecordedEvent>& page) = 0;
};
}  // namespace detail

class EventRange {
 public:
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = RecordedEvent;
    using difference_type = std::ptrdiff_t;
    using pointer = const RecordedEvent*;
    using reference = const RecordedEvent&;

    iterator() = default;
    reference operator*() const { return state_->page[state_->index]; }
    pointer operator->() const { return &state_->page[state_->index]; }
    iterator& operator++() {
      if (++state_->index == state_->page.size()) fetch();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
      return it.state_ == nullptr || it.state_->page.empty();
    }

   private:
    friend class EventRange;
    struct State {
      std::shared_ptr<detail::EventCursor> cursor;
      std::vector<RecordedEvent> page;
      std::size_t index = 0;
    };
    explicit iterator(std::shared_ptr<State> state) : state_(std::move(state)) { fetch(); }
    void fetch() {
      state_->index = 0;
      state_->cursor->next_page(state_->page);
    }
    std::shared_ptr<State> state_;
  };

  explicit EventRange(std::shared_ptr<detail::EventCursor> cursor) : cursor_(std::move(cursor)) {}

  // Fetches the first page. Call once: the range is single-pass.
  iterator begin() const {
    auto state = std::make_shared<iterator::State>();
    state->cursor = cursor_;
    return iterator(std::move(state));
  }
  std::default_sentinel_t end() const noexcept { return {}; }

  // Reads the whole range into a vector (for small ranges: tests, tools).
  std::vector<RecordedEvent> to_vector() const {
    std::vector<RecordedEvent> out;
    for (const RecordedEvent& e : *this) out.push_back(e);
    return out;
  }

 private:
  std::shared_ptr<detail::EventCursor> cursor_;
};

}  // namespace factum
