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

namespace {

// The stream keys of a page of the whole log that the connection's cache does not name.
std::vector<std::int64_t> unknown_streams(PgConn& c, const PgResult& page) {
  const StreamNames& names = c.stream_names();
  std::vector<std::int64_t> unknown;
  std::int64_t key = 0;
  for (int i = 0; i < page.rows(); ++i) {
    // A row without a key is left to decode, which reports it.
    if (!page.null(i, kStreamId) && page.int64(i, kStreamId, key) && !names.contains(key)) {
      unknown.push_back(key);
    }
  }
  return unknown;
}

}  // namespace

const StreamNames& name_streams(PgConn& c, const PgResult& page) {
  StreamNames& names = c.stream_names();
  std::vector<std::int64_t> unknown = unknown_streams(c, page);
  if (unknown.empty()) return names;
  std::int64_t key = 0;
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

bool ReadAhead::fits(const PageQuery& query, std::size_t limit) noexcept {
  return query.kind == PageQuery::Kind::all && limit >= 2 * kReadAheadRows &&
         limit <= (std::size_t{1} << 30) && query.from < (std::uint64_t{1} << 62) &&
         (query.from <= 1 || query.carried_position == query.from - 1);
}

ReadAhead::ReadAhead(PgConn& c, const PageQuery& query, std::size_t limit) : c_(c), q_(c) {
  // Part i: the positions [first + i * kReadAheadRows, its end); the first part also below
  // position 1 when the read starts there (query_lower_bound: such rows are reported). The
  // last part has no end: a hole at the end of its range shows as its rows after the hole,
  // where a range would have ended short as the log's end does.
  const auto first = static_cast<std::int64_t>(std::max<std::uint64_t>(query.from, 1));
  std::int64_t from = query_lower_bound(query);
  std::int64_t to = first;
  for (std::size_t done = 0; done < limit;) {
    const std::size_t size = std::min(kReadAheadRows, limit - done);
    done += size;
    to += static_cast<std::int64_t>(size);
    Params p;
    p.i64(from);
    if (done < limit) p.i64(to);
    p.i64(static_cast<std::int64_t>(size));
    q_.send(done < limit ? pg::kPageAllRange : pg::kPageAll, p);
    sizes_.push_back(size);
    from = to;
  }
  q_.sync("reading events");
}

PgResult ReadAhead::next() {
  PgResult r;
  if (!held_.empty()) {
    r = std::move(held_.front());
    held_.pop_front();
  } else {
    r = q_.next("reading events");
  }
  if (r.get() == nullptr) return r;
  size_ = sizes_[next_++];
  if (!unknown_streams(c_, r).empty()) {
    // Naming takes a statement of its own: the parts still to come are received first.
    for (PgResult more = q_.next("reading events"); more.get() != nullptr;
         more = q_.next("reading events")) {
      held_.push_back(std::move(more));
    }
    name_streams(c_, r);
  }
  return r;
}

}  // namespace factum::detail::pg
