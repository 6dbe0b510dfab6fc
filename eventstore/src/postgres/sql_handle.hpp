// The Sql handle (factum/eventstore/sql.hpp) of a PostgreSQL connection: what write_sql,
// read_sql and on_appending slots run the caller's SQL through. SQLite's "?1, ?2" spelling
// becomes PostgreSQL's "$1, $2"; results are read as text.
//
// Internal. Thread-safety: as the PgConn it runs on.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "factum/eventstore/sql.hpp"
#include "postgres/connection.hpp"

namespace factum::detail::pg {

class PgSql final : public Sql {
 public:
  explicit PgSql(PgConn& conn) : conn_(conn) {}

  SqlDialect dialect() const noexcept override { return SqlDialect::postgres; }
  std::int64_t execute(std::string_view sql, std::span<const SqlValue> params) override;
  void query(std::string_view sql, std::span<const SqlValue> params,
             const std::function<void(const SqlRow&)>& on_row) override;

 private:
  // Text results (any column type reads as text, integer or real); bytea parameters travel
  // in binary, the others as text typed by the statement.
  PgResult run(std::string_view sql, std::span<const SqlValue> params);

  PgConn& conn_;
};

}  // namespace factum::detail::pg
