// The EventRange cursor: pages through any Storage, remembering where the last page ended.
#include <algorithm>

#include "storage.hpp"

namespace factum::detail {
namespace {

class PagedCursor final : public EventCursor {
 public:
  PagedCursor(std::shared_ptr<Storage> storage, PageQuery query, std::size_t page_size)
      : storage_(std::move(storage)), query_(std::move(query)), page_size_(page_size) {}

  void next_page(std::vector<RecordedEvent>& page) override {
    page.clear();
    if (done_) return;
    storage_->read_page(query_, page_size_, page);
    if (page.size() < page_size_) done_ = true;
    if (!page.empty()) advance(page.back());
  }

 private:
  void advance(const RecordedEvent& last) {
    switch (query_.kind) {
      case PageQuery::Kind::all:
      case PageQuery::Kind::category:
        query_.from = last.position + 1;
        break;
      case PageQuery::Kind::stream_forward:
        query_.from = last.stream_version + 1;
        break;
      case PageQuery::Kind::stream_backward:
        if (last.stream_version <= 1) done_ = true;
        query_.from = last.stream_version - 1;
        break;
    }
  }

  std::shared_ptr<Storage> storage_;
  PageQuery query_;
  std::size_t page_size_;
  bool done_ = false;
};

}  // namespace

std::shared_ptr<EventCursor> make_cursor(std::shared_ptr<Storage> storage, PageQuery query,
                                         std::size_t page_size) {
  return std::make_shared<PagedCursor>(std::move(storage), std::move(query),
                                       std::max<std::size_t>(1, page_size));
}

}  // namespace factum::detail
