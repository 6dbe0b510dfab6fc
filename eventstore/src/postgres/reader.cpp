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

// The stream keys of a page of the whole log that `names` does not name.
std::vector<std::int64_t> unknown_streams(const StreamNames& names, const PgResult& page) {
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
  StreamNames& names = c.stream_names();  // cleared here when full, not between naming and use
  std::vector<std::int64_t> unknown = unknown_streams(names, page);
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
  // A page after a full one (a read's first page is one statement: most reads are short), of
  // the log with the hash of the event before it carried, or of a stream forward.
  return limit >= 2 * kReadAheadRows && limit <= (std::size_t{1} << 30) && query.from > 1 &&
         query.from < (std::uint64_t{1} << 62) && query.carried_position != 0 &&
         ((query.kind == PageQuery::Kind::all && query.carried_position == query.from - 1) ||
          query.kind == PageQuery::Kind::stream_forward);
}

ReadAhead::ReadAhead(PgConn& c, const PageQuery& query, std::size_t limit)
    : c_(c), q_(c), all_(query.kind == PageQuery::Kind::all) {
  // Part i: the positions (versions) [from + i * kReadAheadRows, its end). The last part has no
  // end: a hole at the end of its range shows as its rows after the hole, where a range would
  // have ended short as the log's end does.
  const RowReads& reads = row_reads(c.stored_previous());
  auto from = static_cast<std::int64_t>(query.from);
  for (std::size_t done = 0; done < limit;) {
    const std::size_t size = std::min(kReadAheadRows, limit - done);
    done += size;
    const bool last = done == limit;
    const std::int64_t to = from + static_cast<std::int64_t>(size);
    Params p;
    if (!all_) p.text(query.key);
    p.i64(from);
    if (!last) p.i64(to);
    p.i64(static_cast<std::int64_t>(size));
    q_.send(all_ ? (last ? pg::kPageAll : pg::kPageAllRange)
                 : (last ? reads.page_stream_forward : reads.page_stream_forward_range),
            p);
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
  if (!all_) return r;          // a stream's page names its stream from the query
  names_ = &c_.stream_names();  // cleared here when full: between parts, no view left in it
  if (!unknown_streams(*names_, r).empty()) {
    receive_rest();                 // naming takes a statement of its own
    names_ = &name_streams(c_, r);  // not full (just checked): not cleared
  }
  return r;
}

void ReadAhead::receive_rest() {
  for (PgResult more = q_.next("reading events"); more.get() != nullptr;
       more = q_.next("reading events")) {
    held_.push_back(std::move(more));
  }
}

}  // namespace factum::detail::pg
