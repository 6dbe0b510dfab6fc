#include "factum/snapshots/snapshot_store.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace factum {
namespace {

constexpr const char* kCreate =
    "CREATE TABLE IF NOT EXISTS factum_snapshots ("
    " stream_id TEXT NOT NULL, version INTEGER NOT NULL, schema_version INTEGER NOT NULL,"
    " state BLOB NOT NULL, digest BLOB NOT NULL, taken_at INTEGER NOT NULL,"
    " PRIMARY KEY (stream_id, version)) WITHOUT ROWID";

std::int64_t as_int(std::uint64_t v) {
  return static_cast<std::int64_t>(
      std::min<std::uint64_t>(v, std::numeric_limits<std::int64_t>::max()));
}

Bytes bytes_of(const Hash& h) {
  Bytes out(h.size());
  std::memcpy(out.data(), h.data(), h.size());
  return out;
}

}  // namespace

// Nothing is written here: the table is made by the first save, in its transaction, so that
// making a SnapshotStore (loading an aggregate, say) never changes the store's file.
SnapshotStore::SnapshotStore(EventStore& store) : store_(store) {}

bool SnapshotStore::table_there(Sql& sql) const {
  if (table_known_.load(std::memory_order_acquire)) return true;
  if (sql.object_type("factum_snapshots") != "table") return false;
  table_known_.store(true, std::memory_order_release);
  return true;
}

void SnapshotStore::save(Snapshot s) {
  s.digest = sha256(s.state);
  if (s.taken_at == Timestamp{}) {
    s.taken_at =
        std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
  }
  const std::vector<SqlValue> params{
      s.stream_id, as_int(s.version),  std::int64_t{s.schema_version},
      s.state,     bytes_of(s.digest), std::int64_t{s.taken_at.time_since_epoch().count()}};
  store_.write_sql([&](Sql& sql) {
    if (!table_there(sql)) sql.execute(table_ddl(sql, kCreate));
    sql.execute(
        "INSERT INTO factum_snapshots "
        "(stream_id, version, schema_version, state, digest, taken_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (stream_id, version) DO UPDATE SET "
        "schema_version = excluded.schema_version, state = excluded.state, "
        "digest = excluded.digest, taken_at = excluded.taken_at",
        params);
  });
}

std::vector<Snapshot> SnapshotStore::newest(std::string_view stream, StreamVersion max_version,
                                            std::size_t limit) const {
  std::vector<Snapshot> out;
  if (limit == 0) return out;
  const std::vector<SqlValue> params{std::string(stream), as_int(max_version), as_int(limit)};
  store_.read_sql([&](Sql& sql) {
    if (!table_there(sql)) return;
    sql.query(
        "SELECT version, schema_version, state, digest, taken_at FROM factum_snapshots "
        "WHERE stream_id = ?1 AND version <= ?2 ORDER BY version DESC LIMIT ?3",
        params, [&](const SqlRow& row) {
          Snapshot s;
          s.stream_id = std::string(stream);
          s.version = static_cast<StreamVersion>(row.integer(0));
          s.schema_version = static_cast<std::uint32_t>(row.integer(1));
          s.state = row.blob(2);
          const Bytes digest = row.blob(3);
          // A digest of the wrong size stays all zero: it cannot match, so the snapshot is
          // ignored by its reader.
          if (digest.size() == s.digest.size())
            std::memcpy(s.digest.data(), digest.data(), s.digest.size());
          s.taken_at = Timestamp(std::chrono::microseconds(row.integer(4)));
          out.push_back(std::move(s));
        });
  });
  return out;
}

// Runs `sql_text` with `params` in a write transaction when the table is there; the rows deleted.
std::size_t SnapshotStore::delete_where(const char* sql_text, std::vector<SqlValue> params) {
  // Without the table there is nothing to delete, and no write (a read-only store allows none).
  bool there = table_known_.load(std::memory_order_acquire);
  if (!there) store_.read_sql([&](Sql& sql) { there = table_there(sql); });
  if (!there) return 0;
  std::int64_t deleted = 0;
  store_.write_sql([&](Sql& sql) {
    if (table_there(sql)) deleted = sql.execute(sql_text, params);
  });
  return static_cast<std::size_t>(deleted);
}

std::size_t SnapshotStore::prune(std::string_view stream, std::size_t keep_last) {
  if (keep_last == 0) return delete_stream(stream);
  return delete_where(
      "DELETE FROM factum_snapshots WHERE stream_id = ?1 AND version < ("
      " SELECT version FROM factum_snapshots WHERE stream_id = ?1"
      " ORDER BY version DESC LIMIT 1 OFFSET ?2)",
      {std::string(stream), as_int(keep_last - 1)});
}

std::size_t SnapshotStore::delete_stream(std::string_view stream) {
  return delete_where("DELETE FROM factum_snapshots WHERE stream_id = ?1", {std::string(stream)});
}

std::size_t SnapshotStore::delete_all() { return delete_where("DELETE FROM factum_snapshots", {}); }

std::size_t SnapshotStore::count(std::string_view stream) const {
  std::int64_t n = 0;
  store_.read_sql([&](Sql& sql) {
    if (!table_there(sql)) return;
    n = sql.query_integer("SELECT count(*) FROM factum_snapshots WHERE stream_id = ?1",
                          {std::string(stream)})
            .value_or(0);
  });
  return static_cast<std::size_t>(n);
}

}  // namespace factum
