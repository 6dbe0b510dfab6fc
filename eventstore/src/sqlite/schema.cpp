#include "sqlite/schema.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace factum::detail {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE streams (
  stream_key INTEGER PRIMARY KEY,
  stream_id  TEXT NOT NULL UNIQUE,
  category   TEXT NOT NULL
);
CREATE INDEX streams_by_category ON streams (category);
CREATE TABLE events (
  position       INTEGER PRIMARY KEY AUTOINCREMENT,
  stream_key     INTEGER NOT NULL,
  stream_version INTEGER NOT NULL,
  event_id       BLOB NOT NULL,
  type           TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  payload        BLOB NOT NULL,
  correlation_id BLOB,
  causation_id   BLOB,
  compensates    BLOB,
  actor          TEXT,
  extra          BLOB,
  recorded_at    INTEGER NOT NULL,
  hash           BLOB NOT NULL
);
CREATE UNIQUE INDEX events_by_stream ON events (stream_key, stream_version);
CREATE UNIQUE INDEX events_by_id ON events (event_id);
CREATE INDEX events_by_compensates ON events (compensates) WHERE compensates IS NOT NULL;
CREATE TRIGGER events_are_immutable BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'factum: events are immutable'); END;
CREATE TRIGGER events_are_permanent BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'factum: events are never deleted'); END;
CREATE TRIGGER streams_are_immutable BEFORE UPDATE ON streams
BEGIN SELECT RAISE(ABORT, 'factum: streams are immutable'); END;
CREATE TRIGGER streams_are_permanent BEFORE DELETE ON streams
BEGIN SELECT RAISE(ABORT, 'factum: streams are never deleted'); END;
)sql";

// Format 2: inserts are guarded too. INSERT OR REPLACE (and REPLACE INTO) deletes the rows it
// conflicts with without firing DELETE triggers; these refuse such an insert before it runs.
// An event may only be inserted at the next position, as the next version of its stream, with
// an id not stored yet; a stream row may not take a stored stream's id or key. (In a BEFORE
// INSERT trigger an omitted key reads as -1, so keys are checked there only when positive, and
// a key below 1 is refused after the insert, when it is known.)
constexpr const char* kInsertGuards = R"sql(
CREATE TRIGGER events_are_appended BEFORE INSERT ON events
WHEN NEW.position IS NOT coalesce((SELECT max(position) FROM events), 0) + 1
  OR NEW.stream_version IS NOT coalesce((SELECT max(stream_version) FROM events
                                         WHERE stream_key = NEW.stream_key), 0) + 1
  OR EXISTS (SELECT 1 FROM events WHERE event_id = NEW.event_id)
BEGIN SELECT RAISE(ABORT, 'factum: events are only appended: at the next position, as the next version of their stream, with a new id'); END;
CREATE TRIGGER streams_are_added BEFORE INSERT ON streams
WHEN EXISTS (SELECT 1 FROM streams WHERE stream_id = NEW.stream_id)
  OR (NEW.stream_key >= 1 AND EXISTS (SELECT 1 FROM streams WHERE stream_key = NEW.stream_key))
BEGIN SELECT RAISE(ABORT, 'factum: streams are never replaced'); END;
CREATE TRIGGER stream_keys_are_positive AFTER INSERT ON streams WHEN NEW.stream_key < 1
BEGIN SELECT RAISE(ABORT, 'factum: stream keys start at 1'); END;
)sql";

[[noreturn]] void not_a_store(const Database& db, const std::string& why) {
  throw StorageError(StorageError::Kind::not_a_store,
                     "factum: '" + db.file() + "' is not a factum store: " + why);
}

// The file is a factum store (or a SQLite file) that has been damaged: SQLite finds it corrupt
// or malformed, or a table of the log is gone. Kind::corrupt, which the tools report as a
// damaged log rather than as "not a store".
[[noreturn]] void damaged(const Database& db, const std::string& why) {
  throw StorageError(StorageError::Kind::corrupt, "factum: '" + db.file() + "' is damaged: " + why +
                                                      " (restore it from a backup or an export)");
}

