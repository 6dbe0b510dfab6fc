// Pages of the log, of a stream and of a category (Storage::read_page and visit_page), one
// statement each (one snapshot), as views over the result.
//
// Internal. Thread-safety: as the PgConn they run on.
#pragma once

#include <cstddef>
#include <cstring>

#include "postgres/pipeline.hpp"
#include "postgres/rows.hpp"
#include "storage.hpp"

namespace factum::detail::pg {

// One page of `query`'s rows (one statement: one snapshot).
PgResult select_page(PgConn& c, const PageQuery& query, std::size_t limit);

// Names the stream keys of a page of the whole log (kPageAll) that the connection's cache does
// not know yet, with one statement; returns the cache.
const StreamNames& name_streams(PgConn& c, const PgResult& page);

// Steps the rows of a page as views, carrying the previous hash along a read of the whole log.
template <class OnRow>
PageEnd walk_page(PgConn& c, const PageQuery& query, std::size_t limit, OnRow&& on_row) {
  const PgResult r = select_page(c, query, limit);
  const bool carrying = query.kind == PageQuery::Kind::all;
  const StreamNames* names = carrying ? &name_streams(c, r) : nullptr;
  Position carried = query.carried_position;
  Hash carried_hash = query.carried_hash;  // then the page's row before this one
  PageEnd end;
  EventView v;
  for (int i = 0; i < r.rows() && end.rows < limit; ++i) {
    read_view(r, i, v, names);
    if (carrying) {
      if (v.position == 1) {
        v.previous_hash = Hash{};
      } else if (carried != 0 && carried == v.position - 1) {
        v.previous_hash = carried_hash;
      } else {
        PgResult h = Params()
                         .i64(static_cast<std::int64_t>(v.position - 1))
                         .run(c, pg::kHashAt.c_str(), "reading the previous event's hash");
        v.previous_hash = Hash{};
        if (h.rows() == 1 && h.bytes(0, 0).size() == v.previous_hash.size()) {
          std::memcpy(v.previous_hash.data(), h.bytes(0, 0).data(), v.previous_hash.size());
        }
      }
    } else if (r.null(i, kPreviousHash) && carried != 0 && carried == v.position - 1) {
      v.previous_hash = carried_hash;  // the statement left it to the page (statements.cpp)
    }
    carried = v.position;
    carried_hash = v.hash;
    ++end.rows;
    end.last_position = v.position;
    end.last_version = v.stream_version;
    end.last_hash = v.hash;
    if (!on_row(v)) {
      end.stopped = true;
      break;
    }
  }
  return end;
}

}  // namespace factum::detail::pg
