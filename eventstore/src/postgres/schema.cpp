#include "postgres/schema.hpp"

#include <cstdint>

namespace factum::detail::pg {
namespace {

constexpr int kStoreFormat = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE factum_store (
  id       integer PRIMARY KEY CHECK (id = 1),
  format   integer NOT NULL,
  position bigint NOT NULL,
  hash     bytea NOT NULL,
  commits  bigint NOT NULL
);
INSERT INTO factum_store VALUES (1, 1, 0, decode(repeat('00', 32), 'hex'), 0);
CREATE TABLE streams (
  stream_key bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  stream_id  text NOT NULL UNIQUE,
  category   text NOT NULL
);
CREATE INDEX streams_by_category ON streams (category);
CREATE TABLE events (
  position       bigint PRIMARY KEY,
  stream_key     bigint NOT NULL,
  stream_version bigint NOT NULL,
  event_id       bytea NOT NULL,
  type           text NOT NULL,
  schema_version bigint NOT NULL,
  payload        bytea NOT NULL,
  correlation_id bytea,
  causation_id   bytea,
  compensates    bytea,
  actor          text,
  extra          bytea,
  recorded_at    bigint NOT NULL,
  hash           bytea NOT NULL,
  -- the hash of the event before: read with the row, not looked up (NULL: looked up; rows an
  -- older factum wrote). Checked by verify.
  previous_hash  bytea
);
CREATE UNIQUE INDEX events_by_stream ON events (stream_key, stream_version);
CREATE UNIQUE INDEX events_by_id ON events (event_id);
CREATE INDEX events_by_compensates ON events (compensates) WHERE compensates IS NOT NULL;
CREATE FUNCTION factum_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'factum: % on % refused: events and streams are immutable and permanent',
    TG_OP, TG_TABLE_NAME;
END $$;
CREATE TRIGGER events_are_immutable BEFORE UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION factum_refuse();
CREATE TRIGGER events_are_permanent BEFORE TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION factum_refuse();
CREATE TRIGGER streams_are_immutable BEFORE UPDATE OR DELETE ON streams
  FOR EACH ROW EXECUTE FUNCTION factum_refuse();
CREATE TRIGGER streams_are_permanent BEFORE TRUNCATE ON streams
  FOR EACH STATEMENT EXECUTE FUNCTION factum_refuse();
)sql";

}  // namespace

std::string prepare_schema(PgConn& c, const StoreOptions& options) {
  PgResult r = c.run("SELECT current_schema()", 0, nullptr, nullptr, nullptr, nullptr,
                     "reading the schema", 0);
  if (r.rows() != 1 || r.null(0, 0)) {
    throw StorageError(StorageError::Kind::not_a_store,
                       "factum: '" + c.shown() +
                           "' names no existing schema to keep the log in (create the schema "
                           "of its search_path first)");
  }
  const std::string schema(r.text(0, 0));
  const auto has_store = [&] {
    // The catalog itself, not to_regclass: a session caches a name it looked up and did not
    // find, so after waiting for another creator's lock to_regclass would still miss its table.
    PgResult t = c.run(
        "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relname = 'factum_store' AND n.nspname = current_schema())",
        0, nullptr, nullptr, nullptr, nullptr, "looking for the store", 0);
    return t.text(0, 0) == "t";
  };
  if (!has_store()) {
    if (options.read_only || !options.create_if_missing) {
      throw StorageError(
          StorageError::Kind::not_a_store,
          "factum: schema '" + schema + "' of '" + c.shown() + "' holds no factum store");
    }
    // One creator at a time: the others wait for the lock, then find the tables.
    c.exec("BEGIN; SELECT pg_advisory_xact_lock(hashtext('factum:' || current_schema()))",
           "creating the store");
    try {
      if (!has_store()) c.exec(kSchema, "creating the store");
      c.exec("COMMIT", "creating the store");
    } catch (...) {
      c.rollback();
      throw;
    }
  }
  // The connection may have been made before the store (by this process or another): read the
  // format again unless it found the column.
  if (!c.stored_previous()) c.detect_format();
  PgResult f = c.run("SELECT format FROM factum_store WHERE id = 1", 0, nullptr, nullptr, nullptr,
                     nullptr, "reading the store's format");
  std::int64_t format = 0;
  if (f.rows() != 1 || !f.int64(0, 0, format)) {
    throw StorageError(StorageError::Kind::corrupt,
                       "factum: the store in schema '" + schema + "' of '" + c.shown() +
                           "' is damaged: its factum_store row is missing");
  }
  if (format > kStoreFormat) {
    throw StorageError(StorageError::Kind::newer_format,
                       "factum: the store in schema '" + schema + "' has format " +
                           std::to_string(format) + "; this factum reads up to format " +
                           std::to_string(kStoreFormat) + ": upgrade factum");
  }
  return schema;
}

std::string channel_of(const std::string& schema) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char ch : schema) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ULL;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "factum_log_";
  for (int i = 15; i >= 0; --i) out.push_back(kHex[(h >> (4 * i)) & 0xf]);
  return out;
}

}  // namespace factum::detail::pg
