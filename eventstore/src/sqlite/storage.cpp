// The SQLite backend's Storage: one Writer (group commit) and a pool of read connections on one
// file.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <system_error>

#include "chain_walk.hpp"
#include "sqlite/notifications.hpp"
#include "sqlite/reader.hpp"
#include "sqlite/rows.hpp"
#include "sqlite/schema.hpp"
#include "sqlite/verify.hpp"
#include "sqlite/writer.hpp"
#include "storage.hpp"

namespace factum::detail {
namespace {

namespace fs = std::filesystem;

bool file_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

bool holds_bytes(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return !ec && size > 0;
}

fs::path companion(const fs::path& path, const char* suffix) {
  fs::path out = path;
  out += suffix;
  return out;
}

// Checks a store opened read-only, writing nothing. SQLite reads a WAL-mode file through its
// -shm index, which it creates beside the file; where it cannot (a read-only directory or
// medium: an auditor's copy, say) and there is no -wal to read, the file alone is the whole log
// and is read as immutable. Returns true when it must be. A -wal with commits but no -shm there
// cannot be read safely: that is refused, saying what to do. Throws StorageError.
bool check_read_only(const fs::path& path, const StoreOptions& options) {
  try {
    Database probe(path, SQLITE_OPEN_READONLY);
    check_schema(probe, options);
    return false;
  } catch (const StorageError& e) {
    const bool cannot_write =
        e.kind() == StorageError::Kind::read_only || e.kind() == StorageError::Kind::io;
    if (!cannot_write || !file_exists(path) || file_exists(companion(path, "-shm"))) throw;
    if (holds_bytes(companion(path, "-wal"))) {
      throw StorageError(StorageError::Kind::read_only,
                         "factum: cannot read '" + path.string() + "': its write-ahead log '" +
                             path.string() +
                             "-wal' holds commits not yet in the file, and SQLite cannot make its "
                             "'-shm' index in that directory (read-only); copy the file with its "
                             "-wal to a writable directory, or open it once where it is writable "
                             "so that the log is checkpointed into the file");
    }
  }
  Database probe(path, SQLITE_OPEN_READONLY, 0, /*immutable=*/true);
  check_schema(probe, options);
  return true;
}

// A store file that opening never writes: a new or empty file gets its schema from its first
// write that commits (Writer), an older format its upgrade; until the schema is there, reads
// answer as for an empty log, without opening the read pool on it.
class SqliteStorage final : public Storage {
 public:
  SqliteStorage(const fs::path& path, const StoreOptions& options)
      : file_(path), path_(path.string()), options_(options) {
    if (options.read_only) {
      immutable_ = check_read_only(path, options);
      born_ = true;
    } else {
      // Opens (a missing file: creates empty, as SQLite does) and checks the file; writes nothing.
      born_ = writer().has_schema();
    }
    readers_ = std::make_unique<ReaderPool>(path, options, immutable_);
  }

  std::vector<AppendResult> append(std::span<const AppendView> appends, AppendSink& sink,
                                   const AppendHook* hook, const AppendChecks*) override {
    // The checks run through `hook`: on SQLite its statements cost no round trip.
    if (options_.read_only) {
      throw StorageError(StorageError::Kind::read_only, "factum: cannot append to '" + path_ +
                                                            "': the store was opened read-only");
    }
    return writer().write(appends, sink, hook);
  }

  void read_page(const PageQuery& query, std::size_t limit,
                 std::vector<RecordedEvent>& page) override {
    if (!born()) {
      page.clear();
      return;
    }
    auto conn = readers_->acquire();
    detail::read_page(*conn, query, limit, page);
  }

  PageEnd visit_page(const PageQuery& query, std::size_t limit, const ViewVisitor& visit) override {
    if (!born()) return {};
    auto conn = readers_->acquire();
    return detail::visit_page(*conn, query, limit, visit);
  }

  StreamVersion stream_version(std::string_view stream) override {
    if (!born()) return 0;
    auto conn = readers_->acquire();
    Statement& s = conn->stream_version;
    StatementScope scope(s);
    s.bind(1, stream);
    return s.step("reading a stream's version") ? static_cast<StreamVersion>(s.column_int(0)) : 0;
  }

