// The SQLite backend's connection: RAII over SQLite handles (the library's one header that
// includes <sqlite3.h>).
// Database owns a connection, Statement a prepared statement, Transaction a write or read
// transaction that rolls back unless committed. Every failure becomes a StorageError naming
// the file and what was being done.
//
// Thread-safety: a Database and its statements are used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "factum/eventstore/errors.hpp"

namespace factum::detail {

// Throws the StorageError for SQLite result `rc` on `db`, saying what factum was doing.
[[noreturn]] void throw_sqlite(sqlite3* db, int rc, std::string_view doing,
                               const std::string& file);
// The same with SQLite's message `detail` kept from when the error happened (a later statement
// on the connection replaces sqlite3_errmsg).
[[noreturn]] void throw_sqlite(int rc, std::string_view detail, std::string_view doing,
                               const std::string& file);

class Database {
 public:
  // Opens the file; `busy_timeout_ms` (when > 0) is set before anything reads the file. With
  // `immutable`, SQLite reads the file as one that nothing changes (no locks, no -shm, no -wal:
  // for a read-only copy in a directory no one can write, see SqliteStorage).
  Database(const std::filesystem::path& path, int flags, int busy_timeout_ms = 0,
           bool immutable = false);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  sqlite3* get() const noexcept { return db_; }
  const std::string& file() const noexcept { return file_; }
  // Runs SQL that returns no rows. Throws StorageError.
  void exec(const char* sql, std::string_view doing);
  // Runs a query that returns one integer (a PRAGMA, a count). Throws StorageError.
  std::int64_t query_int(const char* sql, std::string_view doing);
  // True while a transaction is open.
  bool in_transaction() const noexcept { return sqlite3_get_autocommit(db_) == 0; }

 private:
  sqlite3* db_ = nullptr;
  std::string file_;
};

class Statement {
 public:
  Statement(Database& db, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binders throw InvalidArgument for an index the statement has no parameter for or a value
  // too large for SQLite, StorageError for anything else SQLite refuses.
  void bind(int index, std::int64_t value);
  void bind(int index, std::string_view text);
  void bind_blob(int index, std::span<const std::byte> bytes);
  void bind_blob(int index, const void* data, std::size_t size);
  void bind_null(int index);
  void bind_real(int index, double value);

  // Steps once: true when a row is ready, false when done. Throws StorageError.
  bool step(std::string_view doing);
  // Steps once and returns SQLite's result code without throwing.
  int step_rc() noexcept { return sqlite3_step(stmt_); }
  // Resets the statement and clears its bindings (ends its read, if any).
  void reset() noexcept;

  int column_type(int col) const noexcept { return sqlite3_column_type(stmt_, col); }
  std::int64_t column_int(int col) const noexcept { return sqlite3_column_int64(stmt_, col); }
  double column_real(int col) const noexcept { return sqlite3_column_double(stmt_, col); }
  int column_count() const noexcept { return sqlite3_column_count(stmt_); }
  int parameter_count() const noexcept { return sqlite3_bind_parameter_count(stmt_); }
  std::string_view column_text(int col) const noexcept;
  std::span<const std::byte> column_blob(int col) const noexcept;

  // One column of the current row, for reading its type and value once: each sqlite3_column_*
  // call goes through SQLite's API checks, a ColumnValue's calls do not. Valid until the
  // statement steps or resets; used only by the thread that steps it (its connection has no
  // mutex: SQLite's "unprotected" value).
  class ColumnValue {
   public:
    int type() const noexcept { return sqlite3_value_type(v_); }
    std::int64_t as_int() const noexcept { return sqlite3_value_int64(v_); }
    std::string_view text() const noexcept;
    std::span<const std::byte> blob() const noexcept;

   private:
    friend class Statement;
    explicit ColumnValue(sqlite3_value* v) noexcept : v_(v) {}
    sqlite3_value* v_;
  };
  ColumnValue column(int col) const noexcept {
    return ColumnValue(sqlite3_column_value(stmt_, col));
  }

  Database& db() const noexcept { return db_; }

 private:
  void check_bind(int rc, int index) const;
  Database& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Resets a statement when leaving a scope, so no read stays open by accident.
class StatementScope {
 public:
  explicit StatementScope(Statement& s) noexcept : s_(s) {}
  ~StatementScope() { s_.reset(); }
  StatementScope(const StatementScope&) = delete;
  StatementScope& operator=(const StatementScope&) = delete;

 private:
  Statement& s_;
};

// A transaction that rolls back unless commit() is called.
class Transaction {
 public:
  enum class Mode { deferred, immediate };
  Transaction(Database& db, Mode mode);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool open_ = true;
};

}  // namespace factum::detail
