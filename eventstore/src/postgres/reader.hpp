// Pages of the log, of a stream and of a category (Storage::read_page and visit_page), as views
// over the results: one statement each (one snapshot), or, for a long read of the log or of a
// stream, parts read ahead in one round trip (ReadAhead below).
//
// Internal. Thread-safety: as the PgConn they run on.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <deque>
#include <vector>

#include "postgres/pipeline.hpp"
#include "postgres/rows.hpp"
#include "storage.hpp"

namespace factum::detail::pg {

// One page of `query`'s rows (one statement: one snapshot).
PgResult select_page(PgConn& c, const PageQuery& query, std::size_t limit);

// Names the stream keys of a page of the whole log (kPageAll) that the connection's cache does
// not know yet, with one statement; returns the cache.
const StreamNames& name_streams(PgConn& c, const PgResult& page);

// The rows of a page in parts read ahead: kReadAheadRows each, the statements of all parts sent
// at once (one round trip), each part handed out as it arrives while the server reads the next
// (the client decodes one part while the server reads the next: ~25-30% more events a second
// for a read of the whole log, docs/performance.md). For the pages of the whole log and of a
// stream forward that follow a full page (a read's first page is one statement: most reads are
// shorter than a page). Parts are ranges of positions (of versions), so that they need no
// answer from the part before (the last one open: from its first position on). A log's
// positions and a stream's versions have no gap; where a part's rows are not the next ones (a
// hole, or events committed between two parts' snapshots at the end), the walk reads the rest
// of the page with one statement from the first position (version) it has not handed out, as
// a page of one statement would have (a hole is then named as before).
inline constexpr std::size_t kReadAheadRows = 1024;
class ReadAhead {
 public:
  // Whether a page of `query` and `limit` rows is read in parts: at least two, after a full
  // page, of the log (with the previous event's hash carried) or of a stream forward.
  static bool fits(const PageQuery& query, std::size_t limit) noexcept;
  // Sends the statements of the parts (no throw but StorageError).
  ReadAhead(PgConn& c, const PageQuery& query, std::size_t limit);
  // The next part, with its streams named (names()); an empty result after the last one.
  PgResult next();
  // The names of the streams of the part last handed out, valid until the next call to next()
  // (null for a stream's page: its rows hold the stream's id).
  const StreamNames* names() const noexcept { return names_; }
  // The number of rows the part last handed out may hold.
  std::size_t size() const noexcept { return size_; }
  // Drops the parts still to come: the connection can run other statements.
  void stop() noexcept { q_.drain(); }
  // Receives every part still to come (next() hands them out in turn): for a visitor that
  // takes its time over a part's rows, so that the server finishes the page and ends its
  // transaction instead of waiting for the visitor to read on.
  void receive_rest();

 private:
  PgConn& c_;
  Pipeline q_;
  bool all_;  // a page of the whole log (else of a stream)
  std::vector<std::size_t> sizes_;
  std::size_t next_ = 0;
  std::size_t size_ = 0;
  const StreamNames* names_ = nullptr;
  std::deque<PgResult> held_;  // parts received before their turn (to name their streams)
};

// Hands out decoded rows, carrying each event's hash to the next as its previous hash along a
// read of the whole log.
template <class OnRow>
class RowWalker {
 public:
  RowWalker(PgConn& c, const PageQuery& query, OnRow& on_row)
      : c_(c),
        on_row_(on_row),
        carrying_(query.kind == PageQuery::Kind::all),
        carried_(query.carried_position),
        carried_hash_(query.carried_hash) {}

