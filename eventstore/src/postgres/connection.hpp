// A connection to the server (PgConn), its results (PgResult), and how its errors become
// StorageErrors naming the store (kind_of, one_line). Every statement of the backend runs on a
// PgConn; PgPool (pool.hpp) keeps the readers', the writer keeps its own.
//
// Internal. Thread-safety: a PgConn and its results belong to one thread at a time.
#pragma once

#include <poll.h>

#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "event_rows.hpp"  // kKeepsPreviousHashSql
#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/store_options.hpp"
#include "postgres/libpq.hpp"
#include "postgres/statements.hpp"
#include "postgres_target.hpp"

namespace factum::detail::pg {

constexpr unsigned kInt8Oid = 20;
constexpr unsigned kTextOid = 25;
constexpr unsigned kByteaOid = 17;
constexpr unsigned kBoolOid = 16;
constexpr int kFormat = 1;  // binary parameters and results

// libpq's or the server's message in one line (each line break and the indent after it
// become one space), escaped for a terminal (text.hpp): the server quotes the data it refused
// (a DETAIL naming a row's values).
std::string one_line(const char* message);

// A statement's result, cleared when destroyed, with typed readers of its binary values.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(PGresult* r) noexcept : r_(r) {}
  PgResult(PgResult&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  PgResult& operator=(PgResult&& o) noexcept {
    if (this != &o) {
      if (r_ != nullptr) libpq().PQclear(r_);
      r_ = std::exchange(o.r_, nullptr);
    }
    return *this;
  }
  ~PgResult() {
    if (r_ != nullptr) libpq().PQclear(r_);
  }
  PGresult* get() const noexcept { return r_; }
  int rows() const noexcept { return libpq().PQntuples(r_); }
  bool null(int row, int col) const noexcept { return libpq().PQgetisnull(r_, row, col) != 0; }
  std::span<const std::byte> bytes(int row, int col) const noexcept {
    return {reinterpret_cast<const std::byte*>(libpq().PQgetvalue(r_, row, col)),
            static_cast<std::size_t>(libpq().PQgetlength(r_, row, col))};
  }
  std::string_view text(int row, int col) const noexcept {
    return {libpq().PQgetvalue(r_, row, col),
            static_cast<std::size_t>(libpq().PQgetlength(r_, row, col))};
  }
  // A binary int8 (or int4) column; false when NULL or of another size (libpq gives a NULL
  // length 0: no PQgetisnull call, a page decodes several of these per row).
  bool int64(int row, int col, std::int64_t& out) const noexcept {
    const auto b = bytes(row, col);
    if (b.size() != 8 && b.size() != 4) return false;
    std::uint64_t v = 0;
    for (std::byte x : b) v = (v << 8) | static_cast<std::uint8_t>(x);
    out = b.size() == 8 ? static_cast<std::int64_t>(v)
                        : static_cast<std::int64_t>(static_cast<std::int32_t>(v));
    return true;
  }
  std::int64_t int64_or(int row, int col, std::int64_t fallback) const noexcept {
    std::int64_t v = fallback;
    return int64(row, col, v) ? v : fallback;
  }

 private:
  PGresult* r_ = nullptr;
};

// The StorageError kind of an error with SQLSTATE `sqlstate` on `conn` (io when the connection
// is broken).
StorageError::Kind kind_of(const char* sqlstate, PGconn* conn);

// One connection: connected and configured (synchronous_commit, lock_timeout, the planner
// settings of statements.hpp) when made, finished when destroyed. Throws StorageError (kind io)
// naming the store when it cannot connect; its statements throw StorageError naming the store
// and what was being done.
class PgConn {
 public:
  PgConn(std::shared_ptr<const PgTarget> target, const StoreOptions& options)
      : target_(std::move(target)) {
    conn_ = connect(*target_);
    if (conn_ == nullptr || libpq().PQstatus(conn_) != CONNECTION_OK) {
      const std::string why =
          one_line(conn_ != nullptr ? libpq().PQerrorMessage(conn_) : "out of memory");
      if (conn_ != nullptr) libpq().PQfinish(conn_);
      throw StorageError(StorageError::Kind::io,
                         "factum: cannot connect to '" + target_->shown + "': " + why);
    }
    libpq().PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    try {
      configure(options);
    } catch (...) {
      libpq().PQfinish(conn_);
      throw;
    }
  }
  ~PgConn() { libpq().PQfinish(conn_); }
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  void configure(const StoreOptions& options) {
    // Durability::normal: a commit returns before its WAL record is flushed (a server crash
    // may lose the last moments of commits, never the log's consistency); full: flushed.
    // lock_timeout 0 would mean "wait forever"; busy_timeout 0 means "do not wait".
    const std::string lock_timeout =
        std::to_string(std::max<std::int64_t>(1, options.busy_timeout.count()));
    // Once an append holds the log's ordering lock (statements.hpp, kCommitLockWait).
    const std::string commit_lock_timeout = std::to_string(
        std::max<std::int64_t>(pg::kMinCommitLockWaitMs, options.busy_timeout.count()));
    // The store's format is read in the same round trip (the last statement's answer).
    PgResult r(libpq().PQexec(
        conn_, ("SET synchronous_commit = " +
                std::string(options.durability == Durability::full ? "on" : "off") +
                "; SET lock_timeout = " + lock_timeout +
                "; SET factum.commit_lock_timeout = " + commit_lock_timeout +
                "; SET client_min_messages = warning; " + pg::kPlannerSettings +
                (options.read_only ? "; SET default_transaction_read_only = on; " : "; ") +
                kKeepsPreviousHashSql)
                   .c_str()));
    if (libpq().PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
      fail(r.get(), "configuring the connection");
    }
    stored_previous_ = r.rows() == 1 && r.text(0, 0) == "1";
  }

