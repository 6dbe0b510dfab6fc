// Raw SQL on a store file behind the library's back, for tamper and fault tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace factum::test {

// Runs `sql` on the file with a plain sqlite3 connection. Throws std::runtime_error with
// SQLite's message on failure. The immutability triggers are still in force unless the SQL
// drops them (see kDropTriggers).
void raw_exec(const std::filesystem::path& file, const std::string& sql);
// Runs a query returning one integer.
std::int64_t raw_int(const std::filesystem::path& file, const std::string& sql);

// A raw connection kept open, e.g. to hold the write lock while the store tries to write.
class RawConnection {
 public:
  explicit RawConnection(const std::filesystem::path& file);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  void exec(const std::string& sql);

 private:
  void* db_;
};

inline constexpr const char* kDropTriggers =
    "DROP TRIGGER IF EXISTS events_are_immutable; DROP TRIGGER IF EXISTS events_are_permanent; "
    "DROP TRIGGER IF EXISTS streams_are_immutable; DROP TRIGGER IF EXISTS streams_are_permanent; "
    "DROP TRIGGER IF EXISTS events_are_appended; DROP TRIGGER IF EXISTS streams_are_added; "
    "DROP TRIGGER IF EXISTS stream_keys_are_positive;";

}  // namespace factum::test