// True when the file starts with SQLite's magic string: a SQLite file, even if SQLite then
// refuses it (a truncated or overwritten one), not some other file.
bool has_sqlite_magic(const std::string& file) {
  static constexpr char kMagic[] = "SQLite format 3";  // with its '\0', 16 bytes
  char head[sizeof kMagic] = {};
  std::ifstream in(file, std::ios::binary);
  return in.read(head, sizeof head) && std::memcmp(head, kMagic, sizeof kMagic) == 0;
}

struct Header {
  std::int64_t application_id = 0;
  std::int64_t format = 0;
  std::int64_t objects = 0;
  std::int64_t log_tables = 0;  // bits: 1 the table events exists, 2 the table streams
};

// Reads the header in one read transaction, so a store being created by another process is
// seen either before or after its creation, never half made.
Header read_header(Database& db) {
  Header h;
  const bool own_transaction = !db.in_transaction();
  if (own_transaction) db.exec("BEGIN", "reading the file header");
  struct End {
    Database& db;
    bool active;
    ~End() {
      if (active && db.in_transaction())
        sqlite3_exec(db.get(), "COMMIT", nullptr, nullptr, nullptr);
    }
  } end{db, own_transaction};
  h.application_id = db.query_int("PRAGMA application_id", "reading the file header");
  h.format = db.query_int("PRAGMA user_version", "reading the file header");
  h.objects = db.query_int("SELECT count(*) FROM sqlite_schema", "reading the schema");
  h.log_tables = db.query_int(
      "SELECT coalesce(sum(CASE name WHEN 'events' THEN 1 WHEN 'streams' THEN 2 END), 0) "
      "FROM sqlite_schema WHERE type = 'table'",
      "reading the schema");
  return h;
}

// True when the header is a factum store of a format we read; throws when it is something
// else; false when the file is empty (a new store).
bool check_header(const Database& db, const Header& h) {
  if (h.application_id == kApplicationId) {
    if (h.format > kFormatVersion) {
      throw StorageError(StorageError::Kind::newer_format,
                         "factum: '" + db.file() + "' has storage format " +
                             std::to_string(h.format) + "; this factum reads up to format " +
                             std::to_string(kFormatVersion) + " (upgrade factum)");
    }
    if (h.format < 1) not_a_store(db, "its format version is " + std::to_string(h.format));
    return true;
  }
  if (h.application_id == 0 && h.objects == 0 && h.format == 0) return false;
  not_a_store(db, "it is a SQLite database of another application");
}

std::string journal_mode(Database& db) {
  Statement s(db, "PRAGMA journal_mode");
  return s.step("reading the journal mode") ? std::string(s.column_text(0)) : std::string();
}

}  // namespace

// Switches the file to WAL mode (persistent). SQLite may refuse the switch with SQLITE_BUSY
// without calling the busy handler while another connection opens the file, so retry until
// the busy timeout runs out.
void ensure_wal(Database& db, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto pause = std::chrono::milliseconds(1);;
       pause = std::min(pause * 2, std::chrono::milliseconds(50))) {
    try {
      if (journal_mode(db) == "wal") return;
      db.exec("PRAGMA journal_mode=WAL", "switching to WAL mode");
      if (journal_mode(db) == "wal") return;
    } catch (const StorageError& e) {
      if (e.kind() != StorageError::Kind::busy || std::chrono::steady_clock::now() >= deadline)
        throw;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw StorageError(StorageError::Kind::busy, "factum: switching '" + db.file() +
                                                       "' to WAL mode failed: the store is "
                                                       "locked by another connection or process");
    }
    std::this_thread::sleep_for(pause);
  }
}

