#include "sql_handle.hpp"

#include <type_traits>

namespace factum::detail {
namespace {

void bind_all(Statement& s, std::span<const SqlValue> params) {
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

Statement& StatementCache::get(std::string_view sql) {
  const auto it = statements_.find(sql);
  if (it != statements_.end()) return *it->second;
  if (statements_.size() >= kMaxStatements) statements_.clear();
  const std::string key(sql);
  auto statement = std::make_unique<Statement>(db_, key.c_str());
  return *statements_.emplace(key, std::move(statement)).first->second;
}

std::int64_t SqlHandle::execute(std::string_view sql, std::span<const SqlValue> params) {
  Statement& s = cache_.get(sql);
  StatementScope scope(s);
  bind_all(s, params);
  while (s.step("running SQL")) {
  }
  return sqlite3_changes64(s.db().get());
}

void SqlHandle::query(std::string_view sql, std::span<const SqlValue> params,
                      const std::function<void(const SqlRow&)>& on_row) {
  Statement& s = cache_.get(sql);
  StatementScope scope(s);
  bind_all(s, params);
  const Row row(s);
  while (s.step("running a query")) on_row(row);
}

}  // namespace factum::detail