  // Whether the store's events keep their previous hash (a column of stores made since
  // 2026-12-07; pg::RowReads): read when the connection is made, and again by detect_format()
  // (after the store was made). A connection of an older store writes and reads without it.
  bool stored_previous() const noexcept { return stored_previous_; }
  void detect_format() {
    PgResult r = run(kKeepsPreviousHashSql, 0, nullptr, nullptr, nullptr, nullptr,
                     "reading the store's format", 0);
    stored_previous_ = r.rows() == 1 && r.text(0, 0) == "1";
  }

  PGconn* get() const noexcept { return conn_; }
  bool ok() const noexcept { return libpq().PQstatus(conn_) == CONNECTION_OK; }

  // Whether an idle connection is still usable: false when it is broken, or when the server
  // ended it meanwhile (a restart, pg_terminate_backend, idle_session_timeout): the server's
  // last words and the end of the stream then wait on the socket, and reading them (without
  // blocking) marks the connection broken. One poll() when nothing waits. Must not be called
  // while a statement is in flight.
  bool alive() noexcept {
    for (int reads = 0; ok() && reads < 8; ++reads) {
      pollfd p{libpq().PQsocket(conn_), POLLIN, 0};
      if (p.fd < 0) return false;
      int ready = 0;
      while ((ready = ::poll(&p, 1, 0)) < 0 && errno == EINTR) {
      }
      if (ready <= 0) return ready == 0;
      if (libpq().PQconsumeInput(conn_) == 0) return false;
    }
    return ok();
  }
  bool in_transaction() const noexcept {
    return libpq().PQtransactionStatus(conn_) != PQTRANS_IDLE;
  }
  // The store's place for messages (without its password).
  const std::string& shown() const noexcept { return target_->shown; }

  [[noreturn]] void fail(const PGresult* r, std::string_view doing) const {
    const char* state = r != nullptr ? libpq().PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string why =
        one_line(r != nullptr ? libpq().PQresultErrorMessage(r) : libpq().PQerrorMessage(conn_));
    throw StorageError(kind_of(state, conn_),
                       "factum: " + std::string(doing) + " in '" + shown() + "': " + why +
                           (state != nullptr ? " (SQLSTATE " + std::string(state) + ")" : ""));
  }

  // Runs `sql` (one or more statements, no parameters).
  void exec(const std::string& sql, std::string_view doing) {
    PgResult r(libpq().PQexec(conn_, sql.c_str()));
    const auto status = libpq().PQresultStatus(r.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(r.get(), doing);
  }

  // Runs a parameterised statement; results in binary (result_format 1) or text (0).
  PgResult run(const char* sql, int n, const unsigned* types, const char* const* values,
               const int* lengths, const int* formats, std::string_view doing,
               int result_format = kFormat) {
    PgResult r(libpq().PQexecParams(conn_, sql, n, types, values, lengths, formats, result_format));
    const auto status = libpq().PQresultStatus(r.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(r.get(), doing);
    return r;
  }

  void rollback() noexcept {
    if (ok() && in_transaction()) libpq().PQclear(libpq().PQexec(conn_, "ROLLBACK"));
  }

  // The ids of the streams whose keys this connection has read (a stream's key names one
  // stream for good: keys come from a sequence and a stream row is never renamed). Bounded:
  // cleared when it holds kMaxStreamNames, only between pages (views point into it).
  std::unordered_map<std::int64_t, std::string>& stream_names() {
    if (stream_names_.size() >= kMaxStreamNames) stream_names_.clear();
    return stream_names_;
  }

  // The name of the statement prepared (or to be prepared) on this connection for `sql`; empty
  // when the connection holds its limit of prepared statements. `fresh` tells that the caller
  // must prepare it now.
  std::string statement_name(const std::string& sql, bool& fresh) {
    fresh = false;
    if (const auto it = prepared_.find(sql); it != prepared_.end()) return it->second;
    if (prepared_.size() >= kMaxPrepared) return {};
    fresh = true;
    // Names are never reused: a forgotten statement may still exist on the server.
    return prepared_.emplace(sql, "factum_" + std::to_string(next_name_++)).first->second;
  }
  // Forgets statements whose preparation did not complete.
  void forget_statement(const std::string& sql) noexcept { prepared_.erase(sql); }

 private:
  static PGconn* connect(const PgTarget& t) {
    std::vector<const char*> keywords;
    std::vector<const char*> values;
    for (std::size_t i = 0; i < t.keywords.size(); ++i) {
      keywords.push_back(t.keywords[i].c_str());
      values.push_back(t.values[i].c_str());
    }
    keywords.push_back(nullptr);
    values.push_back(nullptr);
    return libpq().PQconnectdbParams(keywords.data(), values.data(), t.expand_dbname ? 1 : 0);
  }

  static constexpr std::size_t kMaxPrepared = 256;
  static constexpr std::size_t kMaxStreamNames = 1 << 16;
  std::unordered_map<std::int64_t, std::string> stream_names_;
  std::shared_ptr<const PgTarget> target_;
  PGconn* conn_ = nullptr;
  std::map<std::string, std::string> prepared_;  // SQL text -> statement name
  std::uint64_t next_name_ = 0;
  bool stored_previous_ = false;
};

}  // namespace factum::detail::pg
