// The PostgreSQL backend (docs/postgres.md): the same log as the SQLite file, in the tables of
// one PostgreSQL schema (the first of the connection's search_path), through libpq.
//
// Ordering. Every append (and every write_sql) first locks the one row of factum_store
// (SELECT ... FOR UPDATE) and keeps the lock until its COMMIT: the writers of all processes and
// machines take turns, each reads the head the one before committed, and a reader can never see
// position N + 1 before N, because N + 1 is written only after N's transaction has ended. The
// cost is one writing transaction at a time per store; group commit (below) amortises it, since
// a process puts every append waiting for the lock into one transaction.
//
// Group commit. Inside a process, appends queue; the first caller leads: it commits the queued
// appends in one transaction, each under a savepoint when there are several (a failing append
// is rolled back alone), and wakes their callers.
//
// Values travel in libpq's binary format (bytea and int8 as bytes, text as its bytes): no
// escaping, and a read hands out views into the result's memory.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include "factum/eventstore/location.hpp"
#include "factum/eventstore/text.hpp"
#include "group_commit.hpp"
#include "hash_chain.hpp"
#include "libpq.hpp"
#include "postgres/statements.hpp"
#include "postgres_target.hpp"
#include "rows.hpp"
#include "storage.hpp"
#include "validation.hpp"
#include "verify.hpp"

namespace factum::detail {
namespace {

constexpr unsigned kInt8Oid = 20;
constexpr unsigned kTextOid = 25;
constexpr unsigned kByteaOid = 17;
constexpr unsigned kBoolOid = 16;
constexpr int kFormat = 1;  // binary parameters and results
constexpr int kStoreFormat = 1;
constexpr std::size_t kMaxGroup = 64;
constexpr std::int64_t kVerifyPage = 4096;

std::int64_t now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

// libpq's or the server's message in one line (each line break and the indent after it
// become one space), escaped for a terminal (text.hpp): the server quotes the data it refused
// (a DETAIL naming a row's values).
std::string one_line(const char* message) {
  const std::string_view m = message != nullptr ? message : "";
  std::string out;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i] != '\n') {
      out.push_back(m[i]);
      continue;
    }
    while (i + 1 < m.size() && (m[i + 1] == '\t' || m[i + 1] == ' ')) ++i;
    if (i + 1 < m.size()) out.push_back(' ');
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return printable(out);
}

// --- Connections, results, errors ---------------------------------------------------------

class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(PGresult* r) noexcept : r_(r) {}
  PgResult(PgResult&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  PgResult& operator=(PgResult&& o) noexcept {
    if (this != &o) {
      if (r_ != nullptr) libpq().PQclear(r_);
      r_ = std::exchange(o.r_, nullptr);
    }
    return *this;
  }
  ~PgResult() {
    if (r_ != nullptr) libpq().PQclear(r_);
  }
  PGresult* get() const noexcept { return r_; }
  int rows() const noexcept { return libpq().PQntuples(r_); }
  bool null(int row, int col) const noexcept { return libpq().PQgetisnull(r_, row, col) != 0; }
  std::span<const std::byte> bytes(int row, int col) const noexcept {
    return {reinterpret_cast<const std::byte*>(libpq().PQgetvalue(r_, row, col)),
            static_cast<std::size_t>(libpq().PQgetlength(r_, row, col))};
  }
  std::string_view text(int row, int col) const noexcept {
    return {libpq().PQgetvalue(r_, row, col),
            static_cast<std::size_t>(libpq().PQgetlength(r_, row, col))};
  }
  // A binary int8 (or int4) column; false when NULL or of another size.
  bool int64(int row, int col, std::int64_t& out) const noexcept {
    if (null(row, col)) return false;
    const auto b = bytes(row, col);
    if (b.size() != 8 && b.size() != 4) return false;
    std::uint64_t v = 0;
    for (std::byte x : b) v = (v << 8) | static_cast<std::uint8_t>(x);
    out = b.size() == 8 ? static_cast<std::int64_t>(v)
                        : static_cast<std::int64_t>(static_cast<std::int32_t>(v));
    return true;
  }
  std::int64_t int64_or(int row, int col, std::int64_t fallback) const noexcept {
    std::int64_t v = fallback;
    return int64(row, col, v) ? v : fallback;
  }

 private:
  PGresult* r_ = nullptr;
};

StorageError::Kind kind_of(const char* sqlstate, PGconn* conn) {
  if (conn != nullptr && libpq().PQstatus(conn) != CONNECTION_OK) return StorageError::Kind::io;
  const std::string_view state = sqlstate != nullptr ? sqlstate : "";
  if (state == "40001" || state == "40P01" || state == "55P03" || state == "57014") {
    return StorageError::Kind::busy;
  }
  if (state == "53100") return StorageError::Kind::full;
  if (state == "25006") return StorageError::Kind::read_only;
  if (state.starts_with("08") || state.starts_with("57P")) return StorageError::Kind::io;
  if (state == "XX001" || state == "XX002") return StorageError::Kind::corrupt;
  return StorageError::Kind::other;
}

class PgConn {
 public:
  PgConn(std::shared_ptr<const PgTarget> target, const StoreOptions& options)
      : target_(std::move(target)) {
    conn_ = connect(*target_);
    if (conn_ == nullptr || libpq().PQstatus(conn_) != CONNECTION_OK) {
      const std::string why =
          one_line(conn_ != nullptr ? libpq().PQerrorMessage(conn_) : "out of memory");
      if (conn_ != nullptr) libpq().PQfinish(conn_);
      throw StorageError(StorageError::Kind::io,
                         "factum: cannot connect to '" + target_->shown + "': " + why);
    }
    libpq().PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    try {
      configure(options);
    } catch (...) {
      libpq().PQfinish(conn_);
      throw;
    }
  }
  ~PgConn() { libpq().PQfinish(conn_); }
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  void configure(const StoreOptions& options) {
    // Durability::normal: a commit returns before its WAL record is flushed (a server crash
    // may lose the last moments of commits, never the log's consistency); full: flushed.
    // lock_timeout 0 would mean "wait forever"; busy_timeout 0 means "do not wait".
    const std::string lock_timeout =
        std::to_string(std::max<std::int64_t>(1, options.busy_timeout.count()));
    exec("SET synchronous_commit = " +
             std::string(options.durability == Durability::full ? "on" : "off") +
             "; SET lock_timeout = " + lock_timeout + "; SET client_min_messages = warning; " +
             pg::kPlannerSettings +
             (options.read_only ? "; SET default_transaction_read_only = on" : ""),
         "configuring the connection");
  }

  PGconn* get() const noexcept { return conn_; }
  bool ok() const noexcept { return libpq().PQstatus(conn_) == CONNECTION_OK; }

  // Whether an idle connection is still usable: false when it is broken, or when the server
  // ended it meanwhile (a restart, pg_terminate_backend, idle_session_timeout): the server's
  // last words and the end of the stream then wait on the socket, and reading them (without
  // blocking) marks the connection broken. One poll() when nothing waits. Must not be called
  // while a statement is in flight.
  bool alive() noexcept {
    for (int reads = 0; ok() && reads < 8; ++reads) {
      pollfd p{libpq().PQsocket(conn_), POLLIN, 0};
      if (p.fd < 0) return false;
      int ready = 0;
      while ((ready = ::poll(&p, 1, 0)) < 0 && errno == EINTR) {
      }
      if (ready <= 0) return ready == 0;
      if (libpq().PQconsumeInput(conn_) == 0) return false;
    }
    return ok();
  }
  bool in_transaction() const noexcept {
    return libpq().PQtransactionStatus(conn_) != PQTRANS_IDLE;
  }
  // The store's place for messages (without its password).
  const std::string& shown() const noexcept { return target_->shown; }

  [[noreturn]] void fail(const PGresult* r, std::string_view doing) const {
    const char* state = r != nullptr ? libpq().PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string why =
        one_line(r != nullptr ? libpq().PQresultErrorMessage(r) : libpq().PQerrorMessage(conn_));
    throw StorageError(kind_of(state, conn_),
                       "factum: " + std::string(doing) + " in '" + shown() + "': " + why +
                           (state != nullptr ? " (SQLSTATE " + std::string(state) + ")" : ""));
  }

