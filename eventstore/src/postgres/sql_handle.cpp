#include "postgres/sql_handle.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <variant>
#include <vector>

namespace factum::detail::pg {
namespace {

// Sql's "?1, ?2, ..." (and bare "?") as PostgreSQL's "$1, $2, ...", outside quotes; `count`
// gets the highest parameter number.
std::string dollar_params(std::string_view sql, int& count) {
  std::string out;
  out.reserve(sql.size() + 8);
  char quote = 0;
  int next = 1;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char ch = sql[i];
    if (quote != 0) {
      if (ch == quote) quote = 0;
      out.push_back(ch);
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      out.push_back(ch);
    } else if (ch == '?') {
      std::size_t j = i + 1;
      while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') ++j;
      if (j > i + 1) {
        out += "$" + std::string(sql.substr(i + 1, j - i - 1));
        next = std::max(next, std::stoi(std::string(sql.substr(i + 1, j - i - 1))) + 1);
      } else {
        out += "$" + std::to_string(next++);
      }
      i = j - 1;
    } else {
      out.push_back(ch);
    }
  }
  count = next - 1;
  return out;
}

class PgRow final : public SqlRow {
 public:
  PgRow(const PgConn& conn, const PgResult& r, int row) : conn_(conn), r_(r), row_(row) {}
  int size() const override { return libpq().PQnfields(r_.get()); }
  bool is_null(int column) const override {
    check(column);
    return r_.null(row_, column);
  }
  std::int64_t integer(int column) const override {
    check(column);
    if (r_.null(row_, column)) return 0;
    const std::string_view t = r_.text(row_, column);
    if (libpq().PQftype(r_.get(), column) == kBoolOid) return t == "t" ? 1 : 0;
    std::int64_t v = 0;
    const std::string s(t);
    char* end = nullptr;
    errno = 0;
    v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0) wrong(column, "an integer");
    return v;
  }
  double real(int column) const override {
    check(column);
    if (r_.null(row_, column)) return 0;
    const std::string s(r_.text(row_, column));
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0') wrong(column, "a number");
    return v;
  }
  std::string text(int column) const override {
    check(column);
    return std::string(r_.text(row_, column));
  }
  Bytes blob(int column) const override {
    check(column);
    if (r_.null(row_, column)) return {};
    if (libpq().PQftype(r_.get(), column) != kByteaOid) {
      const auto t = r_.text(row_, column);
      const auto* p = reinterpret_cast<const std::byte*>(t.data());
      return Bytes(p, p + t.size());
    }
    std::size_t n = 0;
    unsigned char* raw = libpq().PQunescapeBytea(
        reinterpret_cast<const unsigned char*>(libpq().PQgetvalue(r_.get(), row_, column)), &n);
    if (raw == nullptr) throw std::bad_alloc();
    const auto* p = reinterpret_cast<const std::byte*>(raw);
    Bytes out(p, p + n);
    libpq().PQfreemem(raw);
    return out;
  }

 private:
  void check(int column) const {
    if (column < 0 || column >= size()) {
      throw StorageError(StorageError::Kind::other, "factum: column " + std::to_string(column) +
                                                        " is out of range (the row has " +
                                                        std::to_string(size()) + ")");
    }
  }
  [[noreturn]] void wrong(int column, const char* what) const {
    throw StorageError(StorageError::Kind::other, "factum: column " + std::to_string(column) +
                                                      " ('" + std::string(r_.text(row_, column)) +
                                                      "') is not " + what + " in '" +
                                                      conn_.shown() + "'");
  }
  const PgConn& conn_;
  const PgResult& r_;
  int row_;
};

}  // namespace

std::int64_t PgSql::execute(std::string_view sql, std::span<const SqlValue> params) {
  PgResult r = run(sql, params);
  const char* n = libpq().PQcmdTuples(r.get());
  return n != nullptr && *n != '\0' ? std::atoll(n) : 0;
}

void PgSql::query(std::string_view sql, std::span<const SqlValue> params,
                  const std::function<void(const SqlRow&)>& on_row) {
  PgResult r = run(sql, params);
  for (int i = 0; i < r.rows(); ++i) on_row(PgRow(conn_, r, i));
}

PgResult PgSql::run(std::string_view sql, std::span<const SqlValue> params) {
  int wanted = 0;
  const std::string text = dollar_params(sql, wanted);
  if (static_cast<std::size_t>(wanted) != params.size()) {
    throw InvalidArgument("factum: the SQL statement '" + std::string(sql) + "' takes " +
                          std::to_string(wanted) + " parameter(s) but " +
                          std::to_string(params.size()) + " value(s) were given");
  }
  std::vector<std::string> held(params.size());
  std::vector<const char*> values(params.size());
  std::vector<int> lengths(params.size());
  std::vector<int> formats(params.size());
  std::vector<unsigned> types(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    const SqlValue& v = params[i];
    if (std::holds_alternative<std::nullptr_t>(v)) {
      values[i] = nullptr;
    } else if (const auto* n = std::get_if<std::int64_t>(&v)) {
      held[i] = std::to_string(*n);
    } else if (const auto* d = std::get_if<double>(&v)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", *d);
      held[i] = buf;
    } else if (const auto* s = std::get_if<std::string>(&v)) {
      held[i] = *s;
    } else {
      const Bytes& b = std::get<Bytes>(v);
      held[i].assign(reinterpret_cast<const char*>(b.data()), b.size());
      formats[i] = 1;
      types[i] = kByteaOid;
    }
    if (!std::holds_alternative<std::nullptr_t>(v)) {
      values[i] = held[i].c_str();
      lengths[i] = static_cast<int>(held[i].size());
    }
  }
  return conn_.run(text.c_str(), static_cast<int>(params.size()), types.data(), values.data(),
                   lengths.data(), formats.data(), "running SQL", 0);
}

}  // namespace factum::detail::pg
