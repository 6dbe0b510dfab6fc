#include "postgres/reader.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace factum::detail::pg {
namespace {

const std::string& page_sql(PageQuery::Kind kind) {
  switch (kind) {
    case PageQuery::Kind::all:
      return pg::kPageAll;
    case PageQuery::Kind::stream_forward:
      return pg::kPageStreamForward;
    case PageQuery::Kind::stream_backward:
      return pg::kPageStreamBackward;
    case PageQuery::Kind::category:
      return pg::kPageCategory;
  }
  return pg::kPageAll;
}

}  // namespace

PgResult select_page(PgConn& c, const PageQuery& query, std::size_t limit) {
  Params p;
  if (query.kind != PageQuery::Kind::all) p.text(query.key);
  p.i64(query_lower_bound(query));
  p.i64(static_cast<std::int64_t>(std::min<std::size_t>(limit, 1U << 30)));
  return p.run(c, page_sql(query.kind).c_str(), "reading events");
}

const StreamNames& name_streams(PgConn& c, const PgResult& page) {
  StreamNames& names = c.stream_names();
  std::string unknown;  // '{k1,k2,...}'
  std::vector<std::int64_t> asked;
  std::int64_t key = 0;
  for (int i = 0; i < page.rows(); ++i) {
    if (page.null(i, kStreamId) || !page.int64(i, kStreamId, key)) continue;  // decode says
    if (names.contains(key)) continue;
    names.emplace(key, std::string());  // asked once per page; "" until named
    asked.push_back(key);
    unknown += (unknown.empty() ? "{" : ",") + std::to_string(key);
  }
  if (unknown.empty()) return names;
  unknown += "}";
  try {
    const PgResult r = Params().text(unknown).run(c, pg::kStreamNames.c_str(), "naming streams");
    for (int i = 0; i < r.rows(); ++i) {
      if (r.int64(i, 0, key) && !r.null(i, 1)) names[key] = std::string(r.text(i, 1));
    }
  } catch (...) {
    names.clear();  // no key left half named
    throw;
  }
  // A key no stream row has: not cached, so that decode reports the row.
  for (const std::int64_t k : asked) {
    if (names[k].empty()) names.erase(k);
  }
  return names;
}

}  // namespace factum::detail::pg