  // Runs `sql` (one or more statements, no parameters).
  void exec(const std::string& sql, std::string_view doing) {
    PgResult r(libpq().PQexec(conn_, sql.c_str()));
    const auto status = libpq().PQresultStatus(r.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(r.get(), doing);
  }

  // Runs a parameterised statement; results in binary (result_format 1) or text (0).
  PgResult run(const char* sql, int n, const unsigned* types, const char* const* values,
               const int* lengths, const int* formats, std::string_view doing,
               int result_format = kFormat) {
    PgResult r(libpq().PQexecParams(conn_, sql, n, types, values, lengths, formats, result_format));
    const auto status = libpq().PQresultStatus(r.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(r.get(), doing);
    return r;
  }

  void rollback() noexcept {
    if (ok() && in_transaction()) libpq().PQclear(libpq().PQexec(conn_, "ROLLBACK"));
  }

  // The name of the statement prepared (or to be prepared) on this connection for `sql`; empty
  // when the connection holds its limit of prepared statements. `fresh` tells that the caller
  // must prepare it now.
  std::string statement_name(const std::string& sql, bool& fresh) {
    fresh = false;
    if (const auto it = prepared_.find(sql); it != prepared_.end()) return it->second;
    if (prepared_.size() >= kMaxPrepared) return {};
    fresh = true;
    // Names are never reused: a forgotten statement may still exist on the server.
    return prepared_.emplace(sql, "factum_" + std::to_string(next_name_++)).first->second;
  }
  // Forgets statements whose preparation did not complete.
  void forget_statement(const std::string& sql) noexcept { prepared_.erase(sql); }

 private:
  static PGconn* connect(const PgTarget& t) {
    std::vector<const char*> keywords;
    std::vector<const char*> values;
    for (std::size_t i = 0; i < t.keywords.size(); ++i) {
      keywords.push_back(t.keywords[i].c_str());
      values.push_back(t.values[i].c_str());
    }
    keywords.push_back(nullptr);
    values.push_back(nullptr);
    return libpq().PQconnectdbParams(keywords.data(), values.data(), t.expand_dbname ? 1 : 0);
  }

  static constexpr std::size_t kMaxPrepared = 256;
  std::shared_ptr<const PgTarget> target_;
  PGconn* conn_ = nullptr;
  std::map<std::string, std::string> prepared_;  // SQL text -> statement name
  std::uint64_t next_name_ = 0;
};

// Binary parameters for one statement. Views: what is added must outlive the call (own() keeps
// a copy); libpq copies the values when the statement is sent.
class Params {
 public:
  Params() = default;
  // Not copyable: a copy's values would point into the original. A move keeps them valid (the
  // deques' elements stay where they are).
  Params(const Params&) = delete;
  Params& operator=(const Params&) = delete;
  Params(Params&&) = default;
  Params& operator=(Params&&) = default;

  Params& i64(std::int64_t v) {
    auto& slot = ints_.emplace_back();
    const auto u = static_cast<std::uint64_t>(v);
    for (int i = 0; i < 8; ++i) slot[i] = static_cast<char>(u >> (56 - 8 * i));
    return add(kInt8Oid, slot.data(), 8);
  }
  Params& text(std::string_view v) { return add(kTextOid, v.data(), v.size()); }
  Params& own(std::string v) {
    const std::string& kept = owned_.emplace_back(std::move(v));
    return text(kept);
  }
  Params& bytes(std::span<const std::byte> v) {
    return add(kByteaOid, reinterpret_cast<const char*>(v.data()), v.size());
  }
  Params& bytes(const void* data, std::size_t size) {
    return add(kByteaOid, static_cast<const char*>(data), size);
  }
  Params& own_bytes(std::string v) {
    const std::string& kept = owned_.emplace_back(std::move(v));
    return bytes(kept.data(), kept.size());
  }
  Params& id(const EventId& id) { return bytes(id.bytes().data(), id.bytes().size()); }
  Params& optional_id(const std::optional<EventId>& id) {
    return id ? this->id(*id) : null(kByteaOid);
  }
  Params& null(unsigned type) {
    types_.push_back(type);
    values_.push_back(nullptr);
    lengths_.push_back(0);
    formats_.push_back(kFormat);
    return *this;
  }

  int size() const noexcept { return static_cast<int>(types_.size()); }
  const unsigned* types() const noexcept { return types_.data(); }
  const char* const* values() const noexcept { return values_.data(); }
  const int* lengths() const noexcept { return lengths_.data(); }
  const int* formats() const noexcept { return formats_.data(); }

  // Runs `sql` with these parameters (prepared once per connection when it has any).
  PgResult run(PgConn& c, const char* sql, std::string_view doing) {
    if (size() == 0) return c.run(sql, 0, nullptr, nullptr, nullptr, nullptr, doing);
    const std::string text(sql);
    bool fresh = false;
    const std::string name = c.statement_name(text, fresh);
    if (name.empty()) return c.run(sql, size(), types(), values(), lengths(), formats(), doing);
    if (fresh) {
      PgResult prepared(libpq().PQprepare(c.get(), name.c_str(), sql, size(), types()));
      if (libpq().PQresultStatus(prepared.get()) != PGRES_COMMAND_OK) {
        c.forget_statement(text);
        c.fail(prepared.get(), doing);
      }
    }
    PgResult r(libpq().PQexecPrepared(c.get(), name.c_str(), size(), values(), lengths(), formats(),
                                      kFormat));
    const auto status = libpq().PQresultStatus(r.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) c.fail(r.get(), doing);
    return r;
  }

 private:
  Params& add(unsigned type, const char* data, std::size_t size) {
    types_.push_back(type);
    // libpq reads a zero-length binary value from a non-null pointer.
    values_.push_back(data != nullptr ? data : "");
    lengths_.push_back(static_cast<int>(size));
    formats_.push_back(kFormat);
    return *this;
  }
  std::vector<unsigned> types_;
  std::vector<const char*> values_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
  std::deque<std::array<char, 8>> ints_;  // a deque: its elements never move
  std::deque<std::string> owned_;
};

// Statements sent together and answered together: one round trip for all of them (libpq's
// pipeline mode). The server runs them in order; after a failure it skips the rest. Statements
// with parameters are prepared once per connection (named by their text): the server plans them
// once, not per call.
class Pipeline {
 public:
  explicit Pipeline(PgConn& c) : c_(c) {}
  ~Pipeline() {
    if (!active_) return;
    // Abandoned (an exception): drain what is pending, leave pipeline mode.
    for (const std::string& sql : preparing_) c_.forget_statement(sql);
    if (libpq().PQpipelineSync(c_.get()) == 1) {
      for (;;) {
        PGresult* r = libpq().PQgetResult(c_.get());
        if (r == nullptr) {
          if (!c_.ok()) break;
          continue;
        }
        const bool sync = libpq().PQresultStatus(r) == PGRES_PIPELINE_SYNC;
        libpq().PQclear(r);
        if (sync) break;
      }
    }
    libpq().PQexitPipelineMode(c_.get());
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  void send(const std::string& sql, const Params& p) {
    if (!active_) {
      if (libpq().PQenterPipelineMode(c_.get()) != 1) c_.fail(nullptr, "entering pipeline mode");
      active_ = true;
    }
    bool fresh = false;
    const std::string name = p.size() > 0 ? c_.statement_name(sql, fresh) : std::string();
    if (fresh) {
      preparing_.push_back(sql);
      if (libpq().PQsendPrepare(c_.get(), name.c_str(), sql.c_str(), p.size(), p.types()) != 1) {
        c_.fail(nullptr, "preparing a statement");
      }
      kinds_.push_back(false);
    }
    const int sent = name.empty()
                         ? libpq().PQsendQueryParams(c_.get(), sql.c_str(), p.size(), p.types(),
                                                     p.values(), p.lengths(), p.formats(), kFormat)
                         : libpq().PQsendQueryPrepared(c_.get(), name.c_str(), p.size(), p.values(),
                                                       p.lengths(), p.formats(), kFormat);
    if (sent != 1) c_.fail(nullptr, "sending a statement");
    kinds_.push_back(true);
  }

  // Sends the statements' sync and returns their results in order (one per send). Throws
  // (after reading every answer) the error of the first statement that failed; when `failed`
  // is not null and the connection is sound, moves that statement's result there instead and
  // returns the results (the transaction is then aborted: roll it back).
  std::vector<PgResult> run(std::string_view doing, PgResult* failed = nullptr) {
    std::vector<PgResult> out;
    if (!active_) return out;
    if (libpq().PQpipelineSync(c_.get()) != 1) c_.fail(nullptr, doing);
    PgResult error;
    for (const bool statement : kinds_) {
      PgResult r(libpq().PQgetResult(c_.get()));
      if (r.get() == nullptr) c_.fail(nullptr, doing);  // the connection broke
      while (PGresult* extra = libpq().PQgetResult(c_.get())) libpq().PQclear(extra);
      const auto status = libpq().PQresultStatus(r.get());
      if ((status == PGRES_FATAL_ERROR || status == PGRES_PIPELINE_ABORTED) &&
          error.get() == nullptr) {
        error = std::move(r);
      }
      if (statement) out.push_back(std::move(r));
    }
    PgResult sync(libpq().PQgetResult(c_.get()));
    if (sync.get() == nullptr || libpq().PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC) {
      c_.fail(sync.get(), doing);
    }
    active_ = false;
    kinds_.clear();
    if (error.get() != nullptr) {
      for (const std::string& sql : preparing_) c_.forget_statement(sql);
    }
    preparing_.clear();
    if (libpq().PQexitPipelineMode(c_.get()) != 1) c_.fail(nullptr, doing);
    if (error.get() != nullptr) {
      if (failed == nullptr || !c_.ok()) c_.fail(error.get(), doing);
      *failed = std::move(error);
    }
    return out;
  }

 private:
  PgConn& c_;
  bool active_ = false;
  std::vector<bool> kinds_;             // per result awaited: a statement's (true) or a PREPARE's
  std::vector<std::string> preparing_;  // SQL prepared in this round trip
};

// --- Schema ---------------------------------------------------------------------------------

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
  hash           bytea NOT NULL
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

// Checks the schema (creating it when allowed and missing); returns the schema's name.
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

// The NOTIFY channel of a store: one per schema, a valid identifier of fixed length.
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

// --- Rows -------------------------------------------------------------------------------------

enum Col {
  kPosition,
  kStreamId,
  kStreamVersion,
  kEventId,
  kType,
  kSchemaVersion,
  kPayload,
  kCorrelation,
  kCausation,
  kCompensates,
  kActor,
  kExtra,
  kRecordedAt,
  kHash,
  kPreviousHash
};

bool read_id(const PgResult& r, int row, int col, std::optional<EventId>& out) {
  if (r.null(row, col)) {
    out.reset();
    return true;
  }
  const auto b = r.bytes(row, col);
  if (b.size() != 16) return false;
  EventId::Bytes bytes{};
  std::memcpy(bytes.data(), b.data(), bytes.size());
  out = EventId(bytes);
  return true;
}

// Points `out` at row `row` of `r` (postgres/statements.hpp's event columns, then the previous
// hash): nullptr when the row is well formed, else what is wrong with it.
const char* decode(const PgResult& r, int row, EventView& out) {
  std::int64_t v = 0;
  if (!r.int64(row, kPosition, v) || v < 1) return "its position is not a positive integer";
  out.position = static_cast<Position>(v);
  if (r.null(row, kStreamId)) return "its stream id is missing";
  out.stream_id = r.text(row, kStreamId);
  if (!r.int64(row, kStreamVersion, v) || v < 1) {
    return "its stream version is not a positive integer";
  }
  out.stream_version = static_cast<StreamVersion>(v);
  std::optional<EventId> id;
  if (!read_id(r, row, kEventId, id) || !id) return "its event id is not 16 bytes";
  out.id = *id;
  out.type = r.text(row, kType);
  if (!r.int64(row, kSchemaVersion, v) || v < 0 || v > UINT32_MAX) {
    return "its schema version is not a 32-bit unsigned integer";
  }
  out.schema_version = static_cast<std::uint32_t>(v);
  out.payload = r.bytes(row, kPayload);
  if (!read_id(r, row, kCorrelation, out.correlation_id) ||
      !read_id(r, row, kCausation, out.causation_id) ||
      !read_id(r, row, kCompensates, out.compensates)) {
    return "a metadata event id is not 16 bytes";
  }
  out.actor = r.null(row, kActor) ? std::string_view() : r.text(row, kActor);
  out.encoded_values = {};
  if (!r.null(row, kExtra)) {
    out.encoded_values = r.bytes(row, kExtra);
    if (!walk_values(out.encoded_values, [](std::string_view, std::string_view) {})) {
      return "its metadata key/values are malformed";
    }
  }
  if (!r.int64(row, kRecordedAt, v)) return "its recorded-at time is not an integer";
  out.recorded_at = Timestamp(std::chrono::microseconds(v));
  const auto hash = r.bytes(row, kHash);
  if (r.null(row, kHash) || hash.size() != out.hash.size()) return "its hash is not 32 bytes";
  std::memcpy(out.hash.data(), hash.data(), out.hash.size());
  const auto previous = r.bytes(row, kPreviousHash);
  if (out.position != 1 && !r.null(row, kPreviousHash) &&
      previous.size() == out.previous_hash.size()) {
    std::memcpy(out.previous_hash.data(), previous.data(), out.previous_hash.size());
  } else {
    out.previous_hash = Hash{};
  }
  return nullptr;
}

void read_view(const PgResult& r, int row, EventView& out) {
  if (const char* problem = decode(r, row, out)) {
    std::int64_t at = 0;
    r.int64(row, kPosition, at);
    if (at < 1) {
      throw CorruptEventError(0, "the row at position " + std::to_string(at) +
                                     " lies outside the chain (" + problem + ")");
    }
    throw CorruptEventError(static_cast<Position>(at), problem);
  }
}

Hash hash_of(std::span<const std::byte> bytes, Position position) {
  Hash h{};
  if (bytes.size() != h.size()) throw CorruptEventError(position, "its hash is not 32 bytes");
  std::memcpy(h.data(), bytes.data(), h.size());
  return h;
}

// --- Sql over libpq ---------------------------------------------------------------------------

// Sql's "?1, ?2, ..." (and bare "?") as PostgreSQL's "$1, $2, ...", outside quotes; `count`
// gets the highest parameter number.
std::string dollar_params(std::string_view sql, int& count) {
  std::string out;
  out.reserve(sql.size() + 8);
  char quote = 0;
  int next = 1;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char ch = sql[i];
    if (quote != 0) {
      if (ch == quote) quote = 0;
      out.push_back(ch);
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      out.push_back(ch);
    } else if (ch == '?') {
      std::size_t j = i + 1;
      while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') ++j;
      if (j > i + 1) {
        out += "$" + std::string(sql.substr(i + 1, j - i - 1));
        next = std::max(next, std::stoi(std::string(sql.substr(i + 1, j - i - 1))) + 1);
      } else {
        out += "$" + std::to_string(next++);
      }
      i = j - 1;
    } else {
      out.push_back(ch);
    }
  }
  count = next - 1;
  return out;
}

class PgRow final : public SqlRow {
 public:
  PgRow(const PgConn& conn, const PgResult& r, int row) : conn_(conn), r_(r), row_(row) {}
  int size() const override { return libpq().PQnfields(r_.get()); }
  bool is_null(int column) const override {
    check(column);
    return r_.null(row_, column);
  }
  std::int64_t integer(int column) const override {
    check(column);
    if (r_.null(row_, column)) return 0;
    const std::string_view t = r_.text(row_, column);
    if (libpq().PQftype(r_.get(), column) == kBoolOid) return t == "t" ? 1 : 0;
    std::int64_t v = 0;
    const std::string s(t);
    char* end = nullptr;
    errno = 0;
    v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0) wrong(column, "an integer");
    return v;
  }
  double real(int column) const override {
    check(column);
    if (r_.null(row_, column)) return 0;
    const std::string s(r_.text(row_, column));
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0') wrong(column, "a number");
    return v;
  }
  std::string text(int column) const override {
    check(column);
    return std::string(r_.text(row_, column));
  }
  Bytes blob(int column) const override {
    check(column);
    if (r_.null(row_, column)) return {};
    if (libpq().PQftype(r_.get(), column) != kByteaOid) {
      const auto t = r_.text(row_, column);
      const auto* p = reinterpret_cast<const std::byte*>(t.data());
      return Bytes(p, p + t.size());
    }
    std::size_t n = 0;
    unsigned char* raw = libpq().PQunescapeBytea(
        reinterpret_cast<const unsigned char*>(libpq().PQgetvalue(r_.get(), row_, column)), &n);
    if (raw == nullptr) throw std::bad_alloc();
    const auto* p = reinterpret_cast<const std::byte*>(raw);
    Bytes out(p, p + n);
    libpq().PQfreemem(raw);
    return out;
  }

 private:
  void check(int column) const {
    if (column < 0 || column >= size()) {
      throw StorageError(StorageError::Kind::other, "factum: column " + std::to_string(column) +
                                                        " is out of range (the row has " +
                                                        std::to_string(size()) + ")");
    }
  }
  [[noreturn]] void wrong(int column, const char* what) const {
    throw StorageError(StorageError::Kind::other, "factum: column " + std::to_string(column) +
                                                      " ('" + std::string(r_.text(row_, column)) +
                                                      "') is not " + what + " in '" +
                                                      conn_.shown() + "'");
  }
  const PgConn& conn_;
  const PgResult& r_;
  int row_;
};

class PgSql final : public Sql {
 public:
  explicit PgSql(PgConn& conn) : conn_(conn) {}

