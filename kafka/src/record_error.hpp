// The error of an ingested record that cannot be appended, naming where the record lies in
// Kafka, so that an operator knows which offset to move past it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace factum::kafka::detail {

// Where a record lies, and the ingest that read it.
struct RecordPlace {
  std::string_view ingest;  // IngestOptions::name
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string_view key;
};

// Rethrows the factum::Error in flight (what an append threw) as an exception of the same type
// (InvalidArgument, DuplicateEventError, StorageError, ...), its message naming the record's
// topic, partition, offset and key, and the offset that skips it. Call it only inside a catch
// block of factum::Error.
[[noreturn]] void rethrow_naming(const RecordPlace& place);

}  // namespace factum::kafka::detail
