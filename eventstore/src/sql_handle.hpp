// The Sql handle of sql.hpp over one of our connections, with a per-connection cache of
// prepared statements keyed by their SQL text.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "factum/eventstore/sql.hpp"
#include "sqlite.hpp"

namespace factum::detail {

class StatementCache {
 public:
  explicit StatementCache(Database& db) : db_(db) {}
  Statement& get(std::string_view sql);

 private:
  static constexpr std::size_t kMaxStatements = 64;
  Database& db_;
  std::map<std::string, std::unique_ptr<Statement>, std::less<>> statements_;
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