  SqlDialect dialect() const noexcept override { return SqlDialect::postgres; }

  std::int64_t execute(std::string_view sql, std::span<const SqlValue> params) override {
    PgResult r = run(sql, params);
    const char* n = libpq().PQcmdTuples(r.get());
    return n != nullptr && *n != '\0' ? std::atoll(n) : 0;
  }

  void query(std::string_view sql, std::span<const SqlValue> params,
             const std::function<void(const SqlRow&)>& on_row) override {
    PgResult r = run(sql, params);
    for (int i = 0; i < r.rows(); ++i) on_row(PgRow(conn_, r, i));
  }

 private:
  // Text results (any column type reads as text, integer or real); bytea parameters travel
  // in binary, the others as text typed by the statement.
  PgResult run(std::string_view sql, std::span<const SqlValue> params) {
    int wanted = 0;
    const std::string text = dollar_params(sql, wanted);
    if (static_cast<std::size_t>(wanted) != params.size()) {
      throw InvalidArgument("factum: the SQL statement '" + std::string(sql) + "' takes " +
                            std::to_string(wanted) + " parameter(s) but " +
                            std::to_string(params.size()) + " value(s) were given");
    }
    std::vector<std::string> held(params.size());
    std::vector<const char*> values(params.size());
    std::vector<int> lengths(params.size());
    std::vector<int> formats(params.size());
    std::vector<unsigned> types(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const SqlValue& v = params[i];
      if (std::holds_alternative<std::nullptr_t>(v)) {
        values[i] = nullptr;
      } else if (const auto* n = std::get_if<std::int64_t>(&v)) {
        held[i] = std::to_string(*n);
      } else if (const auto* d = std::get_if<double>(&v)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        held[i] = buf;
      } else if (const auto* s = std::get_if<std::string>(&v)) {
        held[i] = *s;
      } else {
        const Bytes& b = std::get<Bytes>(v);
        held[i].assign(reinterpret_cast<const char*>(b.data()), b.size());
        formats[i] = 1;
        types[i] = kByteaOid;
      }
      if (!std::holds_alternative<std::nullptr_t>(v)) {
        values[i] = held[i].c_str();
        lengths[i] = static_cast<int>(held[i].size());
      }
    }
    return conn_.run(text.c_str(), static_cast<int>(params.size()), types.data(), values.data(),
                     lengths.data(), formats.data(), "running SQL", 0);
  }

  PgConn& conn_;
};

// --- Connection pool --------------------------------------------------------------------------

class PgPool {
 public:
  PgPool(std::shared_ptr<const PgTarget> target, StoreOptions options)
      : target_(std::move(target)), options_(std::move(options)) {}

  // A connection of the pool, handed back (rolled back; dropped when broken) when destroyed.
  class Lease {
   public:
    Lease(PgPool& pool, std::unique_ptr<PgConn> conn) : pool_(&pool), conn_(std::move(conn)) {}
    ~Lease() { pool_->release(std::move(conn_)); }
    Lease(Lease&&) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    PgConn& operator*() const noexcept { return *conn_; }
    PgConn* operator->() const noexcept { return conn_.get(); }

   private:
    PgPool* pool_;
    std::unique_ptr<PgConn> conn_;
  };

  // An idle connection that is still alive (PgConn::alive; the others are closed), else a new
  // one. Throws StorageError (kind io) when none can be made.
  Lease acquire() {
    for (;;) {
      std::unique_ptr<PgConn> conn;
      {
        std::lock_guard lock(mu_);
        if (idle_.empty()) break;
        conn = std::move(idle_.back());
        idle_.pop_back();
      }
      if (conn->alive()) return Lease(*this, std::move(conn));
    }
    return Lease(*this, std::make_unique<PgConn>(target_, options_));
  }

 private:
  void release(std::unique_ptr<PgConn> conn) noexcept {
    if (!conn) return;
    conn->rollback();
    if (!conn->ok() || conn->in_transaction()) return;  // a broken connection is dropped
    std::lock_guard lock(mu_);
    try {
      if (idle_.size() < 16) idle_.push_back(std::move(conn));
    } catch (...) {
    }
  }

