// factum/eventstore/event_store.hpp — the append-only event log in one SQLite file.
//
// An EventStore appends events to streams under optimistic concurrency, reads them back by
// stream, by category and as the whole log, proves the log intact through a SHA-256 hash
// chain, and tells listeners about each commit.
//
//   auto store = factum::EventStore::open("bank.db");
//   factum::EventData e;
//   e.type = "bank.AccountOpened";
//   e.payload = factum::to_bytes("...");
//   store.append("account-42", factum::ExpectedVersion::no_stream(), e);
//   for (const factum::RecordedEvent& r : store.read_stream("account-42")) { ... }
//
// Guarantees: an append is atomic (all of its events land, or none) and durable when it
// returns (per StoreOptions::durability). Positions are global, 1-based and gap-free;
// stream versions are 1-based and gap-free per stream. An event is never changed or removed.
//
// Thread-safety: an EventStore is safe to share between threads; every member function may be
// called concurrently. Appends from many threads are committed together (group commit).
// Several processes may open the same file; their appends stay correct (each waits for the
// file's write lock up to StoreOptions::busy_timeout).
//
// This header shows the raw API only: it does not include event_registry.hpp, so a user of
// EventData never parses Boost.Serialization. The typed appends below (domain events encoded
// through an EventRegistry) are usable where event_registry.hpp is included too
// (docs/headers.md).
#pragma once

#include <boost/signals2/signal.hpp>
#include <concepts>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/domain_event.hpp"
#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_range.hpp"
#include "factum/eventstore/event_view.hpp"
#include "factum/eventstore/expected_version.hpp"
#include "factum/eventstore/location.hpp"
#include "factum/eventstore/postgres_options.hpp"
#include "factum/eventstore/query.hpp"
#include "factum/eventstore/sql.hpp"
#include "factum/eventstore/store_options.hpp"

namespace factum {

class EventRegistry;  // event_registry.hpp
class Keyring;        // personal.hpp
struct ForgetResult;  // personal.hpp

namespace detail {
class StoreImpl;
struct StoreAccess;  // the library's own modules' way in (storage.hpp)

// The registry of a typed append, once event_registry.hpp defines it. Checked only when a
// typed append is instantiated (the registry is then a template parameter, so this header
// needs no more than the declaration above).
template <class Registry>
concept DefinedRegistry = std::same_as<Registry, EventRegistry> && requires {
  sizeof(Registry);
};
}  // namespace detail

// Where an append put its events.
struct AppendResult {
  StreamVersion stream_version = 0;  // the stream's version after the append (its last event)
  Position first_position = 0;       // global position of the first appended event
  Position last_position = 0;        // global position of the last appended event

  friend bool operator==(const AppendResult&, const AppendResult&) = default;
};

// One stream's part of an append_multi.
struct StreamAppend {
  std::string stream;
  ExpectedVersion expected = ExpectedVersion::any();
  std::vector<EventData> events;
};

// The newest event's position and hash: keep it to detect a cut-off log later (verify).
struct Head {
  Position position = 0;  // 0 for an empty store
  Hash hash{};            // all zero for an empty store

  friend bool operator==(const Head&, const Head&) = default;
};

// What verify() found.
struct VerifyResult {
  enum class Problem {
    none,                // the chain is intact
    hash_mismatch,       // an event's hash does not match its fields and the previous hash
    position_gap,        // positions skip: events were deleted
    malformed_row,       // a column holds the wrong kind or size of value
    truncated,           // the position counter is past the last event: the end was cut off
    head_mismatch,       // the expected head hash is not in the chain: the log was cut off
    unchained_row,       // a row the chain does not cover: an event below position 1, or a
                         // stream without events (inserted behind the library's back)
    behind_anchor,       // the log ends before an anchored position: a cut-off tail, a lost WAL,
                         // an old backup put back (VerifyOptions::anchored_heads, anchor.hpp)
    anchor_mismatch,     // the log holds another event at an anchored position: a rewrite
    bad_anchor,          // an anchor's signature or the anchors' chain is broken (anchor.hpp)
    tag_index_mismatch,  // the index of tags (tags.hpp) disagrees with the intact log: a row
                         // changed, added or removed behind the library's back
  };
  Problem problem = Problem::none;
  Position events_checked = 0;  // how many events were walked
  Position position = 0;        // the first position where the chain breaks (0 when intact;
                                // 1 for an event row below position 1; 0 for a stream row
                                // without events)
  std::string message;          // what is wrong, naming the position