  Head head() override {
    if (!born()) return {};
    auto conn = readers_->acquire();
    return read_head(conn->head);
  }

  LogEnd log_end() override {
    if (!born()) return {};
    auto conn = readers_->acquire();
    Statement& s = conn->log_end;
    StatementScope scope(s);
    if (!s.step("reading where the log ends")) return {};
    const auto at_least_zero = [&](int column) {
      return static_cast<Position>(std::max<std::int64_t>(s.column_int(column), 0));
    };
    return {at_least_zero(0), at_least_zero(1)};
  }

  std::optional<RecordedEvent> read_event(const EventId& id) override {
    if (!born()) return std::nullopt;
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
    std::vector<RecordedEvent> out;
    if (!born()) return out;
    auto conn = readers_->acquire();
    Statement& s = conn->compensations;
    StatementScope scope(s);
    s.bind_blob(1, id.bytes().data(), id.bytes().size());
    while (s.step("reading compensations")) read_row(s, out.emplace_back());
    return out;
  }

  VerifyResult verify(const VerifyOptions& options, TagDigest& tags) override {
    if (born()) return verify_chain(*readers_, options, tags);
    // An empty log: nothing to walk, and no expected or anchored head can be in it.
    ChainWalk walk(options);
    return walk.finish(0, 0);
  }

  void write_sql(const std::function<void(Sql&)>& fn) override {
    if (options_.read_only) {
      throw StorageError(StorageError::Kind::read_only,
                         "factum: cannot write to '" + path_ + "': the store was opened read-only");
    }
    writer().write_sql(fn);
  }

  void read_sql(const std::function<void(Sql&)>& fn) override {
    if (!born()) return read_sql_without_schema(fn);
    auto conn = readers_->acquire();
    Transaction tx(conn->db, Transaction::Mode::deferred);
    SqlHandle sql(conn->cache);
    fn(sql);
    tx.commit();
  }

  bool purge() override {
    if (options_.read_only) return true;
    return writer().checkpoint_truncate();
  }

  std::unique_ptr<LogWatcher> watch() override {
    return watch_data_version(file_, options_, immutable_);
  }

 private:
  // The writer (opened with the store). Throws StorageError when the file cannot be opened.
  Writer& writer() {
    std::call_once(writer_once_, [&] { writer_ = std::make_unique<Writer>(file_, options_); });
    return *writer_;
  }

  // True once the file holds the schema (made by this process's first commit, or another's).
  bool born() {
    if (born_.load(std::memory_order_acquire)) return true;
    if (!file_exists(file_)) return false;
    Database probe(file_, SQLITE_OPEN_READONLY, static_cast<int>(options_.busy_timeout.count()));
    StoreOptions o = options_;
    o.read_only = false;  // an empty file is a store still to be made, not an error
    if (check_schema(probe, o) == SchemaState::absent) return false;
    born_.store(true, std::memory_order_release);
    return true;
  }

  // read_sql on a store whose schema is not made yet: the empty file itself (or, with no file
  // yet, an empty database in memory), read-only, so fn sees no table of the store.
  void read_sql_without_schema(const std::function<void(Sql&)>& fn) {
    const bool there = file_exists(file_);
    Database db(there ? file_ : fs::path(":memory:"),
                there ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY,
                static_cast<int>(options_.busy_timeout.count()));
    db.exec("PRAGMA query_only=1", "opening for reading");
    StatementCache cache(db);
    Transaction tx(db, Transaction::Mode::deferred);
    {
      SqlHandle sql(cache);
      fn(sql);
    }
    tx.commit();
  }

  fs::path file_;
  std::string path_;
  StoreOptions options_;
  bool immutable_ = false;  // read as a file nothing changes (check_read_only)
  std::once_flag writer_once_;
  std::unique_ptr<Writer> writer_;
  std::atomic<bool> born_{false};
  std::unique_ptr<ReaderPool> readers_;
};

}  // namespace

std::shared_ptr<Storage> open_sqlite_storage(const std::filesystem::path& path,
                                             const StoreOptions& options) {
  return std::make_shared<SqliteStorage>(path, options);
}

}  // namespace factum::detail
