#include "sqlite/connection.hpp"

#include <cctype>
#include <string>

namespace factum::detail {
namespace {

StorageError::Kind kind_of(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_PROTOCOL:  // a WAL lock still contended after SQLite's own retries
      return StorageError::Kind::busy;
    case SQLITE_READONLY:
      return StorageError::Kind::read_only;
    case SQLITE_FULL:
      return StorageError::Kind::full;
    case SQLITE_NOTADB:
      return StorageError::Kind::not_a_store;
    case SQLITE_CORRUPT:
      return StorageError::Kind::corrupt;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return StorageError::Kind::io;
    default:
      return StorageError::Kind::other;
  }
}

const char* explain(StorageError::Kind kind) {
  switch (kind) {
    case StorageError::Kind::busy:
      return "the store is locked by another connection or process";
    case StorageError::Kind::read_only:
      return "the store is read-only";
    case StorageError::Kind::full:
      return "the disk or the store's size limit is full";
    case StorageError::Kind::not_a_store:
      return "the file is not a factum store";
    case StorageError::Kind::corrupt:
      return "the file is damaged";
    case StorageError::Kind::io:
      return "an I/O error occurred";
    default:
      return "a storage error occurred";
  }
}

}  // namespace

void throw_sqlite(sqlite3* db, int rc, std::string_view doing, const std::string& file) {
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw_sqlite(rc, detail != nullptr ? detail : "", doing, file);
}

void throw_sqlite(int rc, std::string_view detail, std::string_view doing,
                  const std::string& file) {
  const StorageError::Kind kind = kind_of(rc);
  std::string message = "factum: ";
  message.append(doing).append(" failed for '").append(file).append("': ");
  message.append(explain(kind));
  message.append(" (").append(detail).append(")");
  throw StorageError(kind, message);
}

namespace {

// `path` as a URI filename with immutable=1 (https://sqlite.org/uri.html): the absolute path,
// every byte but the unreserved ones and '/' percent-encoded.
std::string immutable_uri(const std::filesystem::path& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (const char c : std::filesystem::absolute(path).string()) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      uri += c;
    } else {
      uri += '%';
      uri += kHex[u >> 4];
      uri += kHex[u & 0xf];
    }
  }
  return uri + "?immutable=1";
}

}  // namespace

Database::Database(const std::filesystem::path& path, int flags, int busy_timeout_ms,
                   bool immutable)
    : file_(path.string()) {
  const std::string name = immutable ? immutable_uri(path) : file_;
  if (immutable)
    flags = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY |
            SQLITE_OPEN_URI;
  const int rc = sqlite3_open_v2(name.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string detail = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw StorageError(kind_of(rc), "factum: cannot open '" + file_ + "': " + detail);
  }
  sqlite3_extended_result_codes(db_, 1);
  if (busy_timeout_ms > 0) sqlite3_busy_timeout(db_, busy_timeout_ms);
}

Database::~Database() { sqlite3_close_v2(db_); }

void Database::exec(const char* sql, std::string_view doing) {
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) throw_sqlite(db_, rc, doing, file_);
}

std::int64_t Database::query_int(const char* sql, std::string_view doing) {
  Statement s(*this, sql);
  return s.step(doing) ? s.column_int(0) : 0;
}

Statement::Statement(Database& db, const char* sql) : db_(db) {
  const int rc = sqlite3_prepare_v3(db.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) throw_sqlite(db.get(), rc, "preparing a statement", db.file());
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::check_bind(int rc, int index) const {
  if (rc == SQLITE_OK) return;
  const char* sql = sqlite3_sql(stmt_);
  const std::string what = "parameter ?" + std::to_string(index) + " of '" +
                           std::string(sql != nullptr ? sql : "") + "'";
  if (rc == SQLITE_RANGE) {
    throw InvalidArgument("factum: " + what + " does not exist (the statement has " +
                          std::to_string(parameter_count()) + " parameter(s))");
  }
  if (rc == SQLITE_TOOBIG) throw InvalidArgument("factum: the value for " + what + " is too large");
  throw_sqlite(db_.get(), rc, "binding " + what, db_.file());
}

void Statement::bind(int index, std::int64_t value) {
  check_bind(sqlite3_bind_int64(stmt_, index, value), index);
}

void Statement::bind(int index, std::string_view text) {
  // A non-null pointer even for "" so SQLite stores an empty text, not NULL.
  static const char kEmpty = 0;
  check_bind(sqlite3_bind_text64(stmt_, index, text.empty() ? &kEmpty : text.data(), text.size(),
                                 SQLITE_STATIC, SQLITE_UTF8),
             index);
}

void Statement::bind_blob(int index, std::span<const std::byte> bytes) {
  bind_blob(index, bytes.data(), bytes.size());
}

void Statement::bind_blob(int index, const void* data, std::size_t size) {
  static const char kEmpty = 0;
  check_bind(sqlite3_bind_blob64(stmt_, index, size == 0 ? &kEmpty : data, size, SQLITE_STATIC),
             index);
}

void Statement::bind_null(int index) { check_bind(sqlite3_bind_null(stmt_, index), index); }

void Statement::bind_real(int index, double value) {
  check_bind(sqlite3_bind_double(stmt_, index, value), index);
}

bool Statement::step(std::string_view doing) {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw_sqlite(db_.get(), rc, doing, db_.file());
}

void Statement::reset() noexcept {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string_view Statement::column_text(int col) const noexcept { return column(col).text(); }

std::span<const std::byte> Statement::column_blob(int col) const noexcept {
  return column(col).blob();
}

std::string_view Statement::ColumnValue::text() const noexcept {
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(v_));
  const int size = sqlite3_value_bytes(v_);
  return text == nullptr ? std::string_view() : std::string_view(text, static_cast<size_t>(size));
}

std::span<const std::byte> Statement::ColumnValue::blob() const noexcept {
  const auto* data = static_cast<const std::byte*>(sqlite3_value_blob(v_));
  const int size = sqlite3_value_bytes(v_);
  if (data == nullptr) return {};
  return {data, static_cast<size_t>(size)};
}

Transaction::Transaction(Database& db, Mode mode) : db_(db) {
  db_.exec(mode == Mode::immediate ? "BEGIN IMMEDIATE" : "BEGIN", "starting a transaction");
}

Transaction::~Transaction() {
  if (open_ && db_.in_transaction()) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT", "committing");
  open_ = false;
}

}  // namespace factum::detail
