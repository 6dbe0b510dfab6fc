// factum/eventstore/sql.hpp — a small SQL handle on the store's own file, for the modules
// that keep tables beside the log (snapshots, checkpoints, read models).
//
// EventStore::write_sql(fn) runs fn(Sql&) in one write transaction on the store's writer
// connection: it commits when fn returns and rolls back (nothing written) when fn throws.
// EventStore::read_sql(fn) runs fn(Sql&) in one read transaction on a read connection: a
// consistent view, and writes are refused. Statements are prepared once per connection and
// reused (keep the SQL text constant; bind values as parameters, never paste them in).
//
//   store.write_sql([&](factum::Sql& sql) {
//     sql.execute("INSERT INTO balances (account, cents) VALUES (?1, ?2)", {id, cents});
//   });
//
// Errors are StorageError naming the file and what failed, and InvalidArgument when the number
// of values differs from the statement's parameters (an extra value is never ignored, a missing
// one never read as NULL). A query may run other queries, the same SQL text included, from its
// on_row callback: each gets a statement of its own. The handle is valid only inside
// the callback; do not call the EventStore from inside a write_sql callback (its appends
// wait for the same writer and would deadlock).
//
// Thread-safety: one Sql object is used by the thread that runs the callback.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "factum/eventstore/event.hpp"

namespace factum {

// A value bound to a parameter or read from a column.
using SqlValue = std::variant<std::nullptr_t, std::int64_t, double, std::string, Bytes>;

// One result row. Column indexes start at 0.
class SqlRow {
 public:
  virtual ~SqlRow() = default;
  virtual int size() const = 0;
  virtual bool is_null(int column) const = 0;
  // Throws StorageError when the column is not of the asked kind.
  virtual std::int64_t integer(int column) const = 0;
  virtual double real(int column) const = 0;
  virtual std::string text(int column) const = 0;
  virtual Bytes blob(int column) const = 0;
};

// The SQL a Sql handle speaks: SQLite's for a store file, PostgreSQL's for a store on a server
// (docs/postgres.md). Statements both accept (plain SELECT/INSERT/UPDATE/DELETE, INSERT ... ON
// CONFLICT ... DO UPDATE/NOTHING, CREATE TABLE IF NOT EXISTS with TEXT and BIGINT columns) run
// unchanged on either; for the rest, branch on dialect().
enum class SqlDialect { sqlite, postgres };

class Sql {
 public:
  virtual ~Sql() = default;
  // The dialect of the database behind the handle.
  virtual SqlDialect dialect() const noexcept { return SqlDialect::sqlite; }
  // "table", "view" or "index" when an object of that kind is named `name` in the store's
  // database (its schema, on PostgreSQL; names compared ignoring ASCII case), else "". A table
  // is reported before an index, a view last. Throws StorageError.
  std::string object_type(std::string_view name);
  // Runs one statement with `params` bound to ?1, ?2, ...; returns the rows it changed.
  virtual std::int64_t execute(std::string_view sql, std::span<const SqlValue> params = {}) = 0;
  std::int64_t execute(std::string_view sql, std::initializer_list<SqlValue> params) {
    return execute(sql, std::span<const SqlValue>(params.begin(), params.size()));
  }
  // Runs a query and calls `on_row` for each row, in order.
  virtual void query(std::string_view sql, std::span<const SqlValue> params,
                     const std::function<void(const SqlRow&)>& on_row) = 0;
  void query(std::string_view sql, std::initializer_list<SqlValue> params,
             const std::function<void(const SqlRow&)>& on_row) {
    query(sql, std::span<const SqlValue>(params.begin(), params.size()), on_row);
  }
  // The first column of the first row, if any.
  std::optional<std::int64_t> query_integer(std::string_view sql,
                                            std::initializer_list<SqlValue> params = {}) {
    std::optional<std::int64_t> out;
    query(sql, params, [&](const SqlRow& row) {
      if (!out && !row.is_null(0)) out = row.integer(0);
    });
    return out;
  }
};

// A savepoint on a write transaction's Sql (SQLiteCpp's Savepoint, in RAII form): what runs
// between its making and release() stays part of the enclosing transaction; rollback(), or
// leaving the scope unreleased (an exception, say), undoes just that part and the transaction
// goes on. Scopes nest (strictly, as C++ scopes do).
//
//   {
//     factum::SqlSavepoint sp(sql);
//     sql.execute("INSERT ...");   // may throw: the scope's changes are undone, nothing else
//     sp.release();
//   }
//
// Thread-safety: as the Sql it is made on.
// `create_table`, a CREATE TABLE statement in SQLite's words, in the words of `sql`'s dialect:
// unchanged for SQLite; for PostgreSQL, INTEGER columns become BIGINT (SQLite's integers are
// 64-bit), BLOB becomes BYTEA and WITHOUT ROWID is dropped. Only whole words are replaced.
// Throws nothing but std::bad_alloc. Thread-safety: a function of its arguments.
std::string table_ddl(const Sql& sql, std::string_view create_table);
// The same in the words of `dialect`.
std::string table_ddl(SqlDialect dialect, std::string_view create_table);

class SqlSavepoint {
 public:
  // SAVEPOINT. Throws StorageError.
  explicit SqlSavepoint(Sql& sql);
  // Rolls back unless released or rolled back; errors are swallowed (the enclosing
  // transaction is failing then, and rolls back whole).
  ~SqlSavepoint();
  SqlSavepoint(const SqlSavepoint&) = delete;
  SqlSavepoint& operator=(const SqlSavepoint&) = delete;
  // Keeps the changes. Throws StorageError.
  void release();
  // Undoes the changes made since the savepoint. Throws StorageError.
  void rollback();

 private:
  Sql& sql_;
  bool open_ = true;
};

}  // namespace factum
