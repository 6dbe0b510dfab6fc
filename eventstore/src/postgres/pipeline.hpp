// Statements with binary parameters (Params), one at a time or several in one round trip
// (Pipeline, libpq's pipeline mode). Values travel in libpq's binary format (bytea and int8 as
// bytes, text as its bytes): no escaping, and a read hands out views into the result's memory.
//
// Internal. Thread-safety: as the PgConn they run on.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event_id.hpp"
#include "postgres/connection.hpp"

namespace factum::detail::pg {

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
    // Abandoned (an exception, or a reader that stopped early): drain what is pending, leave
    // pipeline mode.
    drain();
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

  // The statements sent since the last run: the index in run()'s results of the next one.
  std::size_t statements() const {
    return static_cast<std::size_t>(std::count(kinds_.begin(), kinds_.end(), true));
  }

  // Streaming, instead of run(): sends the statements' sync; then each next() hands out one
  // statement's result as it arrives, while the server runs the statements after it (a reader
  // decodes one part of a page while the server reads the next). Throws StorageError (kind io)
  // when the connection broke.
  void sync(std::string_view doing) {
    if (!active_ || synced_) return;
    if (libpq().PQpipelineSync(c_.get()) != 1) c_.fail(nullptr, doing);
    synced_ = true;
  }
  // After sync(): the next statement's result, in the order sent; an empty PgResult (get() is
  // null) once every one was handed out, the pipeline then left. A statement that failed: the
  // rest is read, the pipeline left, and its error thrown (StorageError naming `doing`).
  PgResult next(std::string_view doing) {
    while (active_ && next_ < kinds_.size()) {
      const bool statement = kinds_[next_++];
      PgResult r(libpq().PQgetResult(c_.get()));
      if (r.get() == nullptr) c_.fail(nullptr, doing);  // the connection broke
      while (PGresult* extra = libpq().PQgetResult(c_.get())) libpq().PQclear(extra);
      const auto status = libpq().PQresultStatus(r.get());
      if (status == PGRES_FATAL_ERROR || status == PGRES_PIPELINE_ABORTED) {
        for (const std::string& sql : preparing_) c_.forget_statement(sql);
        drain();
        c_.fail(r.get(), doing);
      }
      if (statement) return r;
    }
    if (active_) {
      PgResult end(libpq().PQgetResult(c_.get()));
      if (end.get() == nullptr || libpq().PQresultStatus(end.get()) != PGRES_PIPELINE_SYNC) {
        c_.fail(end.get(), doing);
      }
      clear();
      if (libpq().PQexitPipelineMode(c_.get()) != 1) c_.fail(nullptr, doing);
    }
    return PgResult();
  }
  // Reads (and drops) every result still to come and leaves pipeline mode: the connection can
  // run other statements again. Nothing to do when the pipeline is not active. When a statement
  // failed (or the connection broke), the statements it prepared are forgotten: their PREPARE
  // may have been skipped.
  void drain() noexcept {
    if (!active_) return;
    bool failed = !synced_ && libpq().PQpipelineSync(c_.get()) != 1;
    if (!failed) {
      for (;;) {
        PGresult* r = libpq().PQgetResult(c_.get());
        if (r == nullptr) {
          if (!c_.ok()) {
            failed = true;
            break;
          }
          continue;
        }
        const auto status = libpq().PQresultStatus(r);
        libpq().PQclear(r);
        if (status == PGRES_PIPELINE_SYNC) break;
        if (status == PGRES_FATAL_ERROR || status == PGRES_PIPELINE_ABORTED) failed = true;
      }
    }
    if (failed || !c_.ok()) {
      for (const std::string& sql : preparing_) c_.forget_statement(sql);
    }
    libpq().PQexitPipelineMode(c_.get());
    clear();
  }
  bool active() const noexcept { return active_; }

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
    synced_ = false;
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
  void clear() noexcept {
    active_ = synced_ = false;
    kinds_.clear();
    next_ = 0;
    preparing_.clear();
  }
  PgConn& c_;
  bool active_ = false;
  bool synced_ = false;                 // sync() sent the sync
  std::size_t next_ = 0;                // next()'s place in kinds_
  std::vector<bool> kinds_;             // per result awaited: a statement's (true) or a PREPARE's
  std::vector<std::string> preparing_;  // SQL prepared in this round trip
};

}  // namespace factum::detail::pg
