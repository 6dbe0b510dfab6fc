// tools/store_access.cpp — opening store files for the commands (see store_access.hpp).
#include "store_access.hpp"

#include <filesystem>
#include <limits>
#include <system_error>

#include "cli.hpp"

namespace factum::cli {
namespace {

namespace fs = std::filesystem;

void check_path(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) throw CliError("'" + path + "': no such file");
  if (fs::is_directory(status)) throw CliError("'" + path + "' is a directory, not a store file");
  if (!fs::is_regular_file(status)) {
    throw CliError("'" + path +
                   "' is not a regular file (a device, a pipe or a socket), so not a " +
                   "factum store");
  }
}

EventStore open_existing(const std::string& path, bool read_only) {
  if (!is_server_location(path)) check_path(path);
  StoreOptions options;
  options.read_only = read_only;
  options.create_if_missing = false;
  // A reader reads what the store holds: a stream id written under a raised limit (a store
  // opened with a larger max_stream_id_length) is read as any other.
  if (read_only) options.max_stream_id_length = std::numeric_limits<std::size_t>::max();
  return EventStore::open(path, options);
}

}  // namespace

EventStore open_read_only(const std::string& path) { return open_existing(path, true); }

EventStore open_writable(const std::string& path) { return open_existing(path, false); }

namespace {

[[noreturn]] void throw_not_intact(Position position) {
  throw CliError("the event at position " + std::to_string(position) +
                     " does not match its hash (run factum verify)",
                 kDamaged);
}

}  // namespace

void require_intact(const RecordedEvent& event) {
  if (!hash_matches(event)) throw_not_intact(event.position);
}

void require_intact(const EventView& event) {
  if (!hash_matches(event)) throw_not_intact(event.position);
}

std::optional<std::int64_t> query_int(const EventStore& store, const std::string& sql) {
  std::optional<std::int64_t> out;
  store.read_sql([&](Sql& s) { out = s.query_integer(sql); });
  return out;
}

std::uint64_t max_position(const EventStore& store) {
  return static_cast<std::uint64_t>(
      query_int(store, "SELECT max(position) FROM events").value_or(0));
}

std::string store_schema(const EventStore& store) {
  std::string schema;
  store.read_sql([&](Sql& s) {
    s.query("SELECT current_schema()", {}, [&](const SqlRow& r) { schema = r.text(0); });
  });
  return schema;
}

std::uint64_t schema_size(const EventStore& store) {
  return static_cast<std::uint64_t>(
      query_int(store,
                "SELECT CAST(coalesce(sum(pg_total_relation_size(c.oid)), 0) AS BIGINT) "
                "FROM pg_class c WHERE c.relnamespace = CAST(current_schema() AS regnamespace) "
                "AND c.relkind IN ('r', 'p', 'm')")
          .value_or(0));
}

std::uint64_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<std::uint64_t>(size);
}

}  // namespace factum::cli
