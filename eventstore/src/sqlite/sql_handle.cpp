#include "sqlite/sql_handle.hpp"

#include <type_traits>

namespace factum::detail {
namespace {

// Binds ?1..?N; refuses a count of values that differs from the statement's parameters (an
// extra value would be ignored, a missing one read as NULL).
void bind_all(Statement& s, std::string_view sql, std::span<const SqlValue> params) {
  const int wanted = s.parameter_count();
  if (params.size() != static_cast<std::size_t>(wanted)) {
    throw InvalidArgument("factum: the SQL statement '" + std::string(sql) + "' takes " +
                          std::to_string(wanted) + " parameter(s) but " +
                          std::to_string(params.size()) + " value(s) were given");
  }
  int index = 1;
  for (const SqlValue& v : params) {
    std::visit(
        [&](const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::nullptr_t>) {
            s.bind_null(index);
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            s.bind(index, value);
          } else if constexpr (std::is_same_v<T, double>) {
            s.bind_real(index, value);
          } else if constexpr (std::is_same_v<T, std::string>) {
            s.bind(index, std::string_view(value));
          } else {
            s.bind_blob(index, std::span<const std::byte>(value));
          }
        },
        v);
    ++index;
  }
}

class Row final : public SqlRow {
 public:
  explicit Row(const Statement& s) : s_(s) {}
  int size() const override { return s_.column_count(); }
  bool is_null(int c) const override { return s_.column_type(c) == SQLITE_NULL; }
  std::int64_t integer(int c) const override {
    expect(c, SQLITE_INTEGER, "an integer");
    return s_.column_int(c);
  }
  double real(int c) const override {
    if (s_.column_type(c) != SQLITE_INTEGER) expect(c, SQLITE_FLOAT, "a number");
    return s_.column_real(c);
  }
  std::string text(int c) const override {
    expect(c, SQLITE_TEXT, "text");
    return std::string(s_.column_text(c));
  }
  Bytes blob(int c) const override {
    expect(c, SQLITE_BLOB, "a blob");
    const auto b = s_.column_blob(c);
    return Bytes(b.begin(), b.end());
  }

 private:
  void expect(int c, int type, const char* what) const {
    if (c < 0 || c >= s_.column_count() || s_.column_type(c) != type) {
      throw StorageError(StorageError::Kind::other, "factum: column " + std::to_string(c) +
                                                        " of a query on '" + s_.db().file() +
                                                        "' is not " + what);
    }
  }
  const Statement& s_;
};

}  // namespace

StatementCache::Lease::~Lease() {
  statement_->reset();
  cache_.give_back(entry_, std::move(statement_));
}

StatementCache::Lease StatementCache::get(std::string_view sql) {
  auto it = entries_.find(sql);
  if (it == entries_.end()) {
    trim();
    it = entries_.emplace(std::string(sql), Entry{}).first;
  }
  Entry& entry = it->second;
  std::unique_ptr<Statement> statement;
  if (!entry.idle.empty()) {
    statement = std::move(entry.idle.back());
    entry.idle.pop_back();
    --idle_count_;
  } else {
    statement = std::make_unique<Statement>(db_, it->first.c_str());
  }
  ++entry.lent;
  return Lease(*this, std::move(statement), entry);
}

// Keeps an idle statement for reuse; past the limit, the idle ones are finalized (statements
// in use are never idle, so nothing a caller is stepping is ever freed).
void StatementCache::give_back(Entry& entry, std::unique_ptr<Statement> s) noexcept {
  --entry.lent;
  try {
    if (idle_count_ >= kMaxIdle) {
      for (auto& [sql, e] : entries_) e.idle.clear();
      idle_count_ = 0;
    }
    entry.idle.push_back(std::move(s));
    ++idle_count_;
  } catch (...) {
    // Out of memory: the statement is finalized instead of kept.
  }
}

