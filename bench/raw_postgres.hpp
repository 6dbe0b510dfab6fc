// bench/raw_postgres.hpp — minimal RAII over libpq for factum_bench's PostgreSQL ceilings, and
// the fresh schemas a PostgreSQL run works in.
//
// The ceiling is what plain libpq does with the same rows as factum: binary parameters and
// results, the fewest round trips the work allows (one autocommit INSERT per single-row commit;
// one pipeline — BEGIN, the INSERTs, COMMIT, one sync — per multi-row transaction), no factum
// code. Failures throw std::runtime_error naming the SQL, with the server's message.
//
// Compiled only when CMake found libpq (FACTUM_HAVE_POSTGRES).
//
// Thread-safety: a RawPg, and what uses it, is used by one thread at a time.
#pragma once

#include <libpq-fe.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/store_options.hpp"

namespace bench {

// A PGresult, cleared when destroyed.
class PgRes {
 public:
  PgRes() = default;
  explicit PgRes(PGresult* r) noexcept : r_(r) {}
  PgRes(PgRes&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  PgRes& operator=(PgRes&& o) noexcept {
    if (this != &o) {
      if (r_ != nullptr) PQclear(r_);
      r_ = std::exchange(o.r_, nullptr);
    }
    return *this;
  }
  ~PgRes() {
    if (r_ != nullptr) PQclear(r_);
  }
  PGresult* get() const noexcept { return r_; }
  int rows() const noexcept { return PQntuples(r_); }

 private:
  PGresult* r_ = nullptr;
};

// Binary parameters for one statement. Views: what is added must outlive the send (libpq copies
// the values into its output buffer when the statement is sent).
class PgParams {
 public:
  PgParams& i64(std::int64_t v);
  PgParams& text(std::string_view v) { return add(25, v.data(), v.size()); }
  PgParams& bytes(const void* data, std::size_t size) {
    return add(17, static_cast<const char*>(data), size);
  }
  PgParams& clear() noexcept {
    n_ = 0;
    return *this;
  }
  int size() const noexcept { return n_; }
  const unsigned* types() const noexcept { return types_.data(); }
  const char* const* values() const noexcept { return values_.data(); }
  const int* lengths() const noexcept { return lengths_.data(); }
  const int* formats() const noexcept { return formats_.data(); }

 private:
  PgParams& add(unsigned type, const char* data, std::size_t size);
  static constexpr std::size_t kMax = 16;
  int n_ = 0;
  std::array<unsigned, kMax> types_{};
  std::array<const char*, kMax> values_{};
  std::array<int, kMax> lengths_{};
  std::array<int, kMax> formats_{};
  std::array<std::array<char, 8>, kMax> ints_{};
};

// One connection.
class RawPg {
 public:
  // Connects to `uri`. Throws std::runtime_error with libpq's message.
  explicit RawPg(const std::string& uri);
  ~RawPg();
  RawPg(const RawPg&) = delete;
  RawPg& operator=(const RawPg&) = delete;

  PGconn* get() const noexcept { return conn_; }
  // Runs `sql` (one or more statements, no parameters).
  void exec(const std::string& sql);
  // The first column of the first row of `sql`, as text ("" when there is no row).
  std::string value(const std::string& sql);
  // Runs one statement with binary parameters and binary results, in one round trip.
  PgRes run(const char* sql, const PgParams& params);

  // Pipeline mode (libpq 14+): queue() sends a statement without waiting for its result;
  // sync() ends the pipeline's batch and reads every queued result (one round trip in all).
  void begin_pipeline();
  void queue(const char* sql, const PgParams& params);
  void sync();
  // Prepared statements: prepare() names `sql` (its parameter types those of `params`, out of
  // pipeline mode); queue_prepared() queues a run of it, as queue() does.
  void prepare(const char* name, const char* sql, const PgParams& params);
  void queue_prepared(const char* name, const PgParams& params);

 private:
  [[noreturn]] void fail(const PGresult* r, std::string_view sql) const;
  PGconn* conn_ = nullptr;
  int queued_ = 0;
};

// `uri` with the search_path option set to `schema`: EventStore::open keeps its tables in the
// first schema of the connection's search_path.
std::string with_search_path(const std::string& uri, const std::string& schema);

// A schema created for one store (factum's or the raw ceiling's), dropped with everything in it
// when destroyed. Its name is unique to the process: factum_bench_<pid>_<n>_<what>.
class PgSchema {
 public:
  // Creates the schema through `admin`, which must outlive this.
  PgSchema(RawPg& admin, const std::string& base_uri, std::string_view what);
  ~PgSchema();
  PgSchema(const PgSchema&) = delete;
  PgSchema& operator=(const PgSchema&) = delete;

  const std::string& name() const noexcept { return name_; }
  const std::string& uri() const noexcept { return uri_; }
  // VACUUM (ANALYZE) of every table in the schema: hint bits set and statistics taken, so that
  // the timed reads of both sides start from the same state whatever autovacuum did.
  void vacuum_analyze();

 private:
  RawPg& admin_;
  std::string name_;
  std::string uri_;
};

// The raw ceiling's writer: the rows factum writes (a fresh UUIDv7 per event, the type, the
// payload, a 32-byte hash, the time) into a table `events` of the same columns in the schema
// of `uri` — the stream id inline (no streams table), no secondary index, positions counted
// here. synchronous_commit follows `durability`, as factum's connections do.
class RawPgLog {
 public:
  RawPgLog(const std::string& uri, factum::Durability durability,
           std::span<const std::byte> payload, const factum::Hash& hash, std::string_view type);

