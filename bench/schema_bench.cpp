// schema_bench — measures the schema choices of docs/storage-format.md with plain SQLite:
// an integer key per stream versus repeating the stream id text in every event, and UUIDv7
// event ids (the unique id index grows at its end) versus random UUIDv4 ids.
//
//   schema_bench [--events N]     (default 1,000,000; 100 events per transaction)
//
// Each variant inserts the same rows (200-byte payloads, 1,000 streams of "category-N" ids)
// into a fresh WAL file with synchronous=NORMAL and prints events/s, the ratio to the
// baseline (text stream id, UUIDv4) and the file size.
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <factum/factum.hpp>

#include "support.hpp"

namespace {

struct Variant {
  const char* name;
  bool integer_stream_key;
  bool uuid_v7;
};

void check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    std::fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
    std::exit(1);
  }
}

void exec(sqlite3* db, const char* sql) {
  check(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), db, sql);
}

std::array<std::uint8_t, 16> uuid_v4(std::mt19937_64& rng) {
  std::array<std::uint8_t, 16> b{};
  const std::uint64_t hi = rng();
  const std::uint64_t lo = rng();
  std::memcpy(b.data(), &hi, 8);
  std::memcpy(b.data() + 8, &lo, 8);
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);
  return b;
}

double run(const Variant& v, std::size_t events, const std::filesystem::path& file,
           std::uintmax_t& size) {
  std::filesystem::remove(file);
  sqlite3* db = nullptr;
  check(sqlite3_open(file.c_str(), &db), db, "open");
  exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL");
  if (v.integer_stream_key) {
    exec(db,
         "CREATE TABLE streams (stream_key INTEGER PRIMARY KEY, stream_id TEXT NOT NULL UNIQUE);"
         "CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, stream_key INTEGER NOT "
         "NULL,"
         " stream_version INTEGER NOT NULL, event_id BLOB NOT NULL, type TEXT NOT NULL,"
         " payload BLOB NOT NULL, recorded_at INTEGER NOT NULL, hash BLOB NOT NULL);"
         "CREATE UNIQUE INDEX events_by_stream ON events (stream_key, stream_version);"
         "CREATE UNIQUE INDEX events_by_id ON events (event_id);");
  } else {
    exec(db,
         "CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, stream_id TEXT NOT NULL,"
         " stream_version INTEGER NOT NULL, event_id BLOB NOT NULL, type TEXT NOT NULL,"
         " payload BLOB NOT NULL, recorded_at INTEGER NOT NULL, hash BLOB NOT NULL);"
         "CREATE UNIQUE INDEX events_by_stream ON events (stream_id, stream_version);"
         "CREATE UNIQUE INDEX events_by_id ON events (event_id);");
  }
  constexpr int kStreams = 1000;
  if (v.integer_stream_key) {
    exec(db, "BEGIN");
    for (int s = 0; s < kStreams; ++s) {
      exec(db,
           ("INSERT INTO streams (stream_id) VALUES ('account-" + std::to_string(100000 + s) + "')")
               .c_str());
    }
    exec(db, "COMMIT");
  }
  sqlite3_stmt* ins = nullptr;
  check(sqlite3_prepare_v2(db,
                           v.integer_stream_key
                               ? "INSERT INTO events (stream_key, stream_version, event_id, type, "
                                 "payload, recorded_at, hash) VALUES (?,?,?,?,?,?,?)"
                               : "INSERT INTO events (stream_id, stream_version, event_id, type, "
                                 "payload, recorded_at, hash) VALUES (?,?,?,?,?,?,?)",
                           -1, &ins, nullptr),
        db, "prepare");
  std::mt19937_64 rng(42);
  std::vector<std::int64_t> versions(kStreams, 0);
  const std::string payload(200, 'p');
  const std::string hash(32, 'h');
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < events; ++i) {
    if (i % 100 == 0) exec(db, "BEGIN");
    const int s = static_cast<int>(rng() % kStreams);
    if (v.integer_stream_key) {
      sqlite3_bind_int64(ins, 1, s + 1);
    } else {
      const std::string id = "account-" + std::to_string(100000 + s);
      sqlite3_bind_text(ins, 1, id.c_str(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
    }
    sqlite3_bind_int64(ins, 2, ++versions[static_cast<std::size_t>(s)]);
    const auto id = v.uuid_v7 ? factum::EventId::generate().bytes() : uuid_v4(rng);
    sqlite3_bind_blob(ins, 3, id.data(), 16, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 4, "bank.MoneyDeposited", -1, SQLITE_STATIC);
    sqlite3_bind_blob(ins, 5, payload.data(), static_cast<int>(payload.size()), SQLITE_STATIC);
    sqlite3_bind_int64(ins, 6, static_cast<std::int64_t>(i));
    sqlite3_bind_blob(ins, 7, hash.data(), 32, SQLITE_STATIC);
    check(sqlite3_step(ins), db, "insert");
    sqlite3_reset(ins);
    if (i % 100 == 99 || i + 1 == events) exec(db, "COMMIT");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sqlite3_finalize(ins);
  exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite3_close(db);
  size = std::filesystem::file_size(file);
  return static_cast<double>(events) / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t events = 1'000'000;
  CLI::App app("measures the schema choices of docs/storage-format.md with plain SQLite",
               "schema_bench");
  bench::cli_defaults(app);
  bench::add_positive(app, "--events", events,
                      "events per variant (default 1000000; 100 per transaction)");
  bench::parse_or_exit(app, argc, argv);
  const bench::TempDir dir(std::filesystem::temp_directory_path(), "factum-schema-bench");
  const Variant variants[] = {{"text stream id, UUIDv4 ids (baseline)", false, false},
                              {"text stream id, UUIDv7 ids", false, true},
                              {"integer stream key, UUIDv4 ids", true, false},
                              {"integer stream key, UUIDv7 ids (factum)", true, true}};
  std::printf("schema_bench: %zu events, 100 per transaction, synchronous=NORMAL\n", events);
  std::printf("%-42s %12s %8s %10s\n", "variant", "events/s", "ratio", "file MiB");
  double baseline = 0;
  for (const Variant& v : variants) {
    std::uintmax_t size = 0;
    const double rate = run(v, events, dir.path() / "schema.db", size);
    if (baseline == 0) baseline = rate;
    std::printf("%-42s %12.0f %8.2f %10.1f\n", v.name, rate, rate / baseline,
                static_cast<double>(size) / (1024.0 * 1024.0));
  }
  return 0;
}
