// The SQLite backend: one Writer (group commit) and a pool of read connections on one file.
#include <algorithm>

#include "factum/eventstore/location.hpp"
#include "postgres_target.hpp"
#include "reader.hpp"
#include "rows.hpp"
#include "schema.hpp"
#include "storage.hpp"
#include "verify.hpp"
#include "writer.hpp"

namespace factum::detail {
namespace {

// PRAGMA data_version changes on a connection when any other connection commits to the file.
class DataVersionWatcher final : public LogWatcher {
 public:
  DataVersionWatcher(const std::filesystem::path& path, const StoreOptions& options)
      : db_(path, SQLITE_OPEN_READONLY, static_cast<int>(options.busy_timeout.count())),
        pragma_(db_, "PRAGMA data_version") {}

  bool changed() override {
    StatementScope scope(pragma_);
    if (!pragma_.step("reading PRAGMA data_version")) return false;
    const std::int64_t now = pragma_.column_int(0);
    const bool changed = last_ && *last_ != now;
    last_ = now;
    return changed;
  }

 private:
  Database db_;
  Statement pragma_;
  std::optional<std::int64_t> last_;
};

class SqliteStorage final : public Storage {
 public:
  SqliteStorage(const std::filesystem::path& path, const StoreOptions& options)
      : path_(path.string()), options_(options) {
    if (options.read_only) {
      Database probe(path, SQLITE_OPEN_READONLY);
      prepare_schema(probe, options);
    } else {
      writer_ = std::make_unique<Writer>(path, options);
    }
    readers_ = std::make_unique<ReaderPool>(path, options);
  }

  std::vector<AppendResult> append(std::span<const AppendView> appends, AppendSink& sink,
                                   const AppendHook* hook) override {
    if (!writer_) {
      throw StorageError(StorageError::Kind::read_only, "factum: cannot append to '" + path_ +
                                                            "': the store was opened read-only");
    }
    return writer_->write(appends, sink, hook);
  }

  void read_page(const PageQuery& query, std::size_t limit,
                 std::vector<RecordedEvent>& page) override {
    auto conn = readers_->acquire();
    detail::read_page(*conn, query, limit, page);
  }

  PageEnd visit_page(const PageQuery& query, std::size_t limit, const ViewVisitor& visit) override {
    auto conn = readers_->acquire();
    return detail::visit_page(*conn, query, limit, visit);
  }
  StreamVersion stream_version(std::string_view stream) override {
    auto conn = readers_->acquire();
    Statement& s = conn->stream_version;
    StatementScope scope(s);
    s.bind(1, stream);
    return s.step("reading a stream's version") ? static_cast<StreamVersion>(s.column_int(0)) : 0;
  }

  Head head() override {
    auto conn = readers_->acquire();
    return read_head(conn->head);
  }

  std::optional<RecordedEvent> read_event(const EventId& id) override {
    auto conn = readers_->acquire();
    Statement& s = conn->by_id;
    StatementScope scope(s);
    s.bind_blob(1, id.bytes().data(), id.bytes().size());
    if (!s.step("reading an event")) return std::nullopt;
    RecordedEvent e;
    read_row(s, e);
    return e;
  }

  std::vector<RecordedEvent> compensations_of(const EventId& id) override {
    auto conn = readers_->acquire();
    Statement& s = conn->compensations;
    StatementScope scope(s);
    s.bind_blob(1, id.bytes().data(), id.bytes().size());
    std::vector<RecordedEvent> out;
    while (s.step("reading compensations")) read_row(s, out.emplace_back());
    return out;
  }

  VerifyResult verify(const Hash* expected_head,
                      const std::function<void(Position)>& on_progress) override {
    return verify_chain(*readers_, expected_head, on_progress);
  }

  void write_sql(const std::function<void(Sql&)>& fn) override {
    if (!writer_) {
      throw StorageError(StorageError::Kind::read_only,
                         "factum: cannot write to '" + path_ + "': the store was opened read-only");
    }
    writer_->write_sql(fn);
  }

  void read_sql(const std::function<void(Sql&)>& fn) override {
    auto conn = readers_->acquire();
    Transaction tx(conn->db, Transaction::Mode::deferred);
    SqlHandle sql(conn->cache);
    fn(sql);
    tx.commit();
  }

  std::unique_ptr<LogWatcher> watch() override {
    return std::make_unique<DataVersionWatcher>(path_, options_);
  }

 private:
  std::string path_;
  StoreOptions options_;
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<ReaderPool> readers_;
};

}  // namespace

std::shared_ptr<Storage> open_sqlite_storage(const std::filesystem::path& path,
                                             const StoreOptions& options) {
  return std::make_shared<SqliteStorage>(path, options);
}

std::shared_ptr<Storage> open_storage(const std::filesystem::path& location,
                                      const StoreOptions& options) {
  if (is_server_location(location.native())) {
    return open_postgres_storage(std::make_shared<const PgTarget>(pg_target(location.native())),
                                 options);
  }
  return open_sqlite_storage(location, options);
}

#ifndef FACTUM_HAVE_POSTGRES
std::shared_ptr<Storage> open_postgres_storage(std::shared_ptr<const PgTarget> target,
                                               const StoreOptions&) {
  throw StorageError(StorageError::Kind::other,
                     "factum: cannot open '" + target->shown +
                         "': this build of factum has no PostgreSQL backend (install libpq-dev "
                         "and configure again)");
}
#endif

}  // namespace factum::detail
