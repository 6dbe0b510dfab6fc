// An event's link of the hash chain, computed from docs/storage-format.md ("The hash chain")
// alone, with OpenSSL's SHA-256 and none of factum's code: for tests that write rows behind the
// library's back (raw_sql.hpp) that must still verify, e.g. a time the API would refuse.
#pragma once

#include <factum/factum.hpp>
#include <filesystem>

namespace factum::test {

// SHA-256(e.previous_hash ‖ the fields of `e`), as docs/storage-format.md lays them out.
Hash chain_hash(const RecordedEvent& e);

// Sets the recorded_at of the event at `position` of the store file to `us` with raw SQL (the
// immutability triggers dropped), and rewrites the hashes from that position on so that the
// chain still verifies.
void set_recorded_at(const std::filesystem::path& file, Position position, std::int64_t us);

}  // namespace factum::test
