// The Sql handle of sql.hpp over one of our connections, with a per-connection cache of
// prepared statements keyed by their SQL text.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "factum/eventstore/sql.hpp"
#include "sqlite.hpp"

namespace factum::detail {

// Prepared statements of one connection, reused by SQL text. A statement is lent to one user
// at a time: a nested query with the same text (a recursive walk) gets a statement of its own,
// and a statement in use is never evicted, however many texts are cached.
class StatementCache {
 public:
  explicit StatementCache(Database& db) : db_(db) {}
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;

  // A statement borrowed from the cache; returned (reset, kept for reuse) on destruction.
  class Lease {
   public:
    Lease(StatementCache& cache, std::unique_ptr<Statement> s, std::string sql) noexcept
        : cache_(cache), statement_(std::move(s)), sql_(std::move(sql)) {}
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Statement& operator*() const noexcept { return *statement_; }
    Statement* operator->() const noexcept { return statement_.get(); }

   private:
    StatementCache& cache_;
    std::unique_ptr<Statement> statement_;
    std::string sql_;
  };

  // An idle statement for `sql`, prepared now when none is idle. Throws StorageError.
  Lease get(std::string_view sql);
  // How many idle statements are kept (for tests).
  std::size_t idle() const noexcept { return idle_count_; }

 private:
  static constexpr std::size_t kMaxIdle = 64;
  void give_back(std::string sql, std::unique_ptr<Statement> s) noexcept;
  Database& db_;
  std::map<std::string, std::vector<std::unique_ptr<Statement>>, std::less<>> idle_;
  std::size_t idle_count_ = 0;
};

class SqlHandle final : public Sql {
 public:
  explicit SqlHandle(StatementCache& cache) : cache_(cache) {}
  using Sql::execute;
  using Sql::query;
  std::int64_t execute(std::string_view sql, std::span<const SqlValue> params) override;
  void query(std::string_view sql, std::span<const SqlValue> params,
             const std::function<void(const SqlRow&)>& on_row) override;

 private:
  StatementCache& cache_;
};

}  // namespace factum::detail
