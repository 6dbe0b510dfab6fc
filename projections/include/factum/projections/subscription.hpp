// factum/projections/subscription.hpp — catch-up subscriptions: the log's history from a
// checkpoint, in pages, then its new events as they are committed, on a thread of their own.
//
//   factum::Subscription sub(store, factum::SubscriptionOptions{
//       .filter = factum::SubscriptionFilter::category("account"),
//       .checkpoint = "mailer"},                        // durable: resumes where it stopped
//       [](const factum::RecordedEvent& e) { send_mail(e); });
//   ...                                                 // ~Subscription stops it
//
// Delivery: events are delivered in position order, each once per run, none skipped, with no
// seam between history and live events: the subscription always reads the log itself (a
// notification only wakes it), so there is no live buffer to merge. This holds for every kind of
// filter, a query's (SubscriptionFilter::query: read through the tag index) included. It holds at
// most batch_size events at a time however far behind it falls. With a checkpoint, delivery across
// restarts is at least once: the checkpoint is saved after each batch, so a crash between a
// handler call and the save delivers that batch again (use RecordedEvent::position or id as an
// idempotency key). Wake-ups: this process's commits through on_appended at once; other
// processes' commits by polling every poll_interval (SQLite's PRAGMA data_version, PostgreSQL's
// commit counter) and, on PostgreSQL, at once through LISTEN/NOTIFY (the poll stays as the
// fallback, e.g. while the listening connection is reopened).
//
// A handler that throws stops the subscription: state() becomes failed, error() holds the
// exception, on_error is called, and the failing event is not checkpointed. So does an error
// that retrying cannot mend (CorruptEventError).
//
// Storage errors: the subscription's thread never ends the process or hangs on one. When reading
// the log, polling for commits or saving the checkpoint fails (StorageError, or std::bad_alloc),
// state() becomes retrying, error() holds the exception and on_error is called (at each failed
// attempt); it retries after a back-off of 10 ms doubling to 1 s, and once the store works again
// goes on after the last event it handled: no event is skipped or delivered twice in the run. A
// checkpoint save that failed is made with the next batch. stop() and the destructor return
// promptly while it backs off.
//
// Thread-safety: the handler runs on the subscription's thread, one call at a time. The other
// members may be called from any thread; stop() and the destructor may also be called from
// inside the handler (the thread then ends after the handler returns). The EventStore must
// outlive the subscription. SubscriptionFilter and SubscriptionOptions are values: the
// subscription keeps its own copy (a query included), so the caller's may change or go.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/query.hpp"

namespace factum {

// Which events a subscription delivers.
struct SubscriptionFilter {
  enum class Kind { all, category, stream, query };
  Kind kind = Kind::all;
  std::string key{};                 // the category or the stream id (unused by all and query)
  Query matching{};                  // Kind::query: deliver the events it matches (query.hpp)
  std::vector<std::string> types{};  // only these event types (empty: every type)
  std::uint32_t partitions = 1;      // consumer groups: deliver only streams whose
  std::uint32_t partition = 0;       // stable_hash(stream id) % partitions == partition

  static SubscriptionFilter all() { return {}; }
  static SubscriptionFilter category(std::string category);
  static SubscriptionFilter stream(std::string stream);
  // The events `query` matches (DCB, docs/dcb.md), read as visit_query reads them: an item with
  // tags through the tag index (its first tag's rows after the position), an item without tags
  // by a scan of the log after the position, filtered by type in SQL (name a tag where speed
  // matters). A query without items matches nothing (the position still follows the log).
  // position() moves to the position each read saw the log up to: events the query does not
  // match count as handled, so checkpoints and wait_for(head) work as for the other kinds.
  // with_types and partitions further restrict what is delivered; partitions still split by
  // stream id (an event goes to the member of its stream), so a consumer group of a query
  // delivers each matching event to exactly one member. The query is validated when the
  // subscription starts (InvalidArgument, as validate_query).
  static SubscriptionFilter query(Query query);
  // Also restricts to these event types.
  SubscriptionFilter with_types(std::vector<std::string> event_types) &&;
  // True when `e` passes the type and partition parts of the filter (the kind is the read).
  bool matches(const RecordedEvent& e) const;
};

// FNV-1a 64 of the bytes of `s`: the same on every machine and in every version of factum.
std::uint64_t stable_hash(std::string_view s) noexcept;

struct SubscriptionOptions {
  SubscriptionFilter filter{};  // default: the whole log
  // Deliver events with position > from. Ignored when `checkpoint` names a saved checkpoint.
  Position from = 0;
  // When not empty: the durable checkpoint (CheckpointStore) loaded at start and saved after
  // each delivered batch.
  std::string checkpoint{};  // default: none (start at `from`, nothing saved)
  // The most events read, held and handled per batch.
  std::size_t batch_size = 256;
  // How often to look for other processes' commits (PRAGMA data_version, PostgreSQL's commit
  // counter); 0 disables polling, and with it PostgreSQL's LISTEN.
  std::chrono::milliseconds poll_interval{100};
  // Called on the subscription's thread when the handler (or a read) throws, and at each failed
  // attempt while it retries after a storage error. Must not throw.
  std::function<void(std::exception_ptr)> on_error{};  // default: none
};

class Subscription {
 public:
  // retrying: a storage error; error() holds it, the subscription retries with back-off and
  // goes back to catching_up or live by itself.
  enum class State { catching_up, live, retrying, stopped, failed };
  using Handler = std::function<void(const RecordedEvent&)>;
  using BatchHandler = std::function<void(std::span<const RecordedEvent>)>;

  // Starts at once. Throws InvalidArgument (empty handler, batch_size 0, bad filter: a category
  // or stream without a name, a partition not below the count, an invalid query, a query given
  // to a kind other than query),
  // StorageError (loading the checkpoint, opening the watcher).
  Subscription(EventStore& store, SubscriptionOptions options, Handler handler);
  // A batch at a time: `handler` gets up to batch_size events in position order.
  static Subscription batched(EventStore& store, SubscriptionOptions options, BatchHandler handler);

  Subscription(Subscription&&) noexcept;
  Subscription& operator=(Subscription&&) noexcept;
  ~Subscription();  // stop()

  // Stops after the batch in progress and joins the thread (unless called on it).
  void stop() noexcept;

  State state() const noexcept;
  // The last position handled (events the filter skipped included); the next batch starts
  // after it.
  Position position() const noexcept;
  // The exception that stopped it (state failed), or the last storage error it retried after
  // (kept once it recovers); null when there was none.
  std::exception_ptr error() const noexcept;
  // The most events held at once so far (bounded by batch_size).
  std::size_t max_held() const noexcept;
  // Waits until position() >= p, or the subscription stopped, or `timeout` passed; returns
  // position() >= p.
  bool wait_for(Position p, std::chrono::milliseconds timeout) const;

  struct Shared;

 private:
  explicit Subscription(std::shared_ptr<Shared> shared);
  std::shared_ptr<Shared> shared_;
};

}  // namespace factum
