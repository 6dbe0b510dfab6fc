// The one writer of a process: owns the write connection and commits concurrent appends
// together (group commit), LevelDB-style: callers queue up; the caller at the front becomes
// the leader, commits the whole queue in one transaction (one fsync), and wakes the others.
// No extra thread: the leader's own thread does the work.
//
// Thread-safety: write() may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "factum/detail/mutex.hpp"
#include "factum/eventstore/event_store.hpp"
#include "hash_chain.hpp"
#include "sql_handle.hpp"
#include "sqlite.hpp"
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

  // Runs `fn` alone in one write transaction, in turn with the appends. Rethrows what fn
  // throws (after rolling back) or a StorageError.
  void write_sql(const std::function<void(Sql&)>& fn);

 private:
  enum class Turn { wait, lead, done };
  struct Pending {
    std::span<const AppendView> appends;
    AppendSink* sink = nullptr;
    const std::function<void(Sql&)>* custom = nullptr;  // a write_sql instead of appends
    const AppendHook* hook = nullptr;
    std::vector<AppendResult> results;
    // Outcome notices registered by its on_appending slots (AppendTransaction::on_outcome).
    std::vector<std::function<void(AppendOutcome)>> notices;
    std::exception_ptr error;
    // Whose turn: set by the leader that commits this append or passes the lead to it.
    Mutex mu;
    CondVar cv;
    Turn turn FACTUM_GUARDED_BY(mu) = Turn::wait;
  };
  struct Tail {
    Position position = 0;
    Hash hash{};
  };

  class Transaction;
  class Savepoint;

  void enqueue(Pending& self) FACTUM_EXCLUDES(mu_);
  void run_turn(Pending& self) FACTUM_EXCLUDES(mu_);
  void gather(MutexLock& lock) FACTUM_REQUIRES(mu_);
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
  std::optional<std::int64_t> find_stream(std::string_view stream);
  StreamVersion last_version(std::int64_t stream_key);
  std::int64_t insert_stream(std::string_view stream);
  std::optional<AppendResult> find_retry(const AppendView& a, std::optional<std::int64_t> key);
  void check_compensates(const EventData& e, std::int64_t key, std::string_view stream);
  void insert_event(std::int64_t key, const EventFields& f, const Hash& hash);
  bool is_stored(const EventId& id);
  [[noreturn]] void throw_duplicate(const EventId& id, std::string_view stream);
  void commit(std::string_view doing);
  void seal_wal() noexcept;
  void rollback() noexcept;
  void run(Statement& s, std::string_view doing);

  Database db_;
  Statement find_stream_;
  Statement insert_stream_;
  Statement last_version_;
  Statement by_id_;
  Statement ids_from_;
  Statement tail_;
  Statement log_range_;
  Statement insert_event_;
  // Transaction control, prepared once (sqlite3_exec would parse it on every commit).
  Statement begin_;
  Statement commit_;
  Statement savepoint_;
  Statement release_;
  Statement rollback_to_;
  Statement seal_;  // rewrites the application id: a write that changes nothing
  ChainHasher hasher_;
  StatementCache cache_;
  std::size_t max_group_size_;

  Mutex mu_;
  std::deque<Pending*> queue_ FACTUM_GUARDED_BY(mu_);
  // Group commit's pacing (see gather()): the size and duration of the last group's commit,
  // and the queue length at which a gathering leader is woken (max: none is gathering).
  std::size_t last_group_ FACTUM_GUARDED_BY(mu_) = 1;
  std::chrono::steady_clock::duration last_commit_ FACTUM_GUARDED_BY(mu_){};
  std::size_t gather_until_ FACTUM_GUARDED_BY(mu_) = std::numeric_limits<std::size_t>::max();
  CondVar gather_cv_;
  bool leading_ FACTUM_GUARDED_BY(mu_) = false;  // a caller leads (from enqueue to hand-off)
  std::vector<Pending*> group_;                  // the leader's group (only the leader uses it)
};

}  // namespace factum::detail
