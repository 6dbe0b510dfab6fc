// The readers' connections: a pool of idle connections, each checked before it is handed out.
//
// Internal. Thread-safety: acquire() may be called from any thread; a Lease belongs to one.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "postgres/connection.hpp"

namespace factum::detail::pg {

// Idle connections of the readers, at most 16 kept; a Lease hands one back when destroyed.
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

  // A new connection, never an idle one, after closing every idle connection: for the retry of a
  // read whose pooled connection turned out broken. What ended that one (a restart,
  // pg_terminate_backend) most likely ended the others too, and their end may not have reached
  // this process yet, so alive() cannot tell. Throws StorageError (kind io) when none can be made.
  Lease acquire_new() {
    std::vector<std::unique_ptr<PgConn>> stale;
    {
      std::lock_guard lock(mu_);
      stale.swap(idle_);
    }
    stale.clear();  // closed outside the lock
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

}  // namespace factum::detail::pg
