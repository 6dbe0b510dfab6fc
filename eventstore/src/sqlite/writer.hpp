// The one writer of a process: owns the write connection and commits concurrent appends
// together (group commit, group_commit.hpp): one transaction and one fsync per group.
// writer.cpp holds the transactions and the group's turn, writer_append.cpp what one append
// does inside it (look-ups of streams, versions, ids and retries; the inserts).
//
// Thread-safety: write() may be called from any thread.
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "factum/detail/mutex.hpp"
#include "factum/eventstore/event_store.hpp"
#include "group_commit.hpp"
#include "hash_chain.hpp"
#include "sqlite/connection.hpp"
#include "sqlite/schema.hpp"
#include "sqlite/sql_handle.hpp"
#include "storage.hpp"

namespace factum::detail {

class Writer {
 public:
  Writer(const std::filesystem::path& path, const StoreOptions& options);

  // Commits `appends` atomically, grouped with concurrent calls. Fills `sink` with the
  // positions written and (when sink.events is not null) copies of the events written. Throws
  // what the append would: ConcurrencyError, DuplicateEventError, InvalidArgument,
  // StorageError. Runs `hook` (when not null) inside the transaction after each stream append
  // that writes; a hook that throws fails that append.
  std::vector<AppendResult> write(std::span<const AppendView> appends, AppendSink& sink,
                                  const AppendHook* hook);

  // True when the file held the store's schema when last seen (false for a new, empty file whose
  // first write has not committed yet).
  bool has_schema() const noexcept { return schema_ != SchemaState::absent; }

  // Runs `fn` alone in one write transaction, in turn with the appends. Rethrows what fn
  // throws (after rolling back) or a StorageError.
  void write_sql(const std::function<void(Sql&)>& fn);

  // In turn with the appends, copies the WAL into the file and truncates it to nothing
  // (PRAGMA wal_checkpoint(TRUNCATE)), so that no page image an earlier change replaced stays
  // in it. False when readers kept it from finishing within busy_timeout. Throws StorageError.
  bool checkpoint_truncate();

 private:
  struct Pending : GroupCaller {
    std::span<const AppendView> appends;
    AppendSink* sink = nullptr;
    const std::function<void(Sql&)>* custom = nullptr;  // a write_sql instead of appends
    bool* checkpointed = nullptr;  // a checkpoint_truncate instead of appends (its outcome)
    const AppendHook* hook = nullptr;
    std::vector<AppendResult> results;
    // Outcome notices registered by its on_appending slots (AppendTransaction::on_outcome).
    std::vector<std::function<void(AppendOutcome)>> notices;
    std::exception_ptr error;
  };
  struct Tail {
    Position position = 0;
    Hash hash{};
    friend bool operator==(const Tail&, const Tail&) = default;
  };

  // What the writer remembers of the log between its commits: each stream's key and version
  // and the head, as its last clean commit left them. Used only while no other connection has
  // committed since (SQLITE_FCNTL_DATA_VERSION) and no write_sql or on_appending slot ran on
  // this one; otherwise read again. A stale entry cannot write a wrong row: the insert guard
  // (events_are_appended) would refuse it.
  struct Remembered {
    struct StreamState {
      std::int64_t key = 0;
      StreamVersion version = 0;
    };
    struct NameHash {
      using is_transparent = void;
      std::size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
      }
    };
    std::unordered_map<std::string, StreamState, NameHash, std::equal_to<>> streams;
    // Both set by a clean commit of appends only: the head it left, and the file's data
    // version after it.
    std::optional<Tail> tail;
    std::optional<unsigned> data_version;
    // Streams remembered at most; then forgotten all at once (a map, not an LRU: cheap).
    static constexpr std::size_t kMaxStreams = 4096;
    void forget() noexcept {
      streams.clear();
      tail.reset();
      data_version.reset();
    }
  };

  class Transaction;
  class Savepoint;

  void enqueue(Pending& self);
  void commit_group(std::span<Pending* const> group) noexcept;
  // Records `error` as p's, forgets its results and tells its slots it was rolled back.
  static void fail(Pending& p, std::exception_ptr error) noexcept;
  static void notify(Pending& p, AppendOutcome outcome) noexcept;
  static void reset(Pending& p) noexcept;
  void run_custom(Pending& p) noexcept;
  class HookTransaction;
  void apply(Pending& p, Tail& tail, std::int64_t now);
  void run_hook(Pending& p, std::vector<RecordedEvent>& events);
  std::vector<RecordedEvent> read_log(Position from, Position before, std::size_t limit);
  AppendResult apply_one(const AppendView& a, Tail& tail, std::int64_t now,
                         std::vector<RecordedEvent>* committed);
  Tail read_tail();
  std::optional<unsigned> data_version();
  void remember(std::string_view stream, std::int64_t key, StreamVersion version);
  std::optional<std::int64_t> find_stream(std::string_view stream);
  StreamVersion last_version(std::int64_t stream_key);
  std::int64_t insert_stream(std::string_view stream);
  std::optional<AppendResult> find_retry(const AppendView& a, std::optional<std::int64_t> key);
  bool compensates_in_stream(const EventData& e, std::int64_t key);
  [[noreturn]] void throw_bad_compensation(const EventData& e, std::string_view stream);
  // False when a constraint refused the row (a stored id, or a guard); throws other errors.
  bool insert_event(std::int64_t key, const EventFields& f, const Hash& hash);
  [[noreturn]] void refused(const EventFields& f);
  bool is_stored(const EventId& id);
  [[noreturn]] void throw_duplicate(const EventId& id, std::string_view stream);
  void commit(std::string_view doing);
  void seal_wal() noexcept;
  void rollback() noexcept;
  void run(Statement& s, std::string_view doing);

  // The statements on the log's tables, prepared once those exist (the first write transaction
  // of a new file creates them, see complete_schema()).
  struct Queries {
    explicit Queries(Database& db);
    Statement find_stream;
    Statement insert_stream;
    Statement last_version;
    Statement by_id;
    Statement ids_from;
    Statement tail;
    Statement log_range;
    Statement insert_event;
  };

  // The schema's part in a write transaction: made or upgraded inside the transaction when the
  // file needs it (see schema.hpp), kept only if the transaction commits; after a commit, the
  // switch of a new file to WAL mode.
  void complete_schema();
  void schema_committed() noexcept;
  void schema_rolled_back() noexcept;
  std::int64_t schema_cookie();  // PRAGMA schema_version: changes with every CREATE or DROP

  Database db_;
  StoreOptions options_;
  SchemaState schema_;           // what the file held when last seen committed
  bool schema_changed_ = false;  // this transaction made or upgraded it
  bool wal_ = false;             // the file is in WAL mode
  std::unique_ptr<Queries> q_;
  // Transaction control, prepared once (sqlite3_exec would parse it on every commit).
  Statement begin_;
  Statement commit_;
  Statement savepoint_;
  Statement release_;
  Statement rollback_to_;
  Statement seal_;  // rewrites the application id: a write that changes nothing
  ChainHasher hasher_;
  StatementCache cache_;
  GroupCommit<Pending> group_commit_;
  Remembered remembered_;
  bool remembering_ = false;    // in this group: streams are looked up in remembered_ and updated
  int refused_rc_ = SQLITE_OK;  // the constraint error of the last refused insert_event
  std::string refused_detail_;  // and SQLite's message for it
};

}  // namespace factum::detail
