#include "support/raw_sql.hpp"

#include <sqlite3.h>

#include <memory>
#include <stdexcept>

namespace factum::test {
namespace {

using Db = std::unique_ptr<sqlite3, decltype(&sqlite3_close)>;

Db open_raw(const std::filesystem::path& file) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw std::runtime_error("raw open: " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  return Db(db, &sqlite3_close);
}

}  // namespace

void raw_exec(const std::filesystem::path& file, const std::string& sql) {
  Db db = open_raw(file);
  char* err = nullptr;
  if (sqlite3_exec(db.get(), sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error("raw exec: " + msg);
  }
}

std::int64_t raw_int(const std::filesystem::path& file, const std::string& sql) {
  Db db = open_raw(file);
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    throw std::runtime_error(std::string("raw prepare: ") + sqlite3_errmsg(db.get()));
  }
  std::int64_t v = 0;
  if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

RawConnection::RawConnection(const std::filesystem::path& file) : db_(open_raw(file).release()) {}

RawConnection::~RawConnection() { sqlite3_close(static_cast<sqlite3*>(db_)); }

void RawConnection::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(static_cast<sqlite3*>(db_), sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error("raw exec: " + msg);
  }
}

}  // namespace factum::test