  bool ok() const noexcept { return problem == Problem::none; }
  explicit operator bool() const noexcept { return ok(); }
};

// The problem's name as written above ("hash_mismatch", ...): what `factum verify` and
// docs/verify_chain.py print.
std::string_view problem_name(VerifyResult::Problem problem) noexcept;

// How verify(const VerifyOptions&) walks the chain.
struct VerifyOptions {
  // When set, verify also fails (head_mismatch) unless this is the hash of some event in the
  // log, as verify(expected_head) does. Default: none.
  std::optional<Hash> expected_head{};
  // Heads the log must still hold, each at its own position (the anchored heads of anchor.hpp;
  // any order): verify fails with behind_anchor when the log ends before one, and with
  // anchor_mismatch when the event at its position has another hash. Default: none.
  std::vector<Head> anchored_heads{};
  // Called on the verifying thread with the number of events checked so far, after each page
  // of the walk (a few thousand events), for a progress bar. Must not throw. Default: none.
  std::function<void(Position events_checked)> on_progress{};
};

// The fate of an append whose on_appending slots ran (AppendTransaction::on_outcome).
enum class AppendOutcome {
  committed,    // the transaction's COMMIT succeeded: the events and what slots wrote are stored
  rolled_back,  // the append was undone: it failed (a slot threw, a version or id check of
                // another stream of the same append_multi failed), or the whole transaction did
};

// What an on_appending slot sees: one append's events inside its still-open transaction.
// Valid only during the slot call.
class AppendTransaction {
 public:
  // The events this append is writing, in position order (committed only if the slot returns).
  virtual std::span<const RecordedEvent> events() const = 0;
  // The store's file inside the append's transaction: what the slot writes commits or rolls
  // back together with the events.
  virtual Sql& sql() = 0;
  // Up to `limit` events of the log with from <= position < events().front().position, in
  // position order, read inside this transaction (for a slot that must catch up first).
  // Throws CorruptEventError for a malformed row, StorageError.
  virtual std::vector<RecordedEvent> read_log(Position from, std::size_t limit) = 0;
  // Registers `notice`, called exactly once with this append's fate, on the committing thread,
  // within the writer's turn: after the COMMIT (or the rollback), before any later transaction
  // of this store in this process begins, and before append() returns. A slot that keeps state
  // in memory beside what it writes learns here whether to keep it. A failed COMMIT counts as
  // rolled_back (see docs/eventstore.md, "A failed commit"). `notice` must not throw (what it
  // throws is ignored), nor call the store. Throws std::bad_alloc.
  virtual void on_outcome(std::function<void(AppendOutcome)> notice) = 0;

 protected:
  ~AppendTransaction() = default;
};

// Notices commits made to the store by any connection, in this process or another: SQLite
// through PRAGMA data_version on a connection of its own, PostgreSQL through the commit counter
// of the store's head row (and, pushed, LISTEN on the store's channel).
// Thread-safety: one watcher is used by one thread at a time; `wake` (below) runs on the
// watcher's own thread.
class LogWatcher {
 public:
  virtual ~LogWatcher() = default;
  // True when a commit has happened since the previous call (the first call answers false).
  // Cheap: no file read when nothing changed. Throws StorageError.
  virtual bool changed() = 0;
  // Asks the watcher to call `wake` as soon as it learns of a commit, from a thread of its own,
  // instead of waiting for the caller's next changed(). Returns false when the backend cannot
  // push (SQLite: another process's commit is seen only by changed()); PostgreSQL LISTENs on
  // the store's channel on a connection of its own and returns true. A wake is a hint, changed()
  // the exact answer: a wake may come for a commit changed() already reported, and while the
  // connection is lost and reopened (with a growing pause, up to a second) it wakes once per
  // attempt, since commits may have been missed. `wake` must be cheap, thread-safe, must not
  // throw and must not call the watcher. Call it at most once; destroying the watcher stops the
  // thread (no wake after the destructor returns). Throws std::bad_alloc, std::system_error
  // (no thread).
  virtual bool push(std::function<void()> wake) {
    static_cast<void>(wake);
    return false;
  }
};

class EventStore {
 public:
  // Signal fired after each commit with the events it committed (in position order).
  using AppendedSignal = boost::signals2::signal<void(const std::vector<RecordedEvent>&)>;
  // Signal fired inside each append's transaction, before the commit (see on_appending).
  using AppendingSignal = boost::signals2::signal<void(AppendTransaction&)>;