  std::shared_ptr<const PgTarget> target_;
  StoreOptions options_;
  std::mutex mu_;
  std::vector<std::unique_ptr<PgConn>> idle_;
};

// --- Reads ------------------------------------------------------------------------------------

const std::string& page_sql(PageQuery::Kind kind) {
  switch (kind) {
    case PageQuery::Kind::all:
      return pg::kPageAll;
    case PageQuery::Kind::stream_forward:
      return pg::kPageStreamForward;
    case PageQuery::Kind::stream_backward:
      return pg::kPageStreamBackward;
    case PageQuery::Kind::category:
      return pg::kPageCategory;
  }
  return pg::kPageAll;
}

// One page of `query`'s rows (one statement: one snapshot).
PgResult select_page(PgConn& c, const PageQuery& query, std::size_t limit) {
  Params p;
  if (query.kind != PageQuery::Kind::all) p.text(query.key);
  p.i64(query_lower_bound(query));
  p.i64(static_cast<std::int64_t>(std::min<std::size_t>(limit, 1U << 30)));
  return p.run(c, page_sql(query.kind).c_str(), "reading events");
}

// Steps the rows of a page as views, carrying the previous hash along a read of the whole log.
template <class OnRow>
PageEnd walk_page(PgConn& c, const PageQuery& query, std::size_t limit, OnRow&& on_row) {
  const PgResult r = select_page(c, query, limit);
  const bool carrying = query.kind == PageQuery::Kind::all;
  Position carried = query.carried_position;
  Hash carried_hash = query.carried_hash;
  PageEnd end;
  EventView v;
  for (int i = 0; i < r.rows() && end.rows < limit; ++i) {
    read_view(r, i, v);
    if (carrying) {
      if (v.position == 1) {
        v.previous_hash = Hash{};
      } else if (carried != 0 && carried == v.position - 1) {
        v.previous_hash = carried_hash;
      } else {
        PgResult h = Params()
                         .i64(static_cast<std::int64_t>(v.position - 1))
                         .run(c, pg::kHashAt.c_str(), "reading the previous event's hash");
        v.previous_hash = Hash{};
        if (h.rows() == 1 && h.bytes(0, 0).size() == v.previous_hash.size()) {
          std::memcpy(v.previous_hash.data(), h.bytes(0, 0).data(), v.previous_hash.size());
        }
      }
      carried = v.position;
      carried_hash = v.hash;
    }
    ++end.rows;
    end.last_position = v.position;
    end.last_version = v.stream_version;
    end.last_hash = v.hash;
    if (!on_row(v)) {
      end.stopped = true;
      break;
    }
  }
  return end;
}

void read_events(const PgResult& r, std::vector<RecordedEvent>& out) {
  EventView v;
  for (int i = 0; i < r.rows(); ++i) {
    read_view(r, i, v);
    assign(out.emplace_back(), v);
  }
}

std::vector<RecordedEvent> read_events(const PgResult& r) {
  std::vector<RecordedEvent> out;
  read_events(r, out);
  return out;
}

// --- Writes -----------------------------------------------------------------------------------

// The columns of `e`'s row from event_id on (event_id, type, schema_version, payload, the
// metadata, recorded_at, hash), after its position, stream and version.
void add_columns(Params& p, const EventData& e, std::int64_t now, const Hash& hash) {
  const Metadata& m = e.metadata;
  p.id(e.id)
      .text(e.type)
      .i64(e.schema_version)
      .bytes(e.payload)
      .optional_id(m.correlation_id)
      .optional_id(m.causation_id)
      .optional_id(m.compensates);
  if (m.actor.empty()) {
    p.null(kTextOid);
  } else {
    p.text(m.actor);
  }
  if (m.values.empty()) {
    p.null(kByteaOid);
  } else {
    p.own_bytes(encode_values(m.values));
  }
  p.i64(now).own_bytes(std::string(reinterpret_cast<const char*>(hash.data()), hash.size()));
}

struct Tail {
  Position position = 0;
  Hash hash{};
};

struct Pending : GroupCaller {
  std::span<const AppendView> appends;
  AppendSink* sink = nullptr;
  const AppendHook* hook = nullptr;
  const std::function<void(Sql&)>* custom = nullptr;  // a write_sql
  std::vector<AppendResult> results;
  std::exception_ptr error;
  std::vector<std::function<void(AppendOutcome)>> notices;
};

bool same_optional_id(const PgResult& r, int row, int col, const std::optional<EventId>& want) {
  if (r.null(row, col)) return !want;
  const auto b = r.bytes(row, col);
  return want && b.size() == 16 && std::memcmp(b.data(), want->bytes().data(), 16) == 0;
}

bool same_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

class PgWriter {
 public:
  PgWriter(std::shared_ptr<const PgTarget> target, StoreOptions options, std::string channel)
      : target_(std::move(target)),
        options_(std::move(options)),
        channel_(std::move(channel)),
        group_commit_(std::min(options_.max_group_size, kMaxGroup)) {}

  std::vector<AppendResult> write(std::span<const AppendView> appends, AppendSink& sink,
                                  const AppendHook* hook) {
    Pending self;
    self.appends = appends;
    self.sink = &sink;
    self.hook = hook;
    enqueue(self);
    return std::move(self.results);
  }

  void write_sql(const std::function<void(Sql&)>& fn) {
    Pending self;
    self.custom = &fn;
    self.alone = true;
    enqueue(self);
  }

 private:
  class HookTransaction;

  // Queues `self` for group commit (group_commit.hpp; a write_sql runs alone) and rethrows
  // its error.
  void enqueue(Pending& self) {
    group_commit_.enqueue(
        self, [this](Pending& p) { run_custom(p); },
        [this](std::span<Pending* const> group) { commit_group(group); });
    if (self.error) std::rethrow_exception(self.error);
  }

  PgConn& conn() {
    if (!conn_ || !conn_->alive()) {
      conn_.reset();
      conn_ = std::make_unique<PgConn>(target_, options_);
    }
    return *conn_;
  }

  Tail lock_head(PgConn& c) {
    return head_row(Params().run(c, pg::kLockHead.c_str(), "locking the log's head"));
  }

  void run_custom(Pending& p) noexcept {
    cache_.valid = false;  // the SQL may write anything
    try {
      PgConn& c = conn();
      // The caller's SQL is planned as the server would by default (postgres/statements.hpp).
      c.exec(std::string("BEGIN; ") + pg::kCallerPlanner, "starting a transaction");
      try {
        lock_head(c);  // serialised with the appends of every process
        PgSql sql(c);
        (*p.custom)(sql);
        // Events written through SQL (an import) move the head row too; every write counts as
        // a commit for watchers, and wakes listeners.
        Params().text(channel_).run(
            c,
            "WITH h AS (SELECT coalesce(max(position), 0) AS position FROM events), "
            "u AS (UPDATE factum_store s SET commits = s.commits + 1, "
            "position = greatest(s.position, h.position), hash = CASE WHEN h.position > "
            "s.position THEN (SELECT hash FROM events WHERE position = h.position) ELSE s.hash "
            "END FROM h WHERE s.id = 1 RETURNING s.commits) "
            "SELECT pg_notify($1, commits::text) FROM u",
            "moving the log's head");
        c.exec("COMMIT", "committing");
      } catch (...) {
        c.rollback();
        throw;
      }
    } catch (...) {
      p.error = std::current_exception();
    }
  }

  static void notify(Pending& p, AppendOutcome outcome) noexcept {
    for (auto& notice : p.notices) {
      try {
        notice(outcome);
      } catch (...) {
        // Documented: a notice must not throw; what it throws is ignored.
      }
    }
    p.notices.clear();
  }

  static void reset(Pending& p) noexcept {
    p.results.clear();
    if (p.sink == nullptr) return;
    if (p.sink->events != nullptr) p.sink->events->clear();
    p.sink->first_written = p.sink->last_written = 0;
  }

  static void fail(Pending& p, std::exception_ptr error) noexcept {
    reset(p);
    p.error = std::move(error);
    notify(p, AppendOutcome::rolled_back);
  }

  // What the group's first round trip learns of the log before any of its appends: the stored
  // streams it names (their versions) and which of its ids (and compensated ids) are stored
  // where.
  using VersionMap = std::map<std::string, StreamVersion, std::less<>>;
  struct Known {
    struct Stored {
      std::string stream;
    };
    VersionMap streams;
    std::map<EventId, Stored> ids;
  };

  // The inserts of decided appends, sent together: the new streams' rows first, then the
  // events of every append in multi-row INSERTs of at most kRowsPerInsert rows (each row names
  // its stream: its key is looked up by the INSERT, as a new stream's row has none yet).
  class Batch {
   public:
    void add_stream(std::string_view stream) {
      streams_.emplace_back().text(stream).text(category_of(stream));
    }
    // The parameters of one more event row, to be filled with kRowParams values.
    Params& add_row() {
      if (rows_.empty() || rows_.back().count == kRowsPerInsert) rows_.emplace_back();
      ++rows_.back().count;
      return rows_.back().params;
    }
    // Sends the statements to `q` and empties the batch.
    void send(Pipeline& q) {
      for (const Params& stream : streams_) {
        q.send("INSERT INTO streams (stream_id, category) VALUES ($1, $2)", stream);
      }
      for (const Rows& rows : rows_) q.send(pg::insert_events_sql(rows.count), rows.params);
      streams_.clear();
      rows_.clear();
    }

   private:
    static constexpr std::size_t kRowParams = 14;        // pg::insert_events_sql's
    static constexpr std::size_t kRowsPerInsert = 1000;  // 14,000 of the 65,535 parameters
    struct Rows {
      Params params;
      std::size_t count = 0;
    };
    std::deque<Params> streams_;  // deques: parameters point into themselves, nothing moves
    std::deque<Rows> rows_;
  };

  // What this writer knows of the log as its last commit (or look-up) left it: exact while
  // factum_store.commits still has the value read then, since every write of every process
  // moves that counter (under the head row's lock).
  struct Cache {
    bool valid = false;
    std::int64_t commits = 0;
    Tail tail;
    VersionMap streams;  // versions of stored streams
  };
  static constexpr std::size_t kMaxCachedStreams = 100000;

  // How one attempt at a group's transaction ended.
  enum class Attempt {
    done,       // each append has its result or its own error
    isolate,    // the server refused a statement of the group, on a sound connection: nothing
                // is committed; again, with each append under a savepoint of its own
    reconnect,  // the connection broke before COMMIT was sent: nothing is committed (the
                // server rolls back a transaction whose connection ends); again, on a new one
  };

