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
    const std::string problem = decode_row(s, event_);
    const auto at = static_cast<Position>(s.column_int(0));
    if (!problem.empty()) {
      result_ = broken(result_, VerifyResult::Problem::malformed_row, at,
                       "the event at position " + std::to_string(at) + " is malformed: " + problem);
      return false;
    }
    if (event_.category() != s.column_text(kCategoryColumn)) {
      result_ = broken(result_, VerifyResult::Problem::malformed_row, at,
                       "the event at position " + std::to_string(at) + " belongs to stream '" +
                           event_.stream_id + "', whose recorded category '" +
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
    if (hasher_(previous_, fields_of(event_)) != event_.hash) {
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

  // `sequence`: the highest position the file's AUTOINCREMENT counter has handed out.
  VerifyResult finish(Position sequence) {
    if (sequence >= next_) {
      return broken(result_, VerifyResult::Problem::truncated, next_,
                    "the log ends at position " + std::to_string(next_ - 1) +
                        " but positions up to " + std::to_string(sequence) +
                        " were written: events were removed from its end");
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
  RecordedEvent event_;
  ChainHasher hasher_;
};

}  // namespace

VerifyResult verify_chain(ReaderPool& pool, const Hash* expected_head,
                          const std::function<void(Position)>& on_progress) {
  ChainWalk walk(expected_head);
  for (;;) {
    auto conn = pool.acquire();
    Statement& s = conn->verify_page;
    StatementScope scope(s);
    s.bind(1, static_cast<std::int64_t>(walk.next()));
    s.bind(2, kVerifyPage);
    std::int64_t rows = 0;
    while (s.step("verifying the hash chain")) {
      ++rows;
      if (!walk.check(s)) return walk.result();
    }
    if (rows < kVerifyPage) break;
    if (on_progress) on_progress(walk.result().events_checked);
  }
  auto conn = pool.acquire();
  StatementScope scope(conn->sequence);
  const bool has_sequence = conn->sequence.step("reading the position counter");
  return walk.finish(has_sequence ? static_cast<Position>(conn->sequence.column_int(0)) : 0);
}

}  // namespace factum::detail
