// The EventRange cursor: pages through any Storage, remembering where the last page ended.
#include <algorithm>
#include <limits>

#include "storage.hpp"
#include "walk_check.hpp"

namespace factum::detail {
namespace {

class PagedCursor final : public EventCursor {
 public:
  PagedCursor(std::shared_ptr<Storage> storage, PageQuery query, std::size_t page_size)
      : storage_(std::move(storage)),
        query_(std::move(query)),
        page_size_(page_size),
        check_(query_) {}

  // Each page is checked whole before the caller sees any of it (walk_check.hpp).
  void next_page(std::vector<RecordedEvent>& page) override {
    if (done_) {
      page.clear();
      return;
    }
    storage_->read_page(query_, page_size_, page);
    try {
      for (const RecordedEvent& e : page) check_.row(e.position, e.stream_id, e.stream_version);
      if (page.size() < page_size_) {
        done_ = true;
        check_.end(*storage_);
      }
    } catch (...) {
      page.clear();
      done_ = true;
      throw;
    }
    if (page.empty()) return;
    const RecordedEvent& last = page.back();
    if (!advance(query_, last.position, last.stream_version, last.hash)) done_ = true;
  }

 private:
  std::shared_ptr<Storage> storage_;
  PageQuery query_;
  std::size_t page_size_;
  WalkCheck check_;
  bool done_ = false;
};

}  // namespace

bool advance(PageQuery& query, Position position, StreamVersion version, const Hash& hash) {
  query.carried_position = position;
  query.carried_hash = hash;
  switch (query.kind) {
    case PageQuery::Kind::all:
    case PageQuery::Kind::category:
      query.from = position + 1;
      return true;
    case PageQuery::Kind::stream_forward:
      query.from = version + 1;
      return true;
    case PageQuery::Kind::stream_backward:
      query.from = version - 1;
      return version > 1;
  }
  return true;
}

std::int64_t query_lower_bound(const PageQuery& query) noexcept {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  const bool forward = query.kind != PageQuery::Kind::stream_backward;
  if (forward && query.from <= 1) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(std::min<std::uint64_t>(query.from, kMax));
}

std::uint64_t visit_pages(Storage& storage, PageQuery query, std::size_t page_size,
                          const ViewVisitor& visit) {
  page_size = std::max<std::size_t>(1, page_size);
  // Each event is checked before `visit` sees it (walk_check.hpp).
  WalkCheck check(query);
  auto check_then_visit = [&](const EventView& e) {
    check.row(e.position, e.stream_id, e.stream_version);
    return visit(e);
  };
  const ViewVisitor checked(check_then_visit);
  std::uint64_t visited = 0;
  for (;;) {
    const PageEnd end = storage.visit_page(query, page_size, checked);
    visited += end.rows;
    if (end.stopped) return visited;
    if (end.rows < page_size) {
      check.end(storage);
      return visited;
    }
    if (!advance(query, end.last_position, end.last_version, end.last_hash)) return visited;
  }
}

std::shared_ptr<EventCursor> make_cursor(std::shared_ptr<Storage> storage, PageQuery query,
                                         std::size_t page_size) {
  return std::make_shared<PagedCursor>(std::move(storage), std::move(query),
                                       std::max<std::size_t>(1, page_size));
}

}  // namespace factum::detail