  // The group's transaction (attempt). A failure that is not an append's own (a version
  // conflict, a duplicate: those fail their append alone) fails the group unless it is one of
  // two that a second attempt can undo for the others: a statement the server refused, which
  // may be one append's data (a constraint, an encoding the database cannot hold, an index
  // row too large): the group runs again with every append step by step under its own
  // savepoint, where that append fails alone (once: a second failure fails them all); and a
  // connection found broken before COMMIT was sent (a server restart, pg_terminate_backend):
  // the group runs again, once, on a new connection.
  void commit_group(std::span<Pending* const> group) noexcept {
    const std::int64_t now = now_us();
    bool isolated = false;
    bool reconnected = false;
    for (;;) {
      const Attempt a = attempt(group, now, isolated, reconnected);
      if (a == Attempt::done) return;
      for (Pending* p : group) restart(*p);
      (a == Attempt::isolate ? isolated : reconnected) = true;
    }
  }

  // One attempt at the group's transaction. First, when this writer's cache knows every stream
  // of the group and the group is not `isolated`, in one round trip (speculate); else, or when
  // that finds the cache stale, in two round trips when no append needs more: (1) BEGIN, the
  // ordering lock, and what the appends need to know (Known); then each append is decided here,
  // its inserts queued; (2) the inserts, the head's move and COMMIT. An append that needs the
  // log as earlier appends of the group left it (the same stream or ids), a retry (its first id
  // is stored), one with on_appending slots, and every append of an `isolated` group, runs step
  // by step instead (apply), under a savepoint when the group has several appends, after the
  // queued inserts are flushed.
  Attempt attempt(std::span<Pending* const> group, std::int64_t now, bool isolated,
                  bool reconnected) noexcept {
    const bool savepoints = group.size() > 1;
    bool committing = false;               // COMMIT (or a pipeline's implicit one) was sent
    Cache next;                            // the cache if this transaction commits
    Versions decided;                      // what the decided appends leave
    std::vector<std::string_view> forget;  // streams appended step by step
    try {
      PgConn& c = conn();
      try {
        if (!isolated && speculate(c, group, now, committing)) {
          for (Pending* p : group) notify(*p, AppendOutcome::committed);
          return Attempt::done;
        }
        committing = false;  // a speculation that did not commit was rolled back
        Known known;
        Tail tail = begin_group(c, group, known, next.commits);
        if (cache_.valid && cache_.commits == next.commits)
          next.streams = std::move(cache_.streams);
        cache_.valid = false;
        if (next.streams.size() + known.streams.size() > kMaxCachedStreams) next.streams.clear();
        for (const auto& [id, stream] : known.streams) next.streams[id] = stream;
        const Position start = tail.position;
        Pipeline queued(c);
        Batch batch;                                 // decided appends' inserts, not yet sent
        std::set<std::string, std::less<>> touched;  // streams appended in this group
        std::set<EventId> written;                   // ids appended in this group
        bool stepwise = isolated;  // once an append ran step by step, Known is stale: all do
        for (Pending* p : group) {
          const Tail before = tail;
          stepwise = stepwise || !decidable(*p, known, touched, written);
          for (const AppendView& a : p->appends) {
            touched.emplace(a.stream);
            for (const EventData& e : a.events) written.insert(e.id);
          }
          if (!stepwise) {
            try {
              decide(*p, known, batch, tail, now);
              remember(*p, decided);
            } catch (...) {
              fail(*p, std::current_exception());
              tail = before;
            }
            continue;
          }
          // What a step-by-step append did (a retry, slots that write) is not cached.
          for (const AppendView& a : p->appends) forget.push_back(a.stream);
          batch.send(queued);
          queued.run("appending events");
          if (savepoints) c.exec("SAVEPOINT factum_append", "appending");
          try {
            apply(c, *p, tail, now);
            if (savepoints) c.exec("RELEASE SAVEPOINT factum_append", "appending");
          } catch (...) {
            fail(*p, std::current_exception());
            tail = before;
            if (!c.ok() || !savepoints) throw;
            c.exec("ROLLBACK TO SAVEPOINT factum_append; RELEASE SAVEPOINT factum_append",
                   "undoing a failed append");
          }
        }
        batch.send(queued);
        if (tail.position != start) {
          Params head;
          head.i64(static_cast<std::int64_t>(tail.position))
              .bytes(tail.hash.data(), tail.hash.size())
              .text(channel_);
          queued.send(
              "WITH u AS (UPDATE factum_store SET position = $1, hash = $2, "
              "commits = commits + 1 WHERE id = 1 RETURNING commits) "
              "SELECT pg_notify($3, commits::text), commits FROM u",
              head);
        }
        queued.send("COMMIT", Params());
        committing = true;
        std::vector<PgResult> r;
        try {
          r = queued.run("committing appends");
        } catch (const StorageError&) {
          if (c.ok()) throw;
          throw unknown_outcome();
        }
        // Committed. The cache is kept when the head row's answer is sound.
        next.valid = tail.position == start || (r.size() >= 2 && r[r.size() - 2].rows() == 1 &&
                                                r[r.size() - 2].int64(0, 1, next.commits));
        next.tail = tail;
        for (const auto& [stream, version] : decided) next.streams[std::string(stream)] = version;
        for (std::string_view stream : forget) {
          if (const auto it = next.streams.find(stream); it != next.streams.end()) {
            next.streams.erase(it);
          }
        }
        cache_ = std::move(next);
      } catch (...) {
        c.rollback();
        throw;
      }
    } catch (...) {
      const Attempt again =
          next_attempt(std::current_exception(), group.size(), committing, isolated, reconnected);
      if (again != Attempt::done) return again;
      for (Pending* p : group) {
        if (!p->error) fail(*p, std::current_exception());
      }
      return Attempt::done;
    }
    for (Pending* p : group) {
      if (!p->error) notify(*p, AppendOutcome::committed);
    }
    return Attempt::done;
  }

  // Whether a failed attempt is tried again (see commit_group), and how.
  Attempt next_attempt(const std::exception_ptr& error, std::size_t members, bool committing,
                       bool isolated, bool reconnected) noexcept {
    if (!conn_) return Attempt::done;  // no connection could be made
    if (!conn_->ok()) {
      if (committing || reconnected) return Attempt::done;
      conn_.reset();
      return Attempt::reconnect;
    }
    if (isolated || members < 2) return Attempt::done;
    try {
      std::rethrow_exception(error);
    } catch (const StorageError& e) {
      if (e.kind() == StorageError::Kind::other) return Attempt::isolate;
    } catch (...) {
    }
    return Attempt::done;
  }

  // Before another attempt: what the last one did to `p` is undone (its slots hear so).
  static void restart(Pending& p) noexcept {
    notify(p, AppendOutcome::rolled_back);
    reset(p);
    p.error = nullptr;
  }

  StorageError unknown_outcome() const {
    return StorageError(StorageError::Kind::io,
                        "factum: the connection to '" + target_->shown +
                            "' broke during COMMIT: the append's outcome is unknown; "
                            "retry the same batch (retries are idempotent)");
  }

  // Stream versions that decided appends leave (streams are the appends' own strings).
  using Versions = std::vector<std::pair<std::string_view, StreamVersion>>;

  // Adds to `out` the stream versions that p's appends (decided, not yet committed) leave.
  static void remember(const Pending& p, Versions& out) {
    for (std::size_t i = 0; i < p.appends.size() && i < p.results.size(); ++i) {
      out.emplace_back(p.appends[i].stream, p.results[i].stream_version);
    }
  }

  // The group in one round trip, when the cache knows each of its streams and each append could
  // be decided from it (no slots, no compensations, each stream once), as one implicit
  // transaction: a guard that moves the head only if factum_store.commits is still the cached
  // value and divides by zero otherwise (the UPDATE waits for the head row's lock, and re-reads
  // the row once it has it), then the inserts. A stale cache (another writer committed) or a stored
  // id (a retry, a duplicate: the unique indexes refuse it) aborts the transaction: then nothing of
  // the group is stored, the cache is dropped, and false sends the group the careful way. A broken
  // connection throws (the outcome is unknown only if it broke after the statements were sent).
  // `committing` is set once the pipeline's sync (its commit) is sent.
  bool speculate(PgConn& c, std::span<Pending* const> group, std::int64_t now, bool& committing) {
    if (!cache_.valid) return false;
    Known known;
    for (const Pending* p : group) {
      if (p->hook != nullptr) return false;
      for (const AppendView& a : p->appends) {
        const auto it = cache_.streams.find(a.stream);
        if (it == cache_.streams.end() || !a.expected.matches(it->second) ||
            !known.streams.emplace(it->first, it->second).second) {
          return false;
        }
        for (const EventData& e : a.events) {
          if (e.metadata.compensates) return false;
        }
      }
    }
    Versions decided;
    Tail tail = cache_.tail;
    Batch batch;
    try {
      for (Pending* p : group) {
        decide(*p, known, batch, tail, now);
        remember(*p, decided);
      }
    } catch (...) {
      for (Pending* p : group) reset(*p);
      return false;  // the careful way reports it
    }
    // No BEGIN and COMMIT: the statements before a pipeline's sync run in one implicit
    // transaction, committed at the sync, rolled back whole when one of them fails.
    Pipeline q(c);
    Params guard;
    guard.i64(cache_.commits)
        .i64(static_cast<std::int64_t>(tail.position))
        .bytes(tail.hash.data(), tail.hash.size())
        .text(channel_);
    q.send(
        "WITH u AS (UPDATE factum_store SET position = $2, hash = $3, commits = commits + 1 "
        "WHERE id = 1 AND commits = $1 RETURNING commits) "
        "SELECT 1 / count(*), pg_notify($4, max(commits)::text), max(commits) FROM u",
        guard);
    batch.send(q);
    PgResult failed;
    std::vector<PgResult> r;
    committing = true;
    try {
      r = q.run("committing appends", &failed);
    } catch (const StorageError&) {
      if (c.ok()) throw;
      throw unknown_outcome();
    }
    if (failed.get() != nullptr) {
      const char* state = libpq().PQresultErrorField(failed.get(), PG_DIAG_SQLSTATE);
      const std::string_view code = state != nullptr ? state : "";
      c.rollback();
      cache_.valid = false;
      for (Pending* p : group) reset(*p);
      if (code == "22012" || code == "23505") return false;  // stale cache, stored id
      c.fail(failed.get(), "appending events");
    }
    std::int64_t commits = 0;
    if (r.empty() || r[0].rows() != 1 || !r[0].int64(0, 2, commits)) {
      cache_.valid = false;  // committed, but the head's answer is malformed
      return true;
    }
    cache_.commits = commits;
    cache_.tail = tail;
    for (const auto& [stream, version] : decided) cache_.streams.find(stream)->second = version;
    return true;
  }