  // Opens (and, unless options say otherwise, creates) the store file at `path`, in WAL mode.
  // Throws StorageError: kind not_a_store when the file is not a factum store (nothing is
  // changed in it), newer_format when it was written by a newer factum, io/read_only/busy
  // when it cannot be opened or created.
  static EventStore open(const std::filesystem::path& path, const StoreOptions& options = {});
  // Opens (and, unless options say otherwise, creates) the store on the PostgreSQL server and
  // in the schema `where` names (postgres_options.hpp), as open() does for a postgresql:// URI.
  // Throws InvalidArgument, naming the field, for a field it refuses (before connecting), and
  // StorageError as open(path) does. path() is then the connection's keywords, without the
  // password.
  static EventStore open(const PostgresOptions& where, const StoreOptions& options = {});

  EventStore(EventStore&&) noexcept;
  EventStore& operator=(EventStore&&) noexcept;
  ~EventStore();

  // Appends `events` to `stream` if the stream's version matches `expected`, atomically.
  // A batch whose ids are all stored already, contiguously and in order, in this stream, is a
  // retry when each stored event also has the same type, schema version, payload and
  // metadata: it returns the first try's result and writes nothing, whatever `expected` is.
  // Throws InvalidArgument (empty batch, bad stream id, empty type, payload too large, a
  // `compensates` naming no event of this stream; on PostgreSQL also a stream id, type or actor
  // that is not valid UTF-8 or holds a NUL byte), ConcurrencyError (version mismatch),
  // DuplicateEventError (ids partly stored, stored in another stream, or stored with other
  // content), StorageError. Nothing is written when it throws; after a StorageError, retry
  // the same events (same ids) to be sure (docs/eventstore.md, "A failed commit").
  AppendResult append(std::string_view stream, ExpectedVersion expected,
                      std::span<const EventData> events);
  AppendResult append(std::string_view stream, ExpectedVersion expected, const EventData& event);

  // A conditional append (DCB, docs/dcb.md): as append(), and only if no event matching
  // `condition.fail_if_events_match` was appended after `condition.after`, checked inside the
  // append's transaction, serialised with every other append (SQLite's one writer; PostgreSQL's
  // head lock). Throws AppendConditionFailed (nothing written) when one was, and what append()
  // throws. A retry of a conditional append that committed returns its result, unchecked.
  AppendResult append(std::string_view stream, ExpectedVersion expected,
                      std::span<const EventData> events, const AppendCondition& condition);

  // Typed append: encodes each event through `registry` (each gets a fresh id and
  // `metadata`) and appends them as one batch:
  //   store.append("account-1", ExpectedVersion::any(), registry, MoneyDeposited{...});
  // Needs #include <factum/eventstore/event_registry.hpp> where it is called (a static_assert
  // says so otherwise). Throws what append throws, and UnknownEventTypeError for a type the
  // registry does not know. For a retry that must be recognised as one, encode once
  // (registry.encode) and append the same EventData again. `Registry` is always EventRegistry
  // (deduced); it is a template parameter only so that this header can leave EventRegistry
  // undefined.
  template <class Registry, DomainEvent... E>
  requires(std::same_as<Registry, EventRegistry> && sizeof...(E) > 0) AppendResult
      append(std::string_view stream, ExpectedVersion expected, const Registry& registry,
             const Metadata& metadata, const E&... events) {
    static_assert(detail::DefinedRegistry<Registry>,
                  "a typed append needs #include <factum/eventstore/event_registry.hpp>");
    const std::vector<EventData> batch{registry.encode(events, metadata)...};
    return append(stream, expected, std::span<const EventData>(batch));
  }
  template <class Registry, DomainEvent... E>
  requires(std::same_as<Registry, EventRegistry> && sizeof...(E) > 0) AppendResult
      append(std::string_view stream, ExpectedVersion expected, const Registry& registry,
             const E&... events) {
    return append(stream, expected, registry, Metadata{}, events...);
  }

