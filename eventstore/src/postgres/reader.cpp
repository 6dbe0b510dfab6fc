#include "postgres/reader.hpp"

#include <algorithm>
#include <cstdint>

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

}  // namespace factum::detail::pg
