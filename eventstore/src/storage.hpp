// The one narrow interface between EventStore and a storage backend: SQLite (src/sqlite/) and
// PostgreSQL, for services that outgrow one machine, implement it and nothing above it
// changes.
//
// Thread-safety: every member may be called from any thread concurrently.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/event_view.hpp"

namespace factum::detail {

struct PgTarget;   // postgres_target.hpp
struct TagDigest;  // tags_index.hpp

// One stream's part of an append, by reference (the caller's events are not copied).
struct AppendView {
  std::string_view stream;
  ExpectedVersion expected = ExpectedVersion::any();
  std::span<const EventData> events;
};

// What an append reports besides its results: the positions it wrote (one call's events are
// contiguous in the log; none when every stream append was an idempotent retry), and copies of
// the events written, when `events` is not null.
struct AppendSink {
  std::vector<RecordedEvent>* events = nullptr;
  Position first_written = 0;  // 0: nothing written
  Position last_written = 0;
};

// Called inside the append transaction (EventStore::on_appending).
using AppendHook = std::function<void(AppendTransaction&)>;

// What EventStore's own hook does for an append, for a backend that can do it in its own
// statements: index the events' tags (tags.hpp) and check a condition (query.hpp) against the
// events stored before the first one the append writes, the tag table made first when either
// needs it; and require a key in the store for each subject of the events' personal values
// (keyring.hpp require_keys). Passed with the hook that does the same, which a backend runs
// where it does not.
struct AppendChecks {
  bool tags = false;
  const AppendCondition* condition = nullptr;
  bool tag_table = false;  // the tags or the condition read or write factum_event_tags
  bool keys = false;
};

// What a page read selects.
struct PageQuery {
  enum class Kind { all, stream_forward, stream_backward, category };
  Kind kind = Kind::all;
  std::string key;         // the stream id or the category
  std::uint64_t from = 1;  // first position (all, category) or stream version (streams)
  // The event at position from - 1 and its hash, when the page before read it (0: unknown).
  // A read of the whole log chains each event's previous_hash from the event before it
  // instead of looking it up; only a read's first event needs the lookup.
  Position carried_position = 0;
  Hash carried_hash{};
};

// Where a visited page ended (Storage::visit_page).
struct PageEnd {
  std::size_t rows = 0;  // events handed to the visitor
  bool stopped = false;  // the visitor returned false
  Position last_position = 0;
  StreamVersion last_version = 0;
  Hash last_hash{};

  // Counts `v`, handed to the visitor next, as the page's last event so far.
  void add(const EventView& v) noexcept {
    ++rows;
    last_position = v.position;
    last_version = v.stream_version;
    last_hash = v.hash;
  }
};

// Where the log ends, as the store records it (read in one snapshot).
struct LogEnd {
  Position written = 0;  // the highest position the store has handed out
  Position stored = 0;   // the highest position of a stored event (0: none)
};

// Moves `query` past a page whose last event is (position, version, hash); false when the
// read is over (a backward stream read past version 1).
bool advance(PageQuery& query, Position position, StreamVersion version, const Hash& hash);

// The first position (or version) a page query reads, as both backends bind it. A read of the
// log, a category or a stream from its start also takes rows below position (or version) 1: no
// row is hidden from a reader, and such a row (written behind the library's back) fails to
// decode as CorruptEventError.
std::int64_t query_lower_bound(const PageQuery& query) noexcept;

class Storage {
 public:
  virtual ~Storage() = default;

  // The read page size of StoreOptions::read_page_size left unset.
  virtual std::size_t default_read_page_size() const noexcept { return kSqliteReadPageSize; }