  // Appends to several streams in one atomic commit: all land, or none (then it throws what
  // the first failing stream's append would throw). Results are in the order of `appends`.
  std::vector<AppendResult> append_multi(std::span<const StreamAppend> appends);
  // append_multi on a condition, checked once for the whole commit (see the conditional append).
  std::vector<AppendResult> append_multi(std::span<const StreamAppend> appends,
                                         const AppendCondition& condition);

  // Events of `stream` with version >= from_version, oldest first. Empty for an unknown
  // stream. Throws InvalidArgument for an invalid stream id.
  EventRange read_stream(std::string_view stream, StreamVersion from_version = 1) const;
  // Events of `stream` with version <= from_version, newest first (from the last event when
  // from_version is 0 or past the end).
  EventRange read_stream_backward(std::string_view stream, StreamVersion from_version = 0) const;
  // Events of every stream of `category` ("account" for "account-42") with position >=
  // from_position, in position order.
  EventRange read_category(std::string_view category, Position from_position = 1) const;
  // The whole log from `from_position`, in position order.
  EventRange read_all(Position from_position = 1) const;
  // Typed reads go through the registry (event_registry.hpp):
  //   for (const auto& d : registry.typed<BankEvent>(store.read_stream("account-1"))) ...

  // Visiting reads: the same events as read_stream, read_category and read_all, in the same
  // order, handed to `fn` one at a time as EventViews over the database's row memory (no copy
  // of any field; event_view.hpp says how long a view lives). `fn` is called as
  // fn(const EventView&) on the calling thread and returns void (walk to the end) or bool
  // (false stops the walk after that event). The walk pages like an EventRange
  // (StoreOptions::read_page_size events per short read transaction, never one transaction
  // for the whole read), so events appended meanwhile are seen when they fall after the walk's
  // current place, and each event is visited once. `fn` may call the store (append included).
  // Returns how many events `fn` was called with.
  // Throws InvalidArgument (an invalid stream id or category), CorruptEventError naming the
  // position of a damaged row (before `fn` sees it; the events before it were visited),
  // StorageError, and whatever `fn` throws (the walk ends there).
  template <detail::EventVisitor F>
  std::uint64_t visit_stream(std::string_view stream, StreamVersion from_version, F&& fn) const {
    return visit_stream_views(stream, from_version, detail::ViewVisitor(fn));
  }
  template <detail::EventVisitor F>
  std::uint64_t visit_category(std::string_view category, Position from_position, F&& fn) const {
    return visit_category_views(category, from_position, detail::ViewVisitor(fn));
  }
  template <detail::EventVisitor F>
  std::uint64_t visit_all(Position from_position, F&& fn) const {
    return visit_all_views(from_position, detail::ViewVisitor(fn));
  }

  // The stream's last version; 0 when it has no events.
  StreamVersion stream_version(std::string_view stream) const;
  // The newest event's position; 0 for an empty store.
  Position head_position() const;
  // The newest event's position and hash.
  Head head() const;
  // The event with this id, if stored.
  std::optional<RecordedEvent> read_event(const EventId& id) const;
  // The events whose metadata.compensates names `id`, in position order.
  std::vector<RecordedEvent> compensations_of(const EventId& id) const;

  // Walks the whole log, recomputing the hash chain; reports the first position where it
  // breaks, and accounts for every row of the events and streams tables (a row outside the
  // chain is reported as unchained_row). The walk reads one consistent snapshot (a single read
  // transaction), so appends running meanwhile are neither reported nor half seen.
  // Never throws for damaged rows (reports them); throws StorageError on I/O errors.
  VerifyResult verify() const;
  // As verify(), and also fails (head_mismatch) unless `expected_head` is the hash of some
  // event in the log: catches a log whose newest events were cut off.
  VerifyResult verify(const Hash& expected_head) const;
  // As verify() or verify(expected_head), with progress reports (see VerifyOptions).
  VerifyResult verify(const VerifyOptions& options) const;

  // Appends events exported from a factum store (`factum export`) exactly as they were
  // recorded: the same positions, stream versions, ids, recorded-at times and hashes. For
  // restoring a log into a new store (`factum import`); services append with append().
  // `events` must continue this store's log: the first event's position is head_position() + 1,
  // positions and each stream's versions follow without gaps, and each event's hash must be
  // the one the chain gives it here (SHA-256 of the previous event's hash and its fields;
  // the given previous_hash is not used). All of them land in one transaction, or none.
  // on_appending slots are not run; on_appended slots are, after the commit.
  // Throws InvalidArgument (an empty span, a position or stream version out of sequence, what
  // append refuses: a bad stream id or type, an oversized payload, a `compensates` naming no
  // earlier event of the stream), CorruptEventError (an event whose hash does not match, named
  // by its position), DuplicateEventError (an id stored already), StorageError. Returns the
  // new head.
  Head import_events(std::span<const RecordedEvent> events);

