// bench/raw_sqlite.hpp — minimal RAII over sqlite3 for the benchmarks' raw ceilings.
//
// The ceiling is what plain SQLite does with the same rows: prepared statements, bound
// parameters, no factum code. Failures throw std::runtime_error naming the SQL.
//
// Thread-safety: a RawDb and its statements are used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "factum/eventstore/event.hpp"
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

// Copies the current row of `s` out into owned values, as factum hands events to its caller.
// The columns, in this order: position, stream id, stream version, event id, type, schema
// version, payload, correlation id, causation id, compensates, actor, extra (not copied),
// recorded at, hash. Inline: it runs once per row in the raw ceilings' timed loops.
inline void copy_row(sqlite3_stmt* s, factum::RecordedEvent& out) {
  auto text = [&](int col) {
    return std::string_view(reinterpret_cast<const char*>(sqlite3_column_text(s, col)),
                            static_cast<std::size_t>(sqlite3_column_bytes(s, col)));
  };
  auto blob = [&](int col) {
    const auto* data = static_cast<const std::byte*>(sqlite3_column_blob(s, col));
    return std::span<const std::byte>(data, static_cast<std::size_t>(sqlite3_column_bytes(s, col)));
  };
  auto optional_id = [&](int col, std::optional<factum::EventId>& id) {
    id.reset();
    if (sqlite3_column_type(s, col) != SQLITE_BLOB) return;
    factum::EventId::Bytes b{};
    const auto bytes = blob(col);
    if (bytes.size() == b.size()) std::memcpy(b.data(), bytes.data(), b.size());
    id = factum::EventId(b);
  };
  out.position = static_cast<factum::Position>(sqlite3_column_int64(s, 0));
  out.stream_id.assign(text(1));
  out.stream_version = static_cast<factum::StreamVersion>(sqlite3_column_int64(s, 2));
  factum::EventId::Bytes id{};
  const auto id_bytes = blob(3);
  if (id_bytes.size() == id.size()) std::memcpy(id.data(), id_bytes.data(), id.size());
  out.id = factum::EventId(id);
  out.type.assign(text(4));
  out.schema_version = static_cast<std::uint32_t>(sqlite3_column_int64(s, 5));
  const auto payload = blob(6);
  out.payload.assign(payload.begin(), payload.end());
  optional_id(7, out.metadata.correlation_id);
  optional_id(8, out.metadata.causation_id);
  optional_id(9, out.metadata.compensates);
  out.metadata.actor.assign(sqlite3_column_type(s, 10) == SQLITE_TEXT ? text(10) : "");
  out.recorded_at = factum::Timestamp(std::chrono::microseconds(sqlite3_column_int64(s, 12)));
  const auto hash = blob(13);
  if (hash.size() == out.hash.size()) std::memcpy(out.hash.data(), hash.data(), out.hash.size());
}

}  // namespace bench
