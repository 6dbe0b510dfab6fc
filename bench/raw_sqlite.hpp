// bench/raw_sqlite.hpp — minimal RAII over sqlite3 for the benchmark's raw ceiling.
//
// The ceiling is what plain SQLite does with the same rows: prepared statements, bound
// parameters, no factum code. Failures throw std::runtime_error naming the SQL.
//
// Thread-safety: a RawDb and its statements are used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "factum/eventstore/store_options.hpp"

namespace bench {

class RawDb {
 public:
  // Opens (creating) `path` in WAL mode with the synchronous setting of `durability`.
  RawDb(const std::filesystem::path& path, factum::Durability durability);
  ~RawDb();
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  sqlite3* get() const noexcept { return db_; }
  void exec(const char* sql);

 private:
  sqlite3* db_ = nullptr;
};

class RawStmt {
 public:
  RawStmt(RawDb& db, const char* sql);
  ~RawStmt();
  RawStmt(const RawStmt&) = delete;
  RawStmt& operator=(const RawStmt&) = delete;

  sqlite3_stmt* get() const noexcept { return stmt_; }
  // Steps once: true for a row, false when done. Throws on errors.
  bool step();
  // Steps to the end (a statement returning no rows) and resets.
  void run();
  void reset() noexcept { sqlite3_reset(stmt_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

}  // namespace bench
