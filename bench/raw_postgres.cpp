#include "raw_postgres.hpp"

#include <unistd.h>

#include <atomic>
#include <stdexcept>

#include "factum/eventstore/location.hpp"

namespace bench {
namespace {

std::string first_line(const char* message) {
  std::string m = message != nullptr ? message : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

bool succeeded(const PGresult* r) {
  const auto status = PQresultStatus(r);
  return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

// The events table of factum's schema with the stream id inline and no secondary index: the
// same row, stored as cheaply as PostgreSQL can (bench/eventstore_bench.cpp's kRawSchema).
constexpr const char* kRawSchema =
    "CREATE TABLE events (position bigint PRIMARY KEY, stream_id text NOT NULL, "
    "stream_version bigint NOT NULL, event_id bytea NOT NULL, type text NOT NULL, "
    "schema_version bigint NOT NULL, payload bytea NOT NULL, correlation_id bytea, "
    "causation_id bytea, compensates bytea, actor text, extra bytea, recorded_at bigint NOT NULL, "
    "hash bytea NOT NULL)";
constexpr const char* kRawInsert =
    "INSERT INTO events (position, stream_id, stream_version, event_id, type, schema_version, "
    "payload, recorded_at, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

std::int64_t now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PgParams

PgParams& PgParams::i64(std::int64_t v) {
  auto& slot = ints_[static_cast<std::size_t>(n_)];
  const auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i)
    slot[static_cast<std::size_t>(i)] = static_cast<char>(u >> (56 - 8 * i));
  return add(20, slot.data(), 8);
}

PgParams& PgParams::add(unsigned type, const char* data, std::size_t size) {
  if (static_cast<std::size_t>(n_) == kMax)
    throw std::logic_error("raw postgres: too many parameters");
  const auto i = static_cast<std::size_t>(n_++);
  types_[i] = type;
  values_[i] = data != nullptr ? data : "";  // libpq reads a zero-length value from a pointer
  lengths_[i] = static_cast<int>(size);
  formats_[i] = 1;
  return *this;
}

// ---------------------------------------------------------------------------------------------
// RawPg

RawPg::RawPg(const std::string& uri) {
  conn_ = PQconnectdb(uri.c_str());
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    const std::string why = first_line(conn_ != nullptr ? PQerrorMessage(conn_) : "out of memory");
    PQfinish(conn_);
    throw std::runtime_error("raw postgres: cannot connect to '" + factum::shown_location(uri) +
                             "': " + why);
  }
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
}

RawPg::~RawPg() { PQfinish(conn_); }

void RawPg::fail(const PGresult* r, std::string_view sql) const {
  throw std::runtime_error(
      "raw postgres: " + std::string(sql) + ": " +
      first_line(r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(conn_)));
}

void RawPg::exec(const std::string& sql) {
  const PgRes r(PQexec(conn_, sql.c_str()));
  if (!succeeded(r.get())) fail(r.get(), sql);
}

std::string RawPg::value(const std::string& sql) {
  const PgRes r(PQexec(conn_, sql.c_str()));
  if (!succeeded(r.get())) fail(r.get(), sql);
  if (r.rows() < 1 || PQnfields(r.get()) < 1) return {};
  return std::string(PQgetvalue(r.get(), 0, 0),
                     static_cast<std::size_t>(PQgetlength(r.get(), 0, 0)));
}

PgRes RawPg::run(const char* sql, const PgParams& p) {
  PgRes r(PQexecParams(conn_, sql, p.size(), p.types(), p.values(), p.lengths(), p.formats(), 1));
  if (!succeeded(r.get())) fail(r.get(), sql);
  return r;
}

void RawPg::prepare(const char* name, const char* sql, const PgParams& p) {
  const PgRes r(PQprepare(conn_, name, sql, p.size(), p.types()));
  if (!succeeded(r.get())) fail(r.get(), sql);
}

void RawPg::queue_prepared(const char* name, const PgParams& p) {
  if (PQsendQueryPrepared(conn_, name, p.size(), p.values(), p.lengths(), p.formats(), 1) != 1) {
    fail(nullptr, name);
  }
  ++queued_;
}

void RawPg::begin_pipeline() {
  if (PQenterPipelineMode(conn_) != 1) fail(nullptr, "entering pipeline mode");
  queued_ = 0;
}

void RawPg::queue(const char* sql, const PgParams& p) {
  if (PQsendQueryParams(conn_, sql, p.size(), p.types(), p.values(), p.lengths(), p.formats(), 1) !=
      1) {
    fail(nullptr, sql);
  }
  ++queued_;
}

void RawPg::sync() {
  if (PQpipelineSync(conn_) != 1) fail(nullptr, "pipeline sync");
  // Each queued statement yields its result then NULL (PGRES_PIPELINE_ABORTED after an error);
  // the sync yields PGRES_PIPELINE_SYNC.
  std::string error;
  for (int i = 0; i < queued_; ++i) {
    const PgRes r(PQgetResult(conn_));
    if (r.get() == nullptr) {
      error = first_line(PQerrorMessage(conn_));
      break;
    }
    if (!succeeded(r.get()) && error.empty()) {
      error = PQresultStatus(r.get()) == PGRES_PIPELINE_ABORTED
                  ? "aborted"
                  : first_line(PQresultErrorMessage(r.get()));
    }
    while (PGresult* rest = PQgetResult(conn_)) PQclear(rest);
  }
  queued_ = 0;
  const PgRes end(PQgetResult(conn_));
  if (end.get() == nullptr || PQresultStatus(end.get()) != PGRES_PIPELINE_SYNC) {
    if (error.empty()) error = "no pipeline sync: " + first_line(PQerrorMessage(conn_));
  }
  if (PQexitPipelineMode(conn_) != 1 && error.empty()) {
    error = "leaving pipeline mode: " + first_line(PQerrorMessage(conn_));
  }
  if (!error.empty()) throw std::runtime_error("raw postgres: pipeline: " + error);
}

// ---------------------------------------------------------------------------------------------
// Schemas

std::string with_search_path(const std::string& uri, const std::string& schema) {
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" +
         schema;
}

PgSchema::PgSchema(RawPg& admin, const std::string& base_uri, std::string_view what)
    : admin_(admin) {
  static std::atomic<int> count{0};
  name_ = "factum_bench_" + std::to_string(getpid()) + "_" + std::to_string(++count) + "_" +
          std::string(what);
  admin_.exec("CREATE SCHEMA " + name_);
  uri_ = with_search_path(base_uri, name_);
}

PgSchema::~PgSchema() {
  try {
    admin_.exec("DROP SCHEMA " + name_ + " CASCADE");
  } catch (...) {
    // A schema left behind is named factum_bench_*: drop it by hand.
  }
}

void PgSchema::vacuum_analyze() {
  const std::string tables = admin_.value(
      "SELECT string_agg(quote_ident(schemaname) || '.' || quote_ident(tablename), ', ') "
      "FROM pg_tables WHERE schemaname = '" +
      name_ + "'");
  if (!tables.empty()) admin_.exec("VACUUM (ANALYZE) " + tables);
}

// ---------------------------------------------------------------------------------------------
// RawPgLog

RawPgLog::RawPgLog(const std::string& uri, factum::Durability durability,
                   std::span<const std::byte> payload, const factum::Hash& hash,
                   std::string_view type)
    : db_(uri), payload_(payload), hash_(hash), type_(type) {
  db_.exec(std::string("SET synchronous_commit = ") +
           (durability == factum::Durability::full ? "on" : "off"));
  db_.exec(kRawSchema);
}

void RawPgLog::params(const std::string& stream, std::uint64_t version, std::int64_t now) {
  id_ = factum::EventId::generate();
  params_.clear()
      .i64(static_cast<std::int64_t>(++position_))
      .text(stream)
      .i64(static_cast<std::int64_t>(version))
      .bytes(id_.bytes().data(), id_.bytes().size())
      .text(type_)
      .i64(1)
      .bytes(payload_.data(), payload_.size())
      .i64(now)
      .bytes(hash_.data(), hash_.size());
}

void RawPgLog::insert_commit(const std::string& stream, std::uint64_t version, std::int64_t now) {
  params(stream, version, now);
  db_.run(kRawInsert, params_);
}

void RawPgLog::append(const std::string& stream, std::uint64_t& version, std::size_t count) {
  begin();
  const std::int64_t now = now_us();
  for (std::size_t i = 0; i < count; ++i) insert(stream, ++version, now);
  commit();
}

void RawPgLog::begin() {
  db_.begin_pipeline();
  db_.queue("BEGIN", params_.clear());
}

void RawPgLog::insert(const std::string& stream, std::uint64_t version, std::int64_t now) {
  params(stream, version, now);
  db_.queue(kRawInsert, params_);
}

void RawPgLog::commit() {
  db_.queue("COMMIT", params_.clear());
  db_.sync();
}

}  // namespace bench