  // One row in a transaction of its own: an autocommit INSERT, one round trip.
  void insert_commit(const std::string& stream, std::uint64_t version, std::int64_t now);

  // One transaction of `count` rows appended to `stream`, whose last version is `version`:
  // BEGIN, the INSERTs and COMMIT pipelined, one round trip.
  void append(const std::string& stream, std::uint64_t& version, std::size_t count);

  // The same in steps, for transactions over several streams: begin() enters pipeline mode,
  // insert() queues a row, commit() queues COMMIT and reads every result.
  void begin();
  void insert(const std::string& stream, std::uint64_t version, std::int64_t now);
  void commit();

  RawPg& db() noexcept { return db_; }

 private:
  void params(const std::string& stream, std::uint64_t version, std::int64_t now);

  RawPg db_;
  std::span<const std::byte> payload_;
  factum::Hash hash_;
  std::string type_;
  PgParams params_;
  factum::EventId id_;
  std::uint64_t position_ = 0;
};

// The raw reads: every column of the events table, binary, in position order or by stream
// (stream_id = $1 AND stream_version >= $2, through an index made after the writes).
inline constexpr const char* kRawPgScan =
    "SELECT position, stream_id, stream_version, event_id, type, schema_version, payload, "
    "correlation_id, causation_id, compensates, actor, extra, recorded_at, hash FROM events "
    "ORDER BY position";
inline constexpr const char* kRawPgByStream =
    "SELECT position, stream_id, stream_version, event_id, type, schema_version, payload, "
    "correlation_id, causation_id, compensates, actor, extra, recorded_at, hash FROM events "
    "WHERE stream_id = $1 AND stream_version >= $2 ORDER BY stream_version";

// A binary int8 value.
inline std::int64_t pg_int64(const PGresult* r, int row, int col) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(PQgetvalue(r, row, col));
  if (PQgetlength(r, row, col) != 8) return 0;
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<std::int64_t>(v);
}

// Copies row `row` of a binary result of kRawPgScan's columns into owned values, as factum hands
// events to its caller (extra is not copied, as in raw_sqlite.hpp's copy_row). Inline: it runs
// once per row in the raw ceilings' timed loops.
inline void copy_row(const PGresult* r, int row, factum::RecordedEvent& out) {
  auto text = [&](int col) {
    return std::string_view(PQgetvalue(r, row, col),
                            static_cast<std::size_t>(PQgetlength(r, row, col)));
  };
  auto blob = [&](int col) {
    return std::span<const std::byte>(reinterpret_cast<const std::byte*>(PQgetvalue(r, row, col)),
                                      static_cast<std::size_t>(PQgetlength(r, row, col)));
  };
  auto optional_id = [&](int col, std::optional<factum::EventId>& id) {
    id.reset();
    if (PQgetisnull(r, row, col) != 0) return;
    factum::EventId::Bytes b{};
    const auto bytes = blob(col);
    if (bytes.size() == b.size()) std::memcpy(b.data(), bytes.data(), b.size());
    id = factum::EventId(b);
  };
  out.position = static_cast<factum::Position>(pg_int64(r, row, 0));
  out.stream_id.assign(text(1));
  out.stream_version = static_cast<factum::StreamVersion>(pg_int64(r, row, 2));
  factum::EventId::Bytes id{};
  const auto id_bytes = blob(3);
  if (id_bytes.size() == id.size()) std::memcpy(id.data(), id_bytes.data(), id.size());
  out.id = factum::EventId(id);
  out.type.assign(text(4));
  out.schema_version = static_cast<std::uint32_t>(pg_int64(r, row, 5));
  const auto payload = blob(6);
  out.payload.assign(payload.begin(), payload.end());
  optional_id(7, out.metadata.correlation_id);
  optional_id(8, out.metadata.causation_id);
  optional_id(9, out.metadata.compensates);
  out.metadata.actor.assign(PQgetisnull(r, row, 10) == 0 ? text(10) : "");
  out.recorded_at = factum::Timestamp(std::chrono::microseconds(pg_int64(r, row, 12)));
  const auto hash = blob(13);
  if (hash.size() == out.hash.size()) std::memcpy(out.hash.data(), hash.data(), out.hash.size());
}

// What a reader that copies nothing must still do per row: every column's nullness and value
// (int8 decoded; text and bytea as a pointer and a size, as factum's views hold), folded into a
// checksum.
inline std::uint64_t touch_row(const PGresult* r, int row) noexcept {
  std::uint64_t sum = 0;
  const int columns = PQnfields(r);
  for (int col = 0; col < columns; ++col) {
    if (PQgetisnull(r, row, col) != 0) continue;
    if (PQftype(r, col) == 20) {  // int8
      sum += static_cast<std::uint64_t>(pg_int64(r, row, col));
    } else {
      sum += reinterpret_cast<std::uintptr_t>(PQgetvalue(r, row, col)) != 0;
      sum += static_cast<std::uint64_t>(PQgetlength(r, row, col));
    }
  }
  return sum;
}

}  // namespace bench
