// The PostgreSQL backend (docs/postgres.md): the same log as the SQLite file, in the tables of
// one PostgreSQL schema (the first of the connection's search_path), through libpq. The Storage
// below puts together the readers' pool (pool.hpp, reader.hpp), the writer (writer.hpp), the
// schema (schema.hpp) and the commit watcher (notifications.hpp).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "chain_walk.hpp"
#include "event_rows.hpp"  // head_of(), shared with SQLite
#include "postgres/notifications.hpp"
#include "postgres/pool.hpp"
#include "postgres/reader.hpp"
#include "postgres/schema.hpp"
#include "postgres/sql_handle.hpp"
#include "postgres/writer.hpp"
#include "storage.hpp"
#include "validation.hpp"

namespace factum::detail {
namespace pg {
namespace {

constexpr std::int64_t kVerifyPage = 4096;

class PostgresStorage final : public Storage {
 public:
  PostgresStorage(std::shared_ptr<const PgTarget> target, const StoreOptions& options)
      : target_(std::move(target)), options_(options), readers_(target_, options) {
    auto c = readers_.acquire();
    channel_ = channel_of(prepare_schema(*c, options));
    if (!options.read_only) writer_ = std::make_unique<PgWriter>(target_, options, channel_);
  }

  std::size_t default_read_page_size() const noexcept override { return kPostgresReadPageSize; }

  // Text the server cannot hold is refused here, on the caller's thread: it never reaches a
  // commit group, where the server would refuse it for the whole group.
  std::vector<AppendResult> append(std::span<const AppendView> appends, AppendSink& sink,
                                   const AppendHook* hook, const AppendChecks* checks) override {
    for (const AppendView& a : appends) validate_server_text(a.stream, a.events);
    return writer("append to")->write(appends, sink, hook, checks);
  }

  void read_page(const PageQuery& query, std::size_t limit,
                 std::vector<RecordedEvent>& page) override {
    if (!storable(query)) {
      page.clear();
      return;
    }
    read([&](PgConn& c) {
      // Copies each row into `page`, whose events (and their buffers) a range reuses from one
      // page to the next; room for a result's rows is reserved when it arrives.
      struct Filler {
        std::vector<RecordedEvent>& page;
        std::size_t n = 0;
        bool operator()(const EventView& v) {
          if (n == page.size()) page.emplace_back();
          assign(page[n++], v);
          return true;
        }
        void expect(std::size_t rows) { page.reserve(n + rows); }
      } fill{page};
      try {
        walk_page(c, query, limit, fill);
      } catch (...) {
        page.clear();
        throw;
      }
      page.resize(fill.n);
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
          Params().text(stream).run(c, pg::kVersionOfStream.c_str(), "reading a stream's version");
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
    return read([&](PgConn& c) {
      // One statement, one snapshot: the head row the writer keeps and the last stored event
      // (max() reads the primary key's last entry).
      PgResult r = Params().run(c,
                                "SELECT coalesce((SELECT position FROM factum_store WHERE id = 1), "
                                "0), coalesce((SELECT max(position) FROM events), 0)",
                                "reading where the log ends");
      if (r.rows() == 0) return LogEnd{};
      return LogEnd{static_cast<Position>(std::max<std::int64_t>(r.int64_or(0, 0, 0), 0)),
                    static_cast<Position>(std::max<std::int64_t>(r.int64_or(0, 1, 0), 0))};
    });
  }

  std::optional<RecordedEvent> read_event(const EventId& id) override {
    std::vector<RecordedEvent> out = read([&](PgConn& c) {
      return read_events(Params().id(id).run(
          c, pg::row_reads(c.stored_previous()).event_by_id.c_str(), "reading an event"));
    });
    if (out.empty()) return std::nullopt;
    return std::move(out.front());
  }

  std::vector<RecordedEvent> compensations_of(const EventId& id) override {
    return read([&](PgConn& c) {
      return read_events(Params().id(id).run(
          c, pg::row_reads(c.stored_previous()).compensations_of.c_str(), "reading compensations"));
    });
  }

  VerifyResult verify(const VerifyOptions& options, TagDigest& tags) override {
    // One snapshot for everything below, however many appends commit meanwhile.
    auto c = begin_read("verifying the hash chain");
    ChainWalk walk(options, &tags);
    PgResult counts =
        Params().run(*c, "SELECT count(*), min(position) FROM events", "counting the events");
    const std::int64_t rows = counts.int64_or(0, 0, 0);
    if (rows > 0 && counts.int64_or(0, 1, 1) < 1) return walk.unchained(counts.int64_or(0, 1, 1));
    EventView event;
    for (;;) {
      PgResult page = Params()
                          .i64(static_cast<std::int64_t>(walk.next()))
                          .i64(kVerifyPage)
                          .run(*c, pg::row_reads(c->stored_previous()).page_verify.c_str(),
                               "verifying the hash chain");
      for (int i = 0; i < page.rows(); ++i) {
        const char* problem = decode(page, i, event);
        const std::string_view category =
            page.null(i, kPreviousHash + 1) ? std::string_view() : page.text(i, kPreviousHash + 1);
        std::optional<std::span<const std::byte>> stored_previous;
        if (!page.null(i, kPreviousHash)) stored_previous = page.bytes(i, kPreviousHash);
        if (!walk.check(problem, event, static_cast<Position>(page.int64_or(i, kPosition, 0)),
                        category, stored_previous)) {
          return walk.result();
        }
      }
      if (page.rows() < kVerifyPage) break;
      if (options.on_progress) options.on_progress(walk.result().events_checked);
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
    read_with(pg::kCallerPlanner, fn);
  }

  void read_own_sql(const std::function<void(Sql&)>& fn) override {
    read_with(nullptr, fn);  // the connection's settings: factum's
  }

  bool purge() override { return true; }  // nothing a client can do: VACUUM (docs)

  std::unique_ptr<LogWatcher> watch() override {
    return watch_commits(target_, options_, channel_);
  }

 private:
  // A read transaction with `settings` (SET LOCAL ...; null: none) for `fn`.
  void read_with(const char* settings, const std::function<void(Sql&)>& fn) {
    auto c = begin_read("starting a read transaction", settings);
    PgSql sql(*c);
    fn(sql);
    c->exec("COMMIT", "ending a read transaction");
  }

  // Runs `fn` on a pooled connection and returns what it returns. When the connection turns out
  // broken (the server ended it: a restart, pg_terminate_backend), runs it once more on a new
  // one (PgPool::acquire_new: not another pooled one, which may be as dead), as a read changes
  // nothing; unless `*started` says that `fn` has handed rows to its caller already. `fn` must
  // leave nothing behind when it throws.
  template <class Fn>
  std::invoke_result_t<const Fn&, PgConn&> read(const Fn& fn, const bool* started = nullptr) {
    for (int attempt = 0;; ++attempt) {
      auto c = attempt == 0 ? readers_.acquire() : readers_.acquire_new();
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
      auto c = attempt == 0 ? readers_.acquire() : readers_.acquire_new();
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
}  // namespace pg

std::shared_ptr<Storage> open_postgres_storage(std::shared_ptr<const PgTarget> target,
                                               const StoreOptions& options) {
  return std::make_shared<pg::PostgresStorage>(std::move(target), options);
}

}  // namespace factum::detail
