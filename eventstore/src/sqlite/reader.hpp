// Read connections: a pool of connections, each with its prepared read statements, and the
// paged reads done on them.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "factum/eventstore/event_range.hpp"
#include "factum/eventstore/store_options.hpp"
#include "sqlite/connection.hpp"
#include "sqlite/sql_handle.hpp"
#include "storage.hpp"

namespace factum::detail {

struct ReadConnection {
  // `immutable`: see Database.
  ReadConnection(const std::filesystem::path& path, const StoreOptions& options, bool immutable);
  Database db;
  Statement all_page;
  Statement stream_forward;
  Statement stream_backward;
  Statement category_page;
  Statement stream_version;
  Statement head;
  Statement hash_at;  // one event's hash, by position (HashCarry's look-up)
  Statement by_id;
  Statement compensations;
  Statement verify_page;    // kEventColumns plus the stream's category
  Statement sequence;       // AUTOINCREMENT's record of the highest position ever written
  Statement log_end;        // that record and the highest stored position, in one statement
  Statement event_rows;     // count, min and max position of the events table
  Statement empty_streams;  // a stream row that no event refers to
  StatementCache cache;     // statements of read_sql callers
};

// Hands out idle read connections, opening a new one when none is idle.
// Thread-safety: acquire() may be called from any thread.
class ReaderPool {
 public:
  ReaderPool(std::filesystem::path path, StoreOptions options, bool immutable);

  class Lease {
   public:
    Lease(ReaderPool& pool, std::unique_ptr<ReadConnection> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    ~Lease() { pool_.release(std::move(conn_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ReadConnection* operator->() const noexcept { return conn_.get(); }
    ReadConnection& operator*() const noexcept { return *conn_; }

   private:
    ReaderPool& pool_;
    std::unique_ptr<ReadConnection> conn_;
  };

  Lease acquire();

 private:
  void release(std::unique_ptr<ReadConnection> conn) noexcept;
  std::filesystem::path path_;
  StoreOptions options_;
  bool immutable_;
  std::mutex mu_;
  std::vector<std::unique_ptr<ReadConnection>> idle_;
};

// Replaces `page` with up to `limit` events matching `query` (see Storage::read_page).
void read_page(ReadConnection& conn, const PageQuery& query, std::size_t limit,
               std::vector<RecordedEvent>& page);
// Hands `visit` up to `limit` events matching `query` as views (see Storage::visit_page).
PageEnd visit_page(ReadConnection& conn, const PageQuery& query, std::size_t limit,
                   const ViewVisitor& visit);

}  // namespace factum::detail