// Before remembering one more text: past kMaxTexts, forgets the texts not in use (their idle
// statements with them).
void StatementCache::trim() noexcept {
  if (entries_.size() < kMaxTexts) return;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.lent == 0) {
      idle_count_ -= it->second.idle.size();
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

std::int64_t SqlHandle::execute(std::string_view sql, std::span<const SqlValue> params) {
  auto s = cache_.get(sql);
  bind_all(*s, sql, params);
  while (s->step("running SQL")) {
  }
  return sqlite3_changes64(s->db().get());
}

void SqlHandle::query(std::string_view sql, std::span<const SqlValue> params,
                      const std::function<void(const SqlRow&)>& on_row) {
  auto s = cache_.get(sql);
  bind_all(*s, sql, params);
  const Row row(*s);
  while (s->step("running a query")) on_row(row);
}

}  // namespace factum::detail

namespace factum {

// One name serves every level: SQLite's ROLLBACK TO and RELEASE act on the innermost
// savepoint of that name, and scopes nest strictly.
SqlSavepoint::SqlSavepoint(Sql& sql) : sql_(sql) { sql_.execute("SAVEPOINT factum_scope"); }

SqlSavepoint::~SqlSavepoint() {
  if (!open_) return;
  try {
    rollback();
  } catch (...) {
    // The enclosing transaction is failing: it rolls back whole.
  }
}

// Each closes the scope only once its statements succeeded: a RELEASE that failed leaves the
// savepoint for rollback() (and the destructor) to undo.
void SqlSavepoint::release() {
  if (!open_) return;
  sql_.execute("RELEASE factum_scope");
  open_ = false;
}

void SqlSavepoint::rollback() {
  if (!open_) return;
  sql_.execute("ROLLBACK TO factum_scope");
  sql_.execute("RELEASE factum_scope");
  open_ = false;
}

}  // namespace factum

namespace factum {

std::string Sql::object_type(std::string_view name) {
  std::string type;
  const auto take = [&](const SqlRow& row) {
    if (type.empty() && !row.is_null(0)) type = row.text(0);
  };
  if (dialect() == SqlDialect::postgres) {
    query(
        "SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'i' THEN 'index' ELSE 'table' END "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND lower(c.relname) = lower(?1) "
        "AND c.relkind IN ('r', 'p', 'v', 'i') ORDER BY c.relkind = 'v', c.relkind = 'i' LIMIT 1",
        {std::string(name)}, take);
  } else {
    // Without ORDER BY: sorting made SQLite open and close a temporary B-tree (its own page
    // cache) on every call, which cost appends that check a table 140 us each.
    int rank = 3;  // table 0, index 1, view 2
    query(
        "SELECT type FROM sqlite_master WHERE name = ?1 COLLATE NOCASE AND type IN "
        "('table', 'index', 'view')",
        {std::string(name)}, [&](const SqlRow& row) {
          if (row.is_null(0)) return;
          const std::string t = row.text(0);
          const int r = t == "table" ? 0 : t == "index" ? 1 : 2;
          if (r < rank) {
            rank = r;
            type = t;
          }
        });
  }
  return type;
}

std::string table_ddl(const Sql& sql, std::string_view create_table) {
  return table_ddl(sql.dialect(), create_table);
}

std::string table_ddl(SqlDialect dialect, std::string_view create_table) {
  std::string out(create_table);
  if (dialect != SqlDialect::postgres) return out;
  const auto is_word = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  };
  const auto replace_word = [&](std::string_view word, std::string_view with) {
    for (std::size_t at = out.find(word); at != std::string::npos; at = out.find(word, at)) {
      const bool starts = at == 0 || !is_word(out[at - 1]);
      const bool ends = at + word.size() == out.size() || !is_word(out[at + word.size()]);
      if (starts && ends) {
        out.replace(at, word.size(), with);
        at += with.size();
      } else {
        at += word.size();
      }
    }
  };
  replace_word(" WITHOUT ROWID", "");
  replace_word("INTEGER", "BIGINT");
  replace_word("BLOB", "BYTEA");
  return out;
}

}  // namespace factum
