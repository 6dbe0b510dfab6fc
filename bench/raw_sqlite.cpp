#include "raw_sqlite.hpp"

#include <stdexcept>

namespace bench {
namespace {

[[noreturn]] void fail(sqlite3* db, const std::string& sql) {
  throw std::runtime_error("raw sqlite: " + sql + ": " + sqlite3_errmsg(db));
}

}  // namespace

RawDb::RawDb(const std::filesystem::path& path, factum::Durability durability) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    const std::string message = "raw sqlite: cannot open " + path.string() + ": " +
                                (db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory");
    sqlite3_close_v2(db_);
    throw std::runtime_error(message);
  }
  exec("PRAGMA journal_mode=WAL");
  exec(durability == factum::Durability::full ? "PRAGMA synchronous=FULL"
                                              : "PRAGMA synchronous=NORMAL");
}

RawDb::~RawDb() { sqlite3_close_v2(db_); }

void RawDb::exec(const char* sql) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(db_, sql);
}

RawStmt::RawStmt(RawDb& db, const char* sql) : db_(db.get()), sql_(sql) {
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
    fail(db_, sql_);
  }
}

RawStmt::~RawStmt() { sqlite3_finalize(stmt_); }

bool RawStmt::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);
  fail(db_, sql_);
}

void RawStmt::run() {
  while (step()) {
  }
  reset();
}

}  // namespace bench
