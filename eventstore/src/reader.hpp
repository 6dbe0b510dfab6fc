// Read connections: a pool of connections, each with its prepared read statements, and the
// cursors that page through the log for EventRange.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "factum/eventstore/event_range.hpp"
#include "factum/eventstore/store_options.hpp"
#include "sqlite.hpp"

namespace factum::detail {

struct ReadConnection {
  ReadConnection(const std::filesystem::path& path, const StoreOptions& options);
  Database db;
  Statement all_page;
  Statement stream_forward;
  Statement stream_backward;
  Statement category_page;
  Statement stream_version;
  Statement head;
  Statement by_id;
  Statement compensations;
};

// Hands out idle read connections, opening a new one when none is idle.
// Thread-safety: acquire() may be called from any thread.
class ReaderPool {
 public:
  ReaderPool(std::filesystem::path path, StoreOptions options);

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
  std::mutex mu_;
  std::vector<std::unique_ptr<ReadConnection>> idle_;
};

// What an EventRange walks.
struct CursorQuery {
  enum class Kind { all, stream_forward, stream_backward, category };
  Kind kind = Kind::all;
  std::string key;         // stream id or category
  std::uint64_t from = 1;  // position or stream version
};

std::shared_ptr<EventCursor> make_cursor(std::shared_ptr<ReaderPool> pool, CursorQuery query,
                                         std::size_t page_size);

}  // namespace factum::detail