  // Round trip 1: BEGIN, the lock, the streams and ids the group names. Returns the head, and
  // factum_store.commits in `commits`.
  Tail begin_group(PgConn& c, std::span<Pending* const> group, Known& known,
                   std::int64_t& commits) {
    std::string streams;
    std::string ids;
    static constexpr char kHex[] = "0123456789abcdef";
    const auto add_id = [&](const EventId& id) {
      if (!ids.empty()) ids.push_back(',');
      for (std::uint8_t byte : id.bytes()) {
        ids.push_back(kHex[byte >> 4]);
        ids.push_back(kHex[byte & 0xf]);
      }
    };
    for (const Pending* p : group) {
      for (const AppendView& a : p->appends) {
        if (!streams.empty()) streams.push_back('\n');  // stream ids hold no control characters
        streams += a.stream;
        for (const EventData& e : a.events) {
          add_id(e.id);
          if (e.metadata.compensates) add_id(*e.metadata.compensates);
        }
      }
    }
    Pipeline first(c);
    first.send("BEGIN", Params());
    first.send(pg::kLockHead, Params());
    Params stream_params;
    stream_params.own(std::move(streams));
    first.send(pg::kStreamsNamed, stream_params);
    Params id_params;
    id_params.own(std::move(ids));
    first.send(pg::kIdsStored, id_params);
    const std::vector<PgResult> r = first.run("locking the log's head");
    const Tail tail = head_row(r[1]);
    if (!r[1].int64(0, 2, commits)) bad_head();
    for (int i = 0; i < r[2].rows(); ++i) {
      known.streams[std::string(r[2].text(i, 0))] =
          static_cast<StreamVersion>(r[2].int64_or(i, 1, 0));
    }
    for (int i = 0; i < r[3].rows(); ++i) {
      std::optional<EventId> id;
      if (r[3].null(i, 1)) continue;  // not stored
      if (read_id(r[3], i, 0, id) && id) known.ids[*id] = {std::string(r[3].text(i, 1))};
    }
    return tail;
  }

  // True when `p` can be decided from `known`: no slots, no stream or id appended earlier in the
  // group (or a stream twice in `p`), and its first ids are not stored (a retry, or a
  // duplicate to report as apply does).
  static bool decidable(const Pending& p, const Known& known,
                        const std::set<std::string, std::less<>>& touched,
                        const std::set<EventId>& written) {
    if (p.hook != nullptr) return false;
    std::set<std::string_view> mine;
    for (const AppendView& a : p.appends) {
      if (touched.count(a.stream) != 0 || !mine.insert(a.stream).second) return false;
      if (known.ids.count(a.events.front().id) != 0) return false;
      for (const EventData& e : a.events) {
        if (written.count(e.id) != 0) return false;
      }
    }
    return true;
  }

  // Decides `p` as apply would, from `known`, and adds its inserts to `out`. Throws what apply
  // throws; then nothing of `p` is added.
  void decide(Pending& p, const Known& known, Batch& out, Tail& tail, std::int64_t now) {
    // Every check first, so that nothing of `p` is added to `out` when one fails.
    for (const AppendView& a : p.appends) {
      const auto stream = known.streams.find(a.stream);
      const StreamVersion current = stream != known.streams.end() ? stream->second : 0;
      if (!a.expected.matches(current)) {
        for (const EventData& e : a.events.subspan(1)) {
          const auto stored = known.ids.find(e.id);
          if (stored != known.ids.end()) duplicate(e.id, a.stream, stored->second.stream);
        }
        throw ConcurrencyError(std::string(a.stream), a.expected.to_string(), current);
      }
      for (std::size_t i = 0; i < a.events.size(); ++i) {
        const EventData& e = a.events[i];
        if (const auto stored = known.ids.find(e.id); stored != known.ids.end()) {
          duplicate(e.id, a.stream, stored->second.stream);
        }
        if (e.metadata.compensates) {
          const auto target = known.ids.find(*e.metadata.compensates);
          const bool earlier_here =
              std::any_of(a.events.begin(), a.events.begin() + static_cast<std::ptrdiff_t>(i),
                          [&](const EventData& x) { return x.id == *e.metadata.compensates; });
          if (!earlier_here && (target == known.ids.end() || target->second.stream != a.stream)) {
            throw InvalidArgument("factum: event " + e.id.to_string() + " of stream '" +
                                  std::string(a.stream) + "' compensates " +
                                  e.metadata.compensates->to_string() +
                                  ", which is not an event of that stream");
          }
        }
      }
    }
    std::vector<AppendResult> results;
    results.reserve(p.appends.size());
    std::vector<RecordedEvent>* committed = p.sink->events;
    Tail t = tail;
    for (const AppendView& a : p.appends) {
      const auto stream = known.streams.find(a.stream);
      StreamVersion version = stream != known.streams.end() ? stream->second : 0;
      if (stream == known.streams.end()) out.add_stream(a.stream);
      AppendResult result;
      result.first_position = t.position + 1;
      for (const EventData& e : a.events) {
        const EventFields f = event_fields(a.stream, e, t.position + 1, ++version, now);
        const Hash hash = hasher_(t.hash, f);
        Params& row = out.add_row();
        row.text(a.stream)
            .i64(static_cast<std::int64_t>(f.position))
            .i64(static_cast<std::int64_t>(f.stream_version));
        add_columns(row, e, now, hash);
        if (committed != nullptr) committed->push_back(recorded_of(f, hash, t.hash));
        t = {f.position, hash};
      }
      result.stream_version = version;
      result.last_position = t.position;
      results.push_back(result);
    }
    p.results = std::move(results);
    if (t.position > tail.position) {
      p.sink->first_written = tail.position + 1;
      p.sink->last_written = t.position;
    }
    tail = t;
  }

  [[noreturn]] static void duplicate(const EventId& id, std::string_view stream,
                                     const std::string& where) {
    throw DuplicateEventError(id.to_string(), std::string(stream),
                              "is stored already in stream '" + where + "'");
  }

  [[noreturn]] void bad_head() const {
    throw StorageError(StorageError::Kind::corrupt,
                       "factum: the store of '" + target_->shown +
                           "' is damaged: its factum_store row is missing or malformed");
  }

  Tail head_row(const PgResult& r) const {
    std::int64_t position = 0;
    if (r.rows() != 1 || !r.int64(0, 0, position) || position < 0) bad_head();
    return {static_cast<Position>(position),
            hash_of(r.bytes(0, 1), static_cast<Position>(position))};
  }

  void apply(PgConn& c, Pending& p, Tail& tail, std::int64_t now) {
    p.results.clear();
    p.results.reserve(p.appends.size());
    const Position start = tail.position;
    for (const AppendView& a : p.appends) {
      if (p.hook == nullptr) {
        p.results.push_back(apply_one(c, a, tail, now, p.sink->events));
      } else {
        std::vector<RecordedEvent> events;
        p.results.push_back(apply_one(c, a, tail, now, &events));
        run_hook(c, p, events);
      }
    }
    if (tail.position > start) {
      p.sink->first_written = start + 1;
      p.sink->last_written = tail.position;
    }
  }

  void run_hook(PgConn& c, Pending& p, std::vector<RecordedEvent>& events);

  AppendResult apply_one(PgConn& c, const AppendView& a, Tail& tail, std::int64_t now,
                         std::vector<RecordedEvent>* committed) {
    std::optional<std::int64_t> key;
    StreamVersion current = 0;
    {
      PgResult r =
          Params().text(a.stream).run(c, pg::kStreamKeyAndVersion.c_str(), "looking up a stream");
      if (r.rows() == 1) {
        key = r.int64_or(0, 0, 0);
        current = static_cast<StreamVersion>(r.int64_or(0, 1, 0));
      }
    }
    if (auto retry = find_retry(c, a, key)) return *retry;
    if (!a.expected.matches(current)) {
      for (const EventData& e : a.events.subspan(1)) {
        if (stored_in(c, e.id)) throw_duplicate(c, e.id, a.stream);
      }
      throw ConcurrencyError(std::string(a.stream), a.expected.to_string(), current);
    }
    if (!key) {
      PgResult r = Params()
                       .text(a.stream)
                       .text(category_of(a.stream))
                       .run(c,
                            "INSERT INTO streams (stream_id, category) VALUES ($1, $2) "
                            "RETURNING stream_key",
                            "creating a stream");
      key = r.int64_or(0, 0, 0);
    }
    AppendResult result;
    result.first_position = tail.position + 1;
    StreamVersion version = current;
    if (committed != nullptr && committed->empty()) committed->reserve(a.events.size());
    for (const EventData& e : a.events) {
      check_compensates(c, e, *key, a.stream);
      const EventFields f = event_fields(a.stream, e, tail.position + 1, ++version, now);
      const Hash hash = hasher_(tail.hash, f);
      Params params;
      params.i64(static_cast<std::int64_t>(f.position))
          .i64(*key)
          .i64(static_cast<std::int64_t>(f.stream_version));
      add_columns(params, e, now, hash);
      // An id stored in another stream does not raise (which would abort the transaction):
      // the insert returns no row, and the duplicate is reported.
      PgResult r = params.run(c,
                              "INSERT INTO events (position, stream_key, stream_version, "
                              "event_id, type, schema_version, payload, correlation_id, "
                              "causation_id, compensates, actor, extra, recorded_at, hash) "
                              "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
                              "$14) ON CONFLICT (event_id) DO NOTHING RETURNING position",
                              "appending an event");
      if (r.rows() != 1) throw_duplicate(c, e.id, a.stream);
      if (committed != nullptr) committed->push_back(recorded_of(f, hash, tail.hash));
      tail = {f.position, hash};
    }
    result.stream_version = version;
    result.last_position = tail.position;
    return result;
  }

