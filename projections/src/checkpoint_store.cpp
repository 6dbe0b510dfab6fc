#include "factum/projections/checkpoint_store.hpp"

#include <chrono>

#include "factum/eventstore/errors.hpp"

namespace factum {
namespace {

constexpr const char* kCreate =
    "CREATE TABLE IF NOT EXISTS factum_checkpoints ("
    "name TEXT PRIMARY KEY NOT NULL, position INTEGER NOT NULL CHECK (position >= 0), "
    "updated_at INTEGER NOT NULL) WITHOUT ROWID";

std::string checked(std::string_view name) {
  if (name.empty()) throw InvalidArgument("factum: a checkpoint name must not be empty");
  return std::string(name);
}

std::int64_t now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

bool table_exists(Sql& sql) { return sql.object_type("factum_checkpoints") == "table"; }

}  // namespace

// Nothing is written here: the table is made by the first save (in its transaction), so that
// making a CheckpointStore never changes the store's file.
CheckpointStore::CheckpointStore(EventStore& store) : store_(&store) {}

void CheckpointStore::create_table(Sql& sql) { sql.execute(table_ddl(sql, kCreate)); }

Position CheckpointStore::load(Sql& sql, std::string_view name) {
  const std::string key = checked(name);
  if (!table_exists(sql)) return 0;
  const auto p =
      sql.query_integer("SELECT position FROM factum_checkpoints WHERE name = ?1", {key});
  return p ? static_cast<Position>(*p) : 0;
}

void CheckpointStore::save(Sql& sql, std::string_view name, Position position) {
  const std::string key = checked(name);
  create_table(sql);
  sql.execute(
      "INSERT INTO factum_checkpoints (name, position, updated_at) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (name) DO UPDATE SET position = excluded.position, "
      "updated_at = excluded.updated_at",
      {key, static_cast<std::int64_t>(position), now_us()});
}

bool CheckpointStore::remove(Sql& sql, std::string_view name) {
  const std::string key = checked(name);
  if (!table_exists(sql)) return false;
  return sql.execute("DELETE FROM factum_checkpoints WHERE name = ?1", {key}) > 0;
}

Position CheckpointStore::load(std::string_view name) const {
  Position out = 0;
  store_->read_sql([&](Sql& sql) { out = load(sql, name); });
  return out;
}

void CheckpointStore::save(std::string_view name, Position position) {
  store_->write_sql([&](Sql& sql) { save(sql, name, position); });
}

bool CheckpointStore::remove(std::string_view name) {
  bool out = false;
  store_->write_sql([&](Sql& sql) { out = remove(sql, name); });
  return out;
}

std::vector<Checkpoint> CheckpointStore::list() const {
  std::vector<Checkpoint> out;
  store_->read_sql([&](Sql& sql) {
    if (!table_exists(sql)) return;
    sql.query("SELECT name, position, updated_at FROM factum_checkpoints ORDER BY name", {},
              [&](const SqlRow& row) {
                out.push_back({row.text(0), static_cast<Position>(row.integer(1)),
                               Timestamp(std::chrono::microseconds(row.integer(2)))});
              });
  });
  return out;
}

}  // namespace factum
