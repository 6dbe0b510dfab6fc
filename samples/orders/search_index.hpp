// samples/orders/search_index.hpp — a search-index table kept in sync with the log by a
// catch-up subscription: change data capture.
//
//   orders::SearchIndex index(store);           // resumes from its durable checkpoint
//   index.wait_for(store.head_position(), 10s); // caught up
//   for (const auto& hit : orders::SearchIndex::search(store, "ann shipped")) ...
//
// The subscription reads the category "order" from the checkpoint "search_index", hands each
// batch to index(), which upserts the rows of the batch's orders in one write transaction,
// then the subscription saves the checkpoint. Delivery is at least once (a crash between the
// two redelivers the batch), and index() is idempotent: a placement writes the whole row, the
// other events set the status, so replaying a batch in order leaves the same rows.
//
// The table search_index (order_id, customer, skus, status) lives in the store's file but
// is not a projection's: it is this subscription's, created when missing.
//
// Thread-safety: the handler runs on the subscription's thread; search() and the other
// members may be called from any thread.
#pragma once

#include <factum/factum.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace orders {

struct SearchHit {
  std::string order_id;
  std::string customer;
  std::string skus;  // space-separated
  std::string status;
};

class SearchIndex {
 public:
  static constexpr std::string_view kCheckpoint = "search_index";

  // Creates the table when missing and starts the subscription from the checkpoint.
  // Throws StorageError. The store must outlive this object.
  explicit SearchIndex(factum::EventStore& store);
  ~SearchIndex();
  SearchIndex(const SearchIndex&) = delete;
  SearchIndex& operator=(const SearchIndex&) = delete;

  // Waits until the index reflects position `p`; throws the handler's error when the
  // subscription failed. Returns false on timeout.
  bool wait_for(factum::Position p, std::chrono::milliseconds timeout) const;
  // The last position indexed (the subscription's position).
  factum::Position position() const noexcept;
  // Stops following the log (the checkpoint stays where it got to).
  void stop() noexcept;

  // Orders whose id, customer, SKUs or status contain every word of `text` (case-insensitive,
  // at most 8 words), ordered by order id; at most `limit`. Throws BadInput for an empty text.
  static std::vector<SearchHit> search(const factum::EventStore& store, std::string_view text,
                                       std::size_t limit = 1000);
  // Throws BadInput when `text` has no word to search for (search() would refuse it).
  static void check_query(std::string_view text);

 private:
  void index(std::span<const factum::RecordedEvent> batch);

  factum::EventStore& store_;
  std::optional<factum::Subscription> subscription_;
};

}  // namespace orders