  // A batch whose first id is stored already is either a retry (all ids stored contiguously,
  // in order, in this stream, with the same content: the first try's result) or a duplicate.
  std::optional<AppendResult> find_retry(PgConn& c, const AppendView& a,
                                         std::optional<std::int64_t> key) {
    const EventData& first = a.events.front();
    PgResult r = Params().id(first.id).run(c, pg::kEventOfId.c_str(), "looking up an event id");
    if (r.rows() == 0) return std::nullopt;
    if (!key || r.int64_or(0, 1, 0) != *key) {
      throw DuplicateEventError(first.id.to_string(), std::string(a.stream),
                                "is stored already in stream '" + std::string(r.text(0, 3)) + "'");
    }
    const auto first_position = static_cast<Position>(r.int64_or(0, 0, 0));
    const auto first_version = static_cast<StreamVersion>(r.int64_or(0, 2, 0));
    PgResult rows =
        Params()
            .i64(*key)
            .i64(static_cast<std::int64_t>(first_version))
            .i64(static_cast<std::int64_t>(a.events.size()))
            .run(c,
                 "SELECT event_id, position, type, schema_version, payload, correlation_id, "
                 "causation_id, compensates, actor, extra FROM events WHERE stream_key = $1 "
                 "AND stream_version >= $2 ORDER BY stream_version LIMIT $3",
                 "checking a retried batch");
    AppendResult result{first_version, first_position, first_position};
    std::size_t matched = 0;
    std::string extra;
    for (int i = 0; i < rows.rows() && matched < a.events.size(); ++i) {
      const EventData& want = a.events[matched];
      const auto id = rows.bytes(i, 0);
      if (id.size() != 16 || std::memcmp(id.data(), want.id.bytes().data(), 16) != 0) break;
      const Metadata& m = want.metadata;
      extra = m.values.empty() ? std::string() : encode_values(m.values);
      const auto extra_bytes = std::span<const std::byte>(
          reinterpret_cast<const std::byte*>(extra.data()), extra.size());
      const bool same =
          rows.text(i, 2) == want.type &&
          rows.int64_or(i, 3, -1) == std::int64_t{want.schema_version} &&
          same_bytes(rows.bytes(i, 4), want.payload) &&
          same_optional_id(rows, i, 5, m.correlation_id) &&
          same_optional_id(rows, i, 6, m.causation_id) &&
          same_optional_id(rows, i, 7, m.compensates) && rows.text(i, 8) == m.actor &&
          (m.values.empty() ? rows.null(i, 9) : same_bytes(rows.bytes(i, 9), extra_bytes));
      if (!same) {
        throw DuplicateEventError(want.id.to_string(), std::string(a.stream),
                                  "is stored already with other content (type, schema version, "
                                  "payload or metadata differ): a retry must repeat the same "
                                  "events, and a new event needs a new id");
      }
      result.stream_version = first_version + matched;
      result.last_position = static_cast<Position>(rows.int64_or(i, 1, 0));
      ++matched;
    }
    if (matched != a.events.size()) {
      throw DuplicateEventError(first.id.to_string(), std::string(a.stream),
                                "is stored already, but the batch only partly matches the events "
                                "stored with it (a retry must repeat the whole batch)");
    }
    return result;
  }

  // The stream the event `id` is stored in, if it is.
  std::optional<std::string> stored_in(PgConn& c, const EventId& id) {
    PgResult r = Params().id(id).run(c, pg::kStreamOfId.c_str(), "looking up an event id");
    if (r.rows() == 0) return std::nullopt;
    return std::string(r.text(0, 0));
  }

  [[noreturn]] void throw_duplicate(PgConn& c, const EventId& id, std::string_view stream) {
    const auto where = stored_in(c, id);
    throw DuplicateEventError(id.to_string(), std::string(stream),
                              "is stored already" + (where ? " in stream '" + *where + "'" : ""));
  }

  void check_compensates(PgConn& c, const EventData& e, std::int64_t key, std::string_view stream) {
    if (!e.metadata.compensates) return;
    PgResult r = Params()
                     .id(*e.metadata.compensates)
                     .run(c, "SELECT stream_key FROM events WHERE event_id = $1",
                          "looking up a compensated event");
    if (r.rows() == 1 && r.int64_or(0, 0, 0) == key) return;
    throw InvalidArgument("factum: event " + e.id.to_string() + " of stream '" +
                          std::string(stream) + "' compensates " +
                          e.metadata.compensates->to_string() +
                          ", which is not an event of that stream");
  }

  std::shared_ptr<const PgTarget> target_;
  StoreOptions options_;
  std::string channel_;
  std::unique_ptr<PgConn> conn_;  // the leader's (one leader at a time)
  ChainHasher hasher_;            // the leader's
  Cache cache_;                   // the leader's
  GroupCommit<Pending> group_commit_;
};

// What an on_appending slot sees: the writer's connection, mid-transaction.
class PgWriter::HookTransaction final : public AppendTransaction {
 public:
  HookTransaction(PgConn& conn, Pending& pending, std::span<const RecordedEvent> events)
      : conn_(conn), pending_(pending), events_(events), sql_(conn) {}
  std::span<const RecordedEvent> events() const override { return events_; }
  Sql& sql() override { return sql_; }
  std::vector<RecordedEvent> read_log(Position from, std::size_t limit) override {
    std::vector<RecordedEvent> out;
    const Position before = events_.front().position;
    if (from >= before || limit == 0) return out;
    // Planned as factum's own statements are (the slot's SQL runs under the server's defaults).
    conn_.exec(pg::kFactumPlanner, "reading the log inside an append");
    PgResult r = Params()
                     .i64(static_cast<std::int64_t>(from))
                     .i64(static_cast<std::int64_t>(before))
                     .i64(static_cast<std::int64_t>(std::min<std::size_t>(limit, 1U << 30)))
                     .run(conn_, pg::kLogRange.c_str(), "reading the log inside an append");
    conn_.exec(pg::kCallerPlanner, "reading the log inside an append");
    read_events(r, out);
    return out;
  }
  void on_outcome(std::function<void(AppendOutcome)> notice) override {
    pending_.notices.push_back(std::move(notice));
  }

