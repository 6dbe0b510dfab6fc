#include "postgres/connection.hpp"

#include "factum/eventstore/text.hpp"

namespace factum::detail::pg {

std::string one_line(const char* message) {
  const std::string_view m = message != nullptr ? message : "";
  std::string out;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i] != '\n') {
      out.push_back(m[i]);
      continue;
    }
    while (i + 1 < m.size() && (m[i + 1] == '\t' || m[i + 1] == ' ')) ++i;
    if (i + 1 < m.size()) out.push_back(' ');
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return printable(out);
}

StorageError::Kind kind_of(const char* sqlstate, PGconn* conn) {
  if (conn != nullptr && libpq().PQstatus(conn) != CONNECTION_OK) return StorageError::Kind::io;
  const std::string_view state = sqlstate != nullptr ? sqlstate : "";
  if (state == "40001" || state == "40P01" || state == "55P03" || state == "57014") {
    return StorageError::Kind::busy;
  }
  if (state == "53100") return StorageError::Kind::full;
  if (state == "25006") return StorageError::Kind::read_only;
  if (state.starts_with("08") || state.starts_with("57P")) return StorageError::Kind::io;
  if (state == "XX001" || state == "XX002") return StorageError::Kind::corrupt;
  return StorageError::Kind::other;
}

}  // namespace factum::detail::pg
