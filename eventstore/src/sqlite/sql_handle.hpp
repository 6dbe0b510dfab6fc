// The Sql handle of sql.hpp over one of our connections, with a per-connection cache of
// prepared statements keyed by their SQL text.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "factum/eventstore/sql.hpp"
#include "sqlite/connection.hpp"

namespace factum::detail {

// Prepared statements of one connection, reused by SQL text. A statement is lent to one user
// at a time: a nested query with the same text (a recursive walk) gets a statement of its own,
// and a statement in use is never evicted, however many texts are cached.
class StatementCache {
 public:
  explicit StatementCache(Database& db) : db_(db) {}
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;

  struct Entry;  // the statements of one SQL text

  // A statement borrowed from the cache; returned (reset, kept for reuse) on destruction.
  class Lease {
   public:
    Lease(StatementCache& cache, std::unique_ptr<Statement> s, Entry& entry) noexcept
        : cache_(cache), statement_(std::move(s)), entry_(entry) {}
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Statement& operator*() const noexcept { return *statement_; }
    Statement* operator->() const noexcept { return statement_.get(); }

   private:
    StatementCache& cache_;
    std::unique_ptr<Statement> statement_;
    Entry& entry_;
  };

  // An idle statement for `sql`, prepared now when none is idle. No allocation when one is
  // idle. Throws StorageError.
  Lease get(std::string_view sql);
  // How many idle statements are kept (for tests).
  std::size_t idle() const noexcept { return idle_count_; }

  struct Entry {
    std::vector<std::unique_ptr<Statement>> idle;
    std::size_t lent = 0;  // statements of this text in use: the entry is kept while > 0
  };

 private:
  static constexpr std::size_t kMaxIdle = 64;    // idle statements kept
  static constexpr std::size_t kMaxTexts = 256;  // SQL texts remembered
  void give_back(Entry& entry, std::unique_ptr<Statement> s) noexcept;
  void trim() noexcept;
  Database& db_;
  // Map nodes do not move: a Lease keeps a reference to its entry.
  std::map<std::string, Entry, std::less<>> entries_;
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