  // Receives the successive batches of an import_log.
  using ImportBatches = std::function<void(std::span<const RecordedEvent>)>;

  // As import_events, for a whole log read a batch at a time (an export too large to hold in
  // memory): `produce` calls its argument with successive batches, each continuing the one
  // before. Everything lands in one transaction when produce returns, nothing when produce or
  // a batch throws: the exception propagates and the store is as it was (on PostgreSQL, where
  // an import cannot go to a temporary file first, this is what makes it all or nothing).
  // The store's writer is taken for the whole of produce: appends of this store wait, and
  // produce must not call this store. A log of no events writes nothing. on_appended slots,
  // when connected, get every event after the commit (copies are held until then). Throws
  // what import_events throws. Returns the new head.
  Head import_log(const std::function<void(const ImportBatches& import)>& produce);

  // Runs `fn` in one write transaction on the store's file (see sql.hpp): committed when fn
  // returns, rolled back when it throws (the exception propagates). Serialised with appends.
  void write_sql(const std::function<void(Sql&)>& fn);
  // Runs `fn` in one read transaction on a read connection (a consistent view; no writes).
  void read_sql(const std::function<void(Sql&)>& fn) const;

  // Connect a slot: `scoped_connection c = store.on_appended().connect(slot);`. Slots run on
  // the appending thread, after the commit and outside every store lock, so they may call
  // the store (append included). Appends on different threads may notify out of position
  // order; each event carries its position. An exception thrown by a slot propagates out of
  // the append that fired it, whose events are committed all the same.
  AppendedSignal& on_appended();

  // Slots run inside each append's write transaction, once per stream append that writes
  // events (a recognised retry writes none), on the thread committing it, with the store's
  // write lock held: what they write through AppendTransaction::sql() commits atomically with
  // the events (inline projections). A slot that throws fails that append (nothing of it is
  // written; the exception reaches its caller). Slots must be quick, must not call the
  // store's append or write_sql (deadlock), and see the events of their process's appends
  // only: another process's appends do not run this process's slots.
  AppendingSignal& on_appending();

  // Personal data (personal.hpp). The keyring that encrypts and decrypts this store's personal
  // values (give it to EventRegistry::use_keyring); null when StoreOptions::personal_data has
  // no key provider.
  std::shared_ptr<const Keyring> keyring() const;
  // Forgets `subject`: in one transaction, deletes its data key (and marks it forgotten, so no
  // key of it is made again) and appends a factum.SubjectForgotten event ({"subject":"<id>"}) to
  // the stream factum-subjects. Every value encrypted under the key is unreadable from then on
  // (decoded as erased), and the hash chain, which covers only ciphertext, still verifies. On
  // SQLite the key's bytes are overwritten in the file (secure_delete) and checkpointed out of
  // the WAL (ForgetResult::purged). Forgetting a subject again appends another fact and changes
  // nothing else. Needs no key provider (deleting a key needs no secret), and
  // #include <factum/eventstore/personal.hpp> for the result. Throws InvalidArgument (a bad
  // subject id), StorageError (kind read_only on a read-only store).
  ForgetResult forget(std::string_view subject);

  // A watcher with its own connection to the file (see LogWatcher). Throws StorageError.
  std::unique_ptr<LogWatcher> watch() const;

  const std::filesystem::path& path() const noexcept;
  // The options the store was opened with; read_page_size always holds the one in use.
  const StoreOptions& options() const noexcept;

 private:
  friend struct detail::StoreAccess;
  explicit EventStore(std::shared_ptr<detail::StoreImpl> impl);
  std::uint64_t visit_stream_views(std::string_view stream, StreamVersion from_version,
                                   const detail::ViewVisitor& fn) const;
  std::uint64_t visit_category_views(std::string_view category, Position from_position,
                                     const detail::ViewVisitor& fn) const;
  std::uint64_t visit_all_views(Position from_position, const detail::ViewVisitor& fn) const;
  std::shared_ptr<detail::StoreImpl> impl_;
};

}  // namespace factum
