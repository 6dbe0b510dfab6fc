#include "sqlite/verify.hpp"

#include "chain_walk.hpp"
#include "sqlite/rows.hpp"

namespace factum::detail {
namespace {

constexpr std::int64_t kVerifyPage = 4096;
constexpr int kCategoryColumn = 15;  // after the 15 columns of kEventColumns

struct EventRows {
  std::int64_t count = 0;
  std::int64_t min = 1;
};

EventRows event_rows(ReadConnection& conn) {
  StatementScope scope(conn.event_rows);
  EventRows rows;
  if (conn.event_rows.step("counting the events")) {
    rows.count = conn.event_rows.column_int(0);
    if (rows.count > 0) rows.min = conn.event_rows.column_int(1);
  }
  return rows;
}

Position sequence_of(ReadConnection& conn) {
  StatementScope scope(conn.sequence);
  return conn.sequence.step("reading the position counter")
             ? static_cast<Position>(conn.sequence.column_int(0))
             : 0;
}

// Walks the pages from position 1; false when the walk stopped at a break.
bool walk_pages(ReadConnection& conn, ChainWalk& walk,
                const std::function<void(Position)>& on_progress) {
  for (;;) {
    Statement& s = conn.verify_page;
    StatementScope scope(s);
    s.bind(1, static_cast<std::int64_t>(walk.next()));
    s.bind(2, kVerifyPage);
    std::int64_t rows = 0;
    EventView event;  // a view over the row: nothing is copied
    while (s.step("verifying the hash chain")) {
      ++rows;
      const char* problem = decode_view(s, event);
      if (!walk.check(problem, event, static_cast<Position>(s.column_int(0)),
                      s.column_text(kCategoryColumn))) {
        return false;
      }
    }
    if (rows < kVerifyPage) return true;
    if (on_progress) on_progress(walk.result().events_checked);
  }
}

// A stream row that no event refers to: streams are only created with their first event.
VerifyResult check_streams(ReadConnection& conn, const ChainWalk& walk, VerifyResult r) {
  StatementScope scope(conn.empty_streams);
  if (!conn.empty_streams.step("checking the streams")) return r;
  return walk.empty_stream(conn.empty_streams.column_text(0));
}

}  // namespace

VerifyResult verify_chain(ReaderPool& pool, const VerifyOptions& options, TagDigest& tags) {
  auto conn = pool.acquire();
  // One read transaction for everything below: the counts, the walk and the counter describe
  // the same snapshot, however many appends commit meanwhile.
  Transaction snapshot(conn->db, Transaction::Mode::deferred);
  ChainWalk walk(options, &tags);
  const EventRows rows = event_rows(*conn);
  if (rows.min < 1) return walk.unchained(rows.min);
  if (!walk_pages(*conn, walk, options.on_progress)) return walk.result();
  const VerifyResult r = walk.finish(sequence_of(*conn), rows.count);
  return r.ok() ? check_streams(*conn, walk, r) : r;
}

}  // namespace factum::detail