 private:
  PgConn& conn_;
  Pending& pending_;
  std::span<const RecordedEvent> events_;
  PgSql sql_;
};

void PgWriter::run_hook(PgConn& c, Pending& p, std::vector<RecordedEvent>& events) {
  if (events.empty()) return;  // a retry: nothing written
  HookTransaction tx(c, p, events);
  // The slots' SQL is planned as the server would by default; the rest of the group's
  // statements as factum's (postgres/statements.hpp). When a slot throws, the savepoint around
  // its append (or the group's rollback) undoes the setting with the rest.
  c.exec(pg::kCallerPlanner, "running on_appending slots");
  (*p.hook)(tx);
  c.exec(pg::kFactumPlanner, "running on_appending slots");
  if (p.sink->events != nullptr) {
    std::move(events.begin(), events.end(), std::back_inserter(*p.sink->events));
  }
}

// --- Watching ---------------------------------------------------------------------------------

// PRAGMA data_version's counterpart: factum_store.commits, which every commit that writes
// (an append, a write_sql) increments under the ordering lock. changed() reads it on a
// connection of its own: one indexed read of one row, exact (a NOTIFY, which each commit also
// sends, can still be in flight when an append returns, so it cannot answer alone). A broken
// connection is reopened and reported as a change (commits may have been missed meanwhile).
// push(): a thread of its own LISTENs on the store's channel (every commit that writes sends a
// NOTIFY there, delivered at its COMMIT) on a connection of its own, and calls `wake` for each
// batch of notifications that arrives; when that connection fails it calls `wake` (commits may
// have been missed), pauses (10 ms, doubling up to 1 s) and connects again. A self-pipe stops it.
class CommitListener {
 public:
  CommitListener(std::shared_ptr<const PgTarget> target, StoreOptions options, std::string channel,
                 std::function<void()> wake)
      : target_(std::move(target)),
        options_(std::move(options)),
        channel_(std::move(channel)),
        wake_(std::move(wake)) {
    if (::pipe2(stop_.data(), O_CLOEXEC | O_NONBLOCK) != 0) {
      throw std::system_error(errno, std::generic_category(), "factum: a pipe for a listener");
    }
    try {
      thread_ = std::thread([this] { run(); });
    } catch (...) {
      close_pipe();
      throw;
    }
  }
  ~CommitListener() {
    const char byte = 0;
    while (::write(stop_[1], &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
    close_pipe();
  }
  CommitListener(const CommitListener&) = delete;
  CommitListener& operator=(const CommitListener&) = delete;

 private:
  void close_pipe() noexcept {
    ::close(stop_[0]);
    ::close(stop_[1]);
  }

  // Waits until `fd` is readable or the stop pipe is (or `timeout_ms` passes; -1: no limit).
  // Returns false when stopping.
  bool await(int fd, int timeout_ms) const noexcept {
    std::array<pollfd, 2> fds{pollfd{stop_[0], POLLIN, 0}, pollfd{fd, POLLIN, 0}};
    const nfds_t n = fd >= 0 ? 2 : 1;
    while (::poll(fds.data(), n, timeout_ms) < 0) {
      if (errno != EINTR) return true;  // the caller's next read fails and reconnects
    }
    return fds[0].revents == 0;
  }

  void run() noexcept {
    int pause_ms = 10;
    for (;;) {
      try {
        PgConn conn(target_, options_);
        conn.exec("LISTEN " + channel_, "listening for commits");
        pause_ms = 10;
        wake_();  // commits between the watcher's baseline and the LISTEN
        for (;;) {
          const int socket = libpq().PQsocket(conn.get());
          if (socket < 0) break;
          if (!await(socket, -1)) return;
          if (libpq().PQconsumeInput(conn.get()) == 0) break;
          bool notified = false;
          while (PGnotify* n = libpq().PQnotifies(conn.get())) {
            notified = true;
            libpq().PQfreemem(n);
          }
          if (notified) wake_();
        }
      } catch (...) {
        // Cannot connect or LISTEN now: woken below, tried again after the pause.
      }
      wake_();  // commits may have come while the connection was gone
      if (!await(-1, pause_ms)) return;
      pause_ms = std::min(pause_ms * 2, 1000);
    }
  }

  std::shared_ptr<const PgTarget> target_;
  StoreOptions options_;
  std::string channel_;
  std::function<void()> wake_;
  std::array<int, 2> stop_{-1, -1};
  std::thread thread_;
};

class CommitWatcher final : public LogWatcher {
 public:
  CommitWatcher(std::shared_ptr<const PgTarget> target, StoreOptions options, std::string channel)
      : target_(std::move(target)), options_(std::move(options)), channel_(std::move(channel)) {
    connect();
  }

  bool push(std::function<void()> wake) override {
    listener_ = std::make_unique<CommitListener>(target_, options_, channel_, std::move(wake));
    return true;
  }

  bool changed() override {
    if (!conn_ || !conn_->alive()) {
      connect();
      return std::exchange(armed_, true);
    }
    std::int64_t now = 0;
    try {
      now = read_commits();
    } catch (const StorageError&) {
      if (conn_->ok()) throw;
      connect();
      return std::exchange(armed_, true);
    }
    const bool moved = now != seen_;
    seen_ = now;
    return std::exchange(armed_, true) && moved;
  }

 private:
  std::int64_t read_commits() {
    PgResult r = Params().run(*conn_, "SELECT commits FROM factum_store WHERE id = 1",
                              "reading the store's commit counter");
    return r.rows() == 1 ? r.int64_or(0, 0, 0) : 0;
  }

  void connect() {
    conn_.reset();
    conn_ = std::make_unique<PgConn>(target_, options_);
    seen_ = read_commits();
  }

  std::shared_ptr<const PgTarget> target_;
  StoreOptions options_;
  std::string channel_;
  std::unique_ptr<PgConn> conn_;
  std::int64_t seen_ = 0;  // the commit count answered for
  bool armed_ = false;     // false until the first call, which only takes the baseline
  std::unique_ptr<CommitListener> listener_;  // push()'s, stopped first
};

// --- The storage ------------------------------------------------------------------------------

class PostgresStorage final : public Storage {
 public:
  PostgresStorage(std::shared_ptr<const PgTarget> target, const StoreOptions& options)
      : target_(std::move(target)), options_(options), readers_(target_, options) {
    auto c = readers_.acquire();
    channel_ = channel_of(prepare_schema(*c, options));
    if (!options.read_only) writer_ = std::make_unique<PgWriter>(target_, options, channel_);
  }

  // Text the server cannot hold is refused here, on the caller's thread: it never reaches a
  // commit group, where the server would refuse it for the whole group.
  std::vector<AppendResult> append(std::span<const AppendView> appends, AppendSink& sink,
                                   const AppendHook* hook) override {
    for (const AppendView& a : appends) validate_server_text(a.stream, a.events);
    return writer("append to")->write(appends, sink, hook);
  }

  void read_page(const PageQuery& query, std::size_t limit,
                 std::vector<RecordedEvent>& page) override {
    if (!storable(query)) {
      page.clear();
      return;
    }
    read([&](PgConn& c) {
      std::size_t n = 0;
      try {
        walk_page(c, query, limit, [&](const EventView& v) {
          if (n == page.size()) page.emplace_back();
          assign(page[n++], v);
          return true;
        });
      } catch (...) {
        page.clear();
        throw;
      }
      page.resize(n);
    });
  }

  PageEnd visit_page(const PageQuery& query, std::size_t limit, const ViewVisitor& visit) override {
    if (!storable(query)) return {};
    bool visited = false;  // then a second try would hand `visit` some rows twice
    return read(
        [&](PgConn& c) {
          return walk_page(c, query, limit, [&](const EventView& v) {
            visited = true;
            return visit(v);
          });
        },
        &visited);
  }

  StreamVersion stream_version(std::string_view stream) override {
    if (!is_server_text(stream)) return 0;  // no such stream can be stored
    return read([&](PgConn& c) {
      PgResult r =
          Params().text(stream).run(c, pg::kStreamVersion.c_str(), "reading a stream's version");
      return static_cast<StreamVersion>(r.rows() == 1 ? r.int64_or(0, 0, 0) : 0);
    });
  }

  Head head() override {
    return read([&](PgConn& c) {
      PgResult r = Params().run(c, pg::kHead.c_str(), "reading the log's head");
      if (r.rows() == 0) return Head{};
      const auto position = static_cast<Position>(r.int64_or(0, 0, 0));
      return head_of(position, r.bytes(0, 1));
    });
  }

  LogEnd log_end() override {
    auto c = readers_.acquire();
    // One statement, one snapshot: the head row the writer keeps and the last stored event.
    PgResult r = Params().run(*c,
                              "SELECT coalesce((SELECT position FROM factum_store WHERE id = 1), "
                              "0), coalesce((SELECT max(position) FROM events), 0)",
                              "reading where the log ends");
    if (r.rows() == 0) return {};
    return {static_cast<Position>(std::max<std::int64_t>(r.int64_or(0, 0, 0), 0)),
            static_cast<Position>(std::max<std::int64_t>(r.int64_or(0, 1, 0), 0))};
  }

  std::optional<RecordedEvent> read_event(const EventId& id) override {
    std::vector<RecordedEvent> out = read([&](PgConn& c) {
      return read_events(Params().id(id).run(c, pg::kEventById.c_str(), "reading an event"));
    });
    if (out.empty()) return std::nullopt;
    return std::move(out.front());
  }

  std::vector<RecordedEvent> compensations_of(const EventId& id) override {
    return read([&](PgConn& c) {
      return read_events(
          Params().id(id).run(c, pg::kCompensationsOf.c_str(), "reading compensations"));
    });
  }

  VerifyResult verify(const Hash* expected_head,
                      const std::function<void(Position)>& on_progress) override {
    // One snapshot for everything below, however many appends commit meanwhile.
    auto c = begin_read("verifying the hash chain");
    ChainWalk walk(expected_head);
    PgResult counts =
        Params().run(*c, "SELECT count(*), min(position) FROM events", "counting the events");
    const std::int64_t rows = counts.int64_or(0, 0, 0);
    if (rows > 0 && counts.int64_or(0, 1, 1) < 1) return walk.unchained(counts.int64_or(0, 1, 1));
    EventView event;
    for (;;) {
      PgResult page = Params()
                          .i64(static_cast<std::int64_t>(walk.next()))
                          .i64(kVerifyPage)
                          .run(*c, pg::kPageVerify.c_str(), "verifying the hash chain");
      for (int i = 0; i < page.rows(); ++i) {
        const char* problem = decode(page, i, event);
        const std::string_view category =
            page.null(i, kPreviousHash + 1) ? std::string_view() : page.text(i, kPreviousHash + 1);
        if (!walk.check(problem, event, static_cast<Position>(page.int64_or(i, kPosition, 0)),
                        category)) {
          return walk.result();
        }
      }
      if (page.rows() < kVerifyPage) break;
      if (on_progress) on_progress(walk.result().events_checked);
    }
    PgResult store = Params().run(*c, "SELECT position FROM factum_store WHERE id = 1",
                                  "reading the log's head");
    const auto written = static_cast<Position>(std::max<std::int64_t>(store.int64_or(0, 0, 0), 0));
    const VerifyResult r = walk.finish(written, rows);
    if (!r.ok()) return r;
    PgResult empty = Params().run(*c,
                                  "SELECT stream_id FROM streams s WHERE NOT EXISTS "
                                  "(SELECT 1 FROM events e WHERE e.stream_key = s.stream_key) "
                                  "LIMIT 1",
                                  "checking the streams");
    if (empty.rows() > 0) return walk.empty_stream(empty.text(0, 0));
    c->exec("COMMIT", "verifying the hash chain");
    return r;
  }

  void write_sql(const std::function<void(Sql&)>& fn) override {
    writer("write to")->write_sql(fn);
  }

  void read_sql(const std::function<void(Sql&)>& fn) override {
    // The caller's SQL is planned as the server would by default (postgres/statements.hpp).
    auto c = begin_read("starting a read transaction", pg::kCallerPlanner);
    PgSql sql(*c);
    fn(sql);
    c->exec("COMMIT", "ending a read transaction");
  }

  std::unique_ptr<LogWatcher> watch() override {
    return std::make_unique<CommitWatcher>(target_, options_, channel_);
  }

 private:
  // Runs `fn` on a pooled connection and returns what it returns. When the connection turns out
  // broken (the server ended it: a restart, pg_terminate_backend), runs it once more on a new
  // one, as a read changes nothing; unless `*started` says that `fn` has handed rows to its
  // caller already. `fn` must leave nothing behind when it throws.
  template <class Fn>
  std::invoke_result_t<const Fn&, PgConn&> read(const Fn& fn, const bool* started = nullptr) {
    for (int attempt = 0;; ++attempt) {
      auto c = readers_.acquire();
      try {
        return fn(*c);
      } catch (const StorageError&) {
        if (attempt > 0 || c->ok() || (started != nullptr && *started)) throw;
      }
    }
  }

  // A pooled connection in a REPEATABLE READ READ ONLY transaction, with `settings` (SQL run in
  // the same round trip) when not null; begun again on a new connection when the first turns out
  // broken, as read() does.
  PgPool::Lease begin_read(std::string_view doing, const char* settings = nullptr) {
    const std::string begin = std::string("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") +
                              (settings != nullptr ? std::string("; ") + settings : "");
    for (int attempt = 0;; ++attempt) {
      auto c = readers_.acquire();
      try {
        c->exec(begin, doing);
        return c;
      } catch (const StorageError&) {
        if (attempt > 0 || c->ok()) throw;
      }
    }
  }

  // False when `query` names a stream or category no PostgreSQL store can hold (its key is
  // not server text): it has no events, and the server would refuse the key.
  static bool storable(const PageQuery& query) noexcept {
    return query.kind == PageQuery::Kind::all || is_server_text(query.key);
  }

  PgWriter* writer(const char* doing) {
    if (!writer_) {
      throw StorageError(StorageError::Kind::read_only, "factum: cannot " + std::string(doing) +
                                                            " '" + target_->shown +
                                                            "': the store was opened read-only");
    }
    return writer_.get();
  }

  std::shared_ptr<const PgTarget> target_;
  StoreOptions options_;
  PgPool readers_;
  std::string channel_;
  std::unique_ptr<PgWriter> writer_;
};

}  // namespace

std::shared_ptr<Storage> open_postgres_storage(std::shared_ptr<const PgTarget> target,
                                               const StoreOptions& options) {
  return std::make_shared<PostgresStorage>(std::move(target), options);
}

}  // namespace factum::detail