  // Hands out row `i` of `r`; false when the visitor stopped the walk (end().stopped).
  bool step(const PgResult& r, int i, const StreamNames* names) {
    read_view(r, i, v_, names);
    if (carrying_) {
      if (v_.position == 1) {
        v_.previous_hash = Hash{};
      } else if (carried_ != 0 && carried_ == v_.position - 1) {
        v_.previous_hash = carried_hash_;
      } else {
        PgResult h = Params()
                         .i64(static_cast<std::int64_t>(v_.position - 1))
                         .run(c_, pg::kHashAt.c_str(), "reading the previous event's hash");
        v_.previous_hash = Hash{};
        if (h.rows() == 1 && h.bytes(0, 0).size() == v_.previous_hash.size()) {
          std::memcpy(v_.previous_hash.data(), h.bytes(0, 0).data(), v_.previous_hash.size());
        }
      }
    } else if (r.null(i, kPreviousHash) && carried_ != 0 && carried_ == v_.position - 1) {
      v_.previous_hash = carried_hash_;  // the statement left it to the page (statements.cpp)
    }
    carried_ = v_.position;
    carried_hash_ = v_.hash;
    end_.add(v_);
    if (!on_row_(v_)) {
      end_.stopped = true;
      return false;
    }
    return true;
  }
  // Steps the rows of `r` until `limit` rows in all were handed out; false when stopped.
  bool steps(const PgResult& r, std::size_t limit, const StreamNames* names) {
    for (int i = 0; i < r.rows() && end_.rows < limit; ++i) {
      if (!step(r, i, names)) return false;
    }
    return true;
  }
  const PageEnd& end() const noexcept { return end_; }
  // Where the rest of a page starts: after the last row handed out.
  PageQuery rest_of(PageQuery query) const {
    if (end_.rows > 0) advance(query, end_.last_position, end_.last_version, end_.last_hash);
    return query;
  }

 private:
  PgConn& c_;
  OnRow& on_row_;
  bool carrying_;
  Position carried_;
  Hash carried_hash_;  // then the page's row before this one
  PageEnd end_;
  EventView v_;
};

// Tells `on_row` how many rows a result just received holds, when it wants to know (a page
// being copied reserves room for them once, rather than growing row by row).
template <class OnRow>
void expect_rows(OnRow& on_row, int rows) {
  if constexpr (requires { on_row.expect(std::size_t{}); }) {
    on_row.expect(static_cast<std::size_t>(std::max(rows, 0)));
  }
}

// Steps the rows of a page as views (one statement, or parts read ahead: ReadAhead).
template <class OnRow>
PageEnd walk_page(PgConn& c, const PageQuery& query, std::size_t limit, OnRow&& on_row) {
  RowWalker<OnRow> walk(c, query, on_row);
  if (ReadAhead::fits(query, limit)) {
    ReadAhead parts(c, query, limit);
    const int order = query.kind == PageQuery::Kind::all ? kPosition : kStreamVersion;
    auto next = static_cast<std::int64_t>(query.from);
    bool ended = false;  // a part held fewer rows than its range: the log (stream) ended there
    bool whole = false;  // every part was walked
    // A visitor slower than this over a part has the rest of the page received at once.
    constexpr auto kPatience = std::chrono::milliseconds(10);
    for (;;) {
      const PgResult r = parts.next();
      const auto part_start = std::chrono::steady_clock::now();
      if (r.get() == nullptr) {
        whole = true;
        break;
      }
      const int rows = r.rows();
      std::int64_t first = 0;
      std::int64_t last = 0;
      if (rows > 0 && (ended || !r.int64(0, order, first) || first != next ||
                       !r.int64(rows - 1, order, last) || last != next + rows - 1)) {
        break;  // not the next positions: the rest of the page in one statement
      }
      expect_rows(on_row, rows);
      for (int i = 0; i < rows && walk.end().rows < limit; ++i) {
        if (i % 128 == 127 && std::chrono::steady_clock::now() - part_start > kPatience) {
          parts.receive_rest();
        }
        if (!walk.step(r, i, parts.names())) {
          parts.stop();
          return walk.end();
        }
      }
      next += rows;
      if (static_cast<std::size_t>(rows) < parts.size()) ended = true;
    }
    parts.stop();
    if (whole) return walk.end();
  }
  if (walk.end().rows >= limit) return walk.end();
  const PageQuery rest = walk.rest_of(query);
  const PgResult r = select_page(c, rest, limit - walk.end().rows);
  expect_rows(on_row, r.rows());
  const StreamNames* names = rest.kind == PageQuery::Kind::all ? &name_streams(c, r) : nullptr;
  walk.steps(r, limit, names);
  return walk.end();
}

}  // namespace factum::detail::pg
