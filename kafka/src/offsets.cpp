#include "offsets.hpp"

#include <chrono>

namespace factum::kafka::detail {
namespace {

constexpr const char* kTable = "factum_kafka_offsets";
constexpr const char* kCreate =
    "CREATE TABLE IF NOT EXISTS factum_kafka_offsets ("
    "name TEXT NOT NULL, topic TEXT NOT NULL, kafka_partition INTEGER NOT NULL, "
    "next_offset INTEGER NOT NULL CHECK (next_offset >= 0), updated_at INTEGER NOT NULL, "
    "PRIMARY KEY (name, topic, kafka_partition)) WITHOUT ROWID";

std::int64_t now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

void create_offsets_table(Sql& sql) { sql.execute(table_ddl(sql, kCreate)); }

void save_offset(Sql& sql, const std::string& name, const std::string& topic,
                 std::int32_t partition, std::int64_t next_offset) {
  sql.execute(
      "INSERT INTO factum_kafka_offsets (name, topic, kafka_partition, next_offset, updated_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name, topic, kafka_partition) DO UPDATE SET "
      "next_offset = excluded.next_offset, updated_at = excluded.updated_at "
      "WHERE excluded.next_offset > factum_kafka_offsets.next_offset",
      {name, topic, std::int64_t{partition}, next_offset, now_us()});
}

std::map<std::int32_t, std::int64_t> load_offsets(Sql& sql, const std::string& name,
                                                  const std::string& topic) {
  std::map<std::int32_t, std::int64_t> out;
  if (sql.object_type(kTable) != "table") return out;
  sql.query(
      "SELECT kafka_partition, next_offset FROM factum_kafka_offsets "
      "WHERE name = ?1 AND topic = ?2",
      {name, topic},
      [&](const SqlRow& row) { out[static_cast<std::int32_t>(row.integer(0))] = row.integer(1); });
  return out;
}

}  // namespace factum::kafka::detail