namespace {

// Creates the schema in an empty file, inside the caller's write transaction.
void create_schema(Database& db) {
  db.exec(kSchema, "creating the schema");
  db.exec(kInsertGuards, "creating the schema");
  db.exec(("PRAGMA application_id=" + std::to_string(kApplicationId)).c_str(),
          "creating the schema");
  db.exec(("PRAGMA user_version=" + std::to_string(kFormatVersion)).c_str(), "creating the schema");
}

// Format 1 to 2: adds the insert guards, inside the caller's write transaction, with the new
// format number.
void upgrade(Database& db) {
  db.exec(kInsertGuards, "upgrading the store to format 2");
  db.exec("PRAGMA user_version=2", "upgrading the store to format 2");
}

// The header, or the error a file that cannot be read as a store deserves.
Header checked_header(Database& db) {
  try {
    return read_header(db);
  } catch (const StorageError& e) {
    // A SQLite file SQLite cannot read (truncated, overwritten) is damaged; anything else that
    // is not SQLite is not a store.
    const bool sqlite_file = has_sqlite_magic(db.file());
    if (e.kind() == StorageError::Kind::corrupt ||
        (e.kind() == StorageError::Kind::not_a_store && sqlite_file)) {
      damaged(db, "SQLite finds it corrupt or malformed");
    }
    if (e.kind() == StorageError::Kind::not_a_store) {
      not_a_store(db, "it is not a SQLite database");
    }
    throw;
  }
}

}  // namespace

SchemaState check_schema(Database& db, const StoreOptions& options) {
  // Wait for other processes (creating the store, say) instead of failing at once.
  sqlite3_busy_timeout(db.get(), static_cast<int>(options.busy_timeout.count()));
  const Header h = checked_header(db);
  if (!check_header(db, h)) {
    if (options.read_only) not_a_store(db, "the file is empty and the store is opened read-only");
    return SchemaState::absent;
  }
  if ((h.log_tables & 1) == 0) damaged(db, "its table 'events' is missing");
  if ((h.log_tables & 2) == 0) damaged(db, "its table 'streams' is missing");
  return h.format < kFormatVersion ? SchemaState::older : SchemaState::current;
}

bool complete_schema(Database& db) {
  const Header h = checked_header(db);
  if (!check_header(db, h)) {
    create_schema(db);
    return true;
  }
  if ((h.log_tables & 1) == 0) damaged(db, "its table 'events' is missing");
  if ((h.log_tables & 2) == 0) damaged(db, "its table 'streams' is missing");
  if (h.format >= kFormatVersion) return false;
  upgrade(db);
  return true;
}

bool in_wal_mode(Database& db) { return journal_mode(db) == "wal"; }

void configure_connection(Database& db, const StoreOptions& options, bool reader) {
  sqlite3_busy_timeout(db.get(), static_cast<int>(options.busy_timeout.count()));
  db.exec(options.durability == Durability::full ? "PRAGMA synchronous=FULL"
                                                 : "PRAGMA synchronous=NORMAL",
          "setting durability");
  if (options.max_file_size > 0) {
    const auto page_size = db.query_int("PRAGMA page_size", "reading the page size");
    const auto pages = static_cast<std::int64_t>(options.max_file_size) / page_size;
    db.exec(("PRAGMA max_page_count=" + std::to_string(pages > 0 ? pages : 1)).c_str(),
            "setting the size limit");
  }
  if (reader || options.read_only) {
    db.exec("PRAGMA query_only=1", "opening for reading");
    return;
  }
  const std::size_t pages = std::clamp<std::size_t>(options.checkpoint_pages, 1, 1U << 30);
  db.exec(("PRAGMA wal_autocheckpoint=" + std::to_string(pages)).c_str(),
          "setting the checkpoint size");
}

std::string select_events(const char* tail) {
  std::string sql = std::string("SELECT ") + kEventColumns + " " + tail;
  const auto where = sql.find("WHERE");
  sql.insert(where, kPreviousJoin);
  return sql;
}

}  // namespace factum::detail
