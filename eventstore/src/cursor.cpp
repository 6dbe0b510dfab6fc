// The EventRange cursor: pages through any Storage, remembering where the last page ended.
#include <algorithm>
#include <limits>

#include "storage.hpp"

namespace factum::detail {
namespace {

class PagedCursor final : public EventCursor {
 public:
  PagedCursor(std::shared_ptr<Storage> storage, PageQuery query, std::size_t page_size)
      : storage_(std::move(storage)), query_(std::move(query)), page_size_(page_size) {}

  void next_page(std::vector<RecordedEvent>& page) override {
    if (done_) {
      page.clear();
      return;
    }
    storage_->read_page(query_, page_size_, page);
    if (page.size() < page_size_) done_ = true;
    if (page.empty()) return;
    const RecordedEvent& last = page.back();
    if (!advance(query_, last.position, last.stream_version, last.hash)) done_ = true;
  }

 private:
  std::shared_ptr<Storage> storage_;
  PageQuery query_;
  std::size_t page_size_;
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
  std::uint64_t visited = 0;
  for (;;) {
    const PageEnd end = storage.visit_page(query, page_size, visit);
    visited += end.rows;
    if (end.stopped || end.rows < page_size) return visited;
    if (!advance(query, end.last_position, end.last_version, end.last_hash)) return visited;
  }
}

std::shared_ptr<EventCursor> make_cursor(std::shared_ptr<Storage> storage, PageQuery query,
                                         std::size_t page_size) {
  return std::make_shared<PagedCursor>(std::move(storage), std::move(query),
                                       std::max<std::size_t>(1, page_size));
}

}  // namespace factum::detail
