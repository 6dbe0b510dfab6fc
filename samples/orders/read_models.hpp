// samples/orders/read_models.hpp — everything the orders program derives from its log, in one
// object: a ProjectionEngine running the order board, the inventory and the outbox, and the
// search index's subscription; plus the queries that read them.
//
//   orders::ReadModels models(store);   // each resumes from its checkpoint
//   models.catch_up();                  // every read model reflects the head
//   for (const auto& row : orders::board(store, 20)) ...
//
// Queries read the logical tables of the store's file (order_board, inventory, sent_emails,
// search_index), each in one read transaction (one moment; a *_view reads all it returns in
// one); call them after catch_up() for an answer that includes the latest events.
//
// Thread-safety: as ProjectionEngine and SearchIndex; the queries may run on any thread.
#pragma once

#include <factum/factum.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "orders/projections.hpp"
#include "orders/search_index.hpp"

namespace orders {

class ReadModels {
 public:
  // Starts the projections (async, each on its own thread) and the search index. Throws
  // StorageError. The store must outlive this object.
  explicit ReadModels(factum::EventStore& store, factum::EngineOptions options = {});
  ~ReadModels();
  ReadModels(const ReadModels&) = delete;
  ReadModels& operator=(const ReadModels&) = delete;

  // Waits until every read model reflects the log's head as it is at the call. Throws Error
  // naming a projection that failed, or when `timeout` passes first.
  void catch_up(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // Stops the projections and the subscription (their checkpoints stay).
  void stop() noexcept;

  const Outbox& outbox() const noexcept { return *outbox_; }
  const factum::ProjectionEngine& engine() const noexcept { return engine_; }

 private:
  factum::EventStore& store_;
  std::shared_ptr<Outbox> outbox_;
  factum::ProjectionEngine engine_;
  SearchIndex search_;
};

struct BoardRow {
  std::string order_id;
  std::string customer;
  std::string status;
  std::int64_t total_cents = 0;
  std::int64_t refunded_cents = 0;
  std::string updated;  // UTC, "2024-05-01 12:30:05"
};

struct InventoryRow {
  std::string sku;
  std::int64_t reserved = 0;
  std::int64_t shipped = 0;
};

struct SentEmail {
  std::string key;
  std::string order_id;
  std::string recipient;
  std::string subject;
};

// Money on the board: what paid, shipped and delivered orders brought in; what was refunded.
struct BoardTotals {
  std::int64_t orders = 0;
  std::int64_t takings_cents = 0;
  std::int64_t refunded_cents = 0;
};
BoardTotals board_totals(const factum::EventStore& store);

// What a redelivery of the outbox did.
struct Redelivery {
  std::uint64_t delivered = 0;   // events handed to the outbox again
  std::uint64_t sent = 0;        // e-mails sent by it (0: nothing was sent twice)
  std::uint64_t duplicates = 0;  // deliveries recognised by their key
};
// Resets the outbox's checkpoint to 0 (CheckpointStore) and runs the outbox to the head
// again, as a crash before its checkpoint was saved would: every event is delivered again.
// Run it while no other engine runs the outbox. Throws Error when it does not finish in time.
Redelivery redeliver_outbox(factum::EventStore& store,
                            std::chrono::milliseconds timeout = std::chrono::seconds(60));

// The board, most recently changed first; `status` ("" for all) filters; at most `limit`.
std::vector<BoardRow> board(const factum::EventStore& store, std::size_t limit,
                            const std::string& status = "");
// The board's row of `order_id`, if any.
std::optional<BoardRow> board_row(const factum::EventStore& store, const std::string& order_id);
// Orders per status ("placed" -> 12, ...).
std::map<std::string, std::int64_t> status_counts(const factum::EventStore& store);
// The board (as board()) and the orders per status (as status_counts()), as of one moment.
struct BoardView {
  std::vector<BoardRow> rows;
  std::map<std::string, std::int64_t> counts;
};
BoardView board_view(const factum::EventStore& store, std::size_t limit,
                     const std::string& status = "");
// Every SKU, most shipped first (then most reserved, then by name).
std::vector<InventoryRow> inventory(const factum::EventStore& store);
// The e-mails sent, newest first, at most `limit`; and how many there are.
std::vector<SentEmail> sent_emails(const factum::EventStore& store, std::size_t limit);
std::int64_t sent_email_count(const factum::EventStore& store);
// Both, as of one moment.
struct SentEmailsView {
  std::int64_t count = 0;
  std::vector<SentEmail> newest;
};
SentEmailsView sent_emails_view(const factum::EventStore& store, std::size_t limit);

}  // namespace orders
