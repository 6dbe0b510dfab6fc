// The consumed offsets of Ingest: table factum_kafka_offsets in the store's own database.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "factum/eventstore/sql.hpp"

namespace factum::kafka::detail {

// Creates factum_kafka_offsets when missing.
void create_offsets_table(Sql& sql);
// Stores `next_offset` (the offset of the next record to read) of one partition, unless the
// stored one is higher: a stored offset only moves forward (every record before it is in the
// store, so the higher of two such offsets is right too). An ingest that lost a partition in a
// rebalance, and appends its last records late, cannot move the new owner back with it.
void save_offset(Sql& sql, const std::string& name, const std::string& topic,
                 std::int32_t partition, std::int64_t next_offset);
// The stored next offsets of `name` on `topic`, by partition (empty when the table is missing).
std::map<std::int32_t, std::int64_t> load_offsets(Sql& sql, const std::string& name,
                                                  const std::string& topic);

}  // namespace factum::kafka::detail
