#include "verify.hpp"

#include <string>

#include "hash_chain.hpp"
#include "rows.hpp"

namespace factum::detail {
namespace {

constexpr std::int64_t kVerifyPage = 4096;
constexpr int kCategoryColumn = 15;  // after the 15 columns of kEventColumns

VerifyResult broken(VerifyResult r, VerifyResult::Problem problem, Position position,
                    std::string message) {
  r.problem = problem;
  r.position = position;
  r.message = std::move(message);
  return r;
}

class ChainWalk {
 public:
  explicit ChainWalk(const Hash* expected_head)
      : expected_(expected_head),
        seen_head_(expected_head == nullptr || *expected_head == Hash{}) {}

  // Checks the current row of `s`; returns false (with result_ filled) at the first break.
  bool check(const Statement& s) {
    // A view over the row: nothing is copied; the stored key/values are hashed as stored.
    const char* problem = decode_view(s, event_);
    const auto at = static_cast<Position>(s.column_int(0));
    if (problem != nullptr) {
      result_ = broken(
          result_, VerifyResult::Problem::malformed_row, at,
          "the event at position " + std::to_string(at) + " is malformed: " + std::string(problem));
      return false;
    }
    if (event_.category() != s.column_text(kCategoryColumn)) {
      result_ = broken(result_, VerifyResult::Problem::malformed_row, at,
                       "the event at position " + std::to_string(at) + " belongs to stream '" +
                           std::string(event_.stream_id) + "', whose recorded category '" +
                           std::string(s.column_text(kCategoryColumn)) + "' is not '" +
                           std::string(event_.category()) + "'");
      return false;
    }
    if (event_.position != next_) {
      result_ = broken(result_, VerifyResult::Problem::position_gap, next_,
                       "events at positions " + std::to_string(next_) + " to " +
                           std::to_string(event_.position - 1) + " are missing (deleted)");
      return false;
    }
    if (hasher_(previous_, event_) != event_.hash) {
      result_ = broken(result_, VerifyResult::Problem::hash_mismatch, at,
                       "the hash of the event at position " + std::to_string(at) +
                           " does not match its contents and the previous event's hash: it "
                           "was altered, or an event before it was inserted, removed or "
                           "reordered");
      return false;
    }
    previous_ = event_.hash;
    if (expected_ != nullptr && event_.hash == *expected_) seen_head_ = true;
    ++next_;
    ++result_.events_checked;
    return true;
  }

  // Reports an event row below position 1 (`lowest`), which no walk from 1 reaches.
  VerifyResult unchained(std::int64_t lowest) const {
    return broken(result_, VerifyResult::Problem::unchained_row, 1,
                  "an event row at position " + std::to_string(lowest) +
                      " lies outside the chain (positions start at 1): it was inserted behind "
                      "the library's back");
  }

  // `sequence`: the highest position the file's AUTOINCREMENT counter has handed out;
  // `rows`: how many rows the events table holds.
  VerifyResult finish(Position sequence, std::int64_t rows) {
    if (sequence >= next_) {
      return broken(result_, VerifyResult::Problem::truncated, next_,
                    "the log ends at position " + std::to_string(next_ - 1) +
                        " but positions up to " + std::to_string(sequence) +
                        " were written: events were removed from its end");
    }
    if (rows != static_cast<std::int64_t>(result_.events_checked)) {
      return broken(result_, VerifyResult::Problem::unchained_row, next_,
                    "the events table holds " + std::to_string(rows) + " rows but the chain " +
                        std::to_string(result_.events_checked) +
                        ": rows were inserted behind the library's back");
    }
    if (!seen_head_) {
      return broken(result_, VerifyResult::Problem::head_mismatch, next_,
                    "the expected head hash " + to_hex(*expected_) +
                        " is not in the chain: the log was cut off or rewritten (it ends at "
                        "position " +
                        std::to_string(next_ - 1) + ")");
    }
    return result_;
  }

  Position next() const noexcept { return next_; }
  const VerifyResult& result() const noexcept { return result_; }

 private:
  const Hash* expected_;
  bool seen_head_;
  Hash previous_{};
  Position next_ = 1;
  VerifyResult result_;
  EventView event_;  // the current row's, valid until the next step
  ChainHasher hasher_;
};

}  // namespace

namespace {

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
    while (s.step("verifying the hash chain")) {
      ++rows;
      if (!walk.check(s)) return false;
    }
    if (rows < kVerifyPage) return true;
    if (on_progress) on_progress(walk.result().events_checked);
  }
}

// A stream row that no event refers to: streams are only created with their first event.
VerifyResult check_streams(ReadConnection& conn, VerifyResult r) {
  StatementScope scope(conn.empty_streams);
  if (!conn.empty_streams.step("checking the streams")) return r;
  return broken(std::move(r), VerifyResult::Problem::unchained_row, 0,
                "the stream '" + std::string(conn.empty_streams.column_text(0)) +
                    "' has no events: its row was inserted behind the library's back");
}

}  // namespace

VerifyResult verify_chain(ReaderPool& pool, const Hash* expected_head,
                          const std::function<void(Position)>& on_progress) {
  auto conn = pool.acquire();
  // One read transaction for everything below: the counts, the walk and the counter describe
  // the same snapshot, however many appends commit meanwhile.
  Transaction snapshot(conn->db, Transaction::Mode::deferred);
  ChainWalk walk(expected_head);
  const EventRows rows = event_rows(*conn);
  if (rows.min < 1) return walk.unchained(rows.min);
  if (!walk_pages(*conn, walk, on_progress)) return walk.result();
  const VerifyResult r = walk.finish(sequence_of(*conn), rows.count);
  return r.ok() ? check_streams(*conn, r) : r;
}

}  // namespace factum::detail
