#include "postgres/reader.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace factum::detail::pg {
namespace {

const std::string& page_sql(PageQuery::Kind kind, bool stored_previous) {
  switch (kind) {
    case PageQuery::Kind::all:
      return pg::kPageAll;
    case PageQuery::Kind::stream_forward:
      return pg::row_reads(stored_previous).page_stream_forward;
    case PageQuery::Kind::stream_backward:
      return pg::row_reads(stored_previous).page_stream_backward;
    case PageQuery::Kind::category:
      return pg::row_reads(stored_previous).page_category;
  }
  return pg::kPageAll;
}

}  // namespace

PgResult select_page(PgConn& c, const PageQuery& query, std::size_t limit) {
  Params p;
  if (query.kind != PageQuery::Kind::all) p.text(query.key);
  p.i64(query_lower_bound(query));
  p.i64(static_cast<std::int64_t>(std::min<std::size_t>(limit, 1U << 30)));
  return p.run(c, page_sql(query.kind, c.stored_previous()).c_str(), "reading events");
}

const StreamNames& name_streams(PgConn& c, const PgResult& page) {
  StreamNames& names = c.stream_names();
  std::vector<std::int64_t> unknown;
  std::int64_t key = 0;
  for (int i = 0; i < page.rows(); ++i) {
    // A row without a key is left to decode, which reports it.
    if (!page.null(i, kStreamId) && page.int64(i, kStreamId, key) && !names.contains(key)) {
      unknown.push_back(key);
    }
  }
  if (unknown.empty()) return names;
  std::sort(unknown.begin(), unknown.end());
  unknown.erase(std::unique(unknown.begin(), unknown.end()), unknown.end());
  std::string list;  // '{k1,k2,...}'
  for (const std::int64_t k : unknown) list += (list.empty() ? "{" : ",") + std::to_string(k);
  list += "}";
  // A key no stream row has stays unknown: decode reports its row.
  const PgResult r = Params().text(list).run(c, pg::kStreamNames.c_str(), "naming streams");
  for (int i = 0; i < r.rows(); ++i) {
    if (r.int64(i, 0, key) && !r.null(i, 1)) names.emplace(key, r.text(i, 1));
  }
  return names;
}

}  // namespace factum::detail::pg