  // Commits `appends` atomically with the semantics of EventStore::append_multi (arguments
  // are validated already). Fills `sink` (see AppendSink).
  // Runs `hook` (when not null) inside the transaction after each stream append that writes.
  // `checks`, when not null, says that `hook` does only these checks: the backend may do them
  // itself instead (with the same outcome) and not run `hook`.
  virtual std::vector<AppendResult> append(std::span<const AppendView> appends, AppendSink& sink,
                                           const AppendHook* hook, const AppendChecks* checks) = 0;
  // Replaces `page` with up to `limit` events matching `query`, in its order (overwriting
  // the events it holds, to reuse their memory).
  virtual void read_page(const PageQuery& query, std::size_t limit,
                         std::vector<RecordedEvent>& page) = 0;
  // Hands `visit` up to `limit` events matching `query`, in its order, as views over the row
  // (one short read transaction). Throws CorruptEventError for a damaged row, StorageError,
  // and what `visit` throws.
  virtual PageEnd visit_page(const PageQuery& query, std::size_t limit,
                             const ViewVisitor& visit) = 0;
  virtual StreamVersion stream_version(std::string_view stream) = 0;
  virtual Head head() = 0;
  // The high-water mark of the log's positions and its last stored position, in one snapshot:
  // `stored` < `written` when events were removed from the log's end. Throws StorageError.
  virtual LogEnd log_end() = 0;
  virtual std::optional<RecordedEvent> read_event(const EventId& id) = 0;
  virtual std::vector<RecordedEvent> compensations_of(const EventId& id) = 0;
  // EventStore::verify: the whole chain in one read snapshot, as `options` say; the tags of
  // the events walked go into `tags` (for the check of their index, tags_index.hpp).
  virtual VerifyResult verify(const VerifyOptions& options, TagDigest& tags) = 0;
  // One write transaction serialised with appends / one read transaction (sql.hpp): the
  // caller's SQL, planned as the backend plans a stranger's statements (on PostgreSQL, the
  // server's default settings).
  virtual void write_sql(const std::function<void(Sql&)>& fn) = 0;
  virtual void read_sql(const std::function<void(Sql&)>& fn) = 0;
  // read_sql for the library's own statements (reads by query): planned as the backend plans
  // its own (on PostgreSQL, factum's planner settings, postgres/statements.hpp).
  virtual void read_own_sql(const std::function<void(Sql&)>& fn) { read_sql(fn); }
  // A PRAGMA data_version watcher on a connection of its own.
  virtual std::unique_ptr<LogWatcher> watch() = 0;
  // Makes what was deleted or overwritten unrecoverable from the store's files as far as the
  // backend can: SQLite checkpoints the WAL into the file and truncates it (false when readers
  // kept the checkpoint from finishing within busy_timeout); PostgreSQL does nothing here (dead
  // row versions stay until VACUUM; docs/erasure.md). Throws StorageError.
  virtual bool purge() = 0;
};

// Opens the SQLite backend on `path` (creating or checking the schema).
std::shared_ptr<Storage> open_sqlite_storage(const std::filesystem::path& path,
                                             const StoreOptions& options);

// Opens the PostgreSQL backend on the database `target` names (creating or checking the store
// in the first schema of the connection's search_path). Throws StorageError (Kind::other) when
// factum was built without libpq.
std::shared_ptr<Storage> open_postgres_storage(std::shared_ptr<const PgTarget> target,
                                               const StoreOptions& options);

// The backend `location` names: a PostgreSQL URI (factum::is_server_location), or else the path
// of a SQLite file.
std::shared_ptr<Storage> open_storage(const std::filesystem::path& location,
                                      const StoreOptions& options);

// Visits every event matching `query`, a page at a time (each in its own read transaction),
// until the end or until `visit` returns false, checking each event before `visit` sees it and
// the log's end when it gets there (walk_check.hpp). Returns how many events it was handed.
// Throws CorruptStoreError at a hole, and what the pages and `visit` throw.
std::uint64_t visit_pages(Storage& storage, PageQuery query, std::size_t page_size,
                          const ViewVisitor& visit);

// A cursor for EventRange that pages through `storage`, checking each page as visit_pages does.
std::shared_ptr<EventCursor> make_cursor(std::shared_ptr<Storage> storage, PageQuery query,
                                         std::size_t page_size);

// What the library's own modules reach of an EventStore beyond its public calls.
struct StoreAccess {
  // Storage::read_own_sql of the store's backend. Throws what it throws.
  static void read_own_sql(const EventStore& store, const std::function<void(Sql&)>& fn);
};

}  // namespace factum::detail
