// tests/samples/dcb_samples_test.cpp — the samples' rules that span streams, decided by query
// over tags (docs/dcb.md, "In the samples"): factum-feed's "a handle is taken once" and "a user
// likes a post at most once", factum-bank's "a payment reference is used once across all
// accounts". Each rule refused with its message and nothing written, stores older than the tags
// still refused, and races — threads of one process, and processes of the built programs —
// where exactly one claim lands and every loser is told why. Run on SQLite and, as "pg/...", on
// PostgreSQL (factum_add_test POSTGRES).
#include <doctest/doctest.h>

#include <factum/eventstore/query.hpp>
#include <factum/eventstore/tags.hpp>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bank_fixture.hpp"
#include "feed_service.hpp"
#include "personal_store.hpp"
#include "rules.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"
#include "time_text.hpp"

namespace {

using factum::test::contains;
using feed::FeedError;

factum::Timestamp at(const std::string& clock) {
  return feed::parse_time("2024-05-01T" + clock + "Z");
}

// The events tagged `tag`.
std::vector<factum::RecordedEvent> tagged(const factum::EventStore& store, const std::string& tag) {
  return factum::read_query(store, factum::Query::tagged({tag})).events;
}

struct Feed {
  factum::test::TempStore temp{factum::test::personal_options()};
  feed::FeedService feed{temp.store};
};

// Runs `n` calls of `claim(i)` on threads of their own, started together. Returns the messages
// of the refusals (std::exception::what()), and counts the claims that returned in `landed`.
std::vector<std::string> race(int n, const std::function<void(int)>& claim, int& landed) {
  std::atomic<int> ready{0};
  std::atomic<int> ok{0};
  std::mutex mu;
  std::vector<std::string> refusals;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      try {
        claim(i);
        ok.fetch_add(1);
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        refusals.emplace_back(e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  landed = ok.load();
  return refusals;
}

// Appends, without tags, what an older factum-feed wrote: alice joined, her post #1, carol's
// like of it.
void append_untagged_history(Feed& f) {
  factum::Metadata m;
  m.actor = "alice";
  const auto& registry = f.feed.registry();
  f.temp.store.append(feed::user_stream("alice"), factum::ExpectedVersion::no_stream(),
                      registry.encode(feed::UserJoined{"alice", feed::UserText{}, at("09:00")}, m));
  m.actor = "carol";
  f.temp.store.append(feed::user_stream("carol"), factum::ExpectedVersion::no_stream(),
                      registry.encode(feed::UserJoined{"carol", feed::UserText{}, at("09:00")}, m));
  m.actor = "alice";
  const feed::Posted posted{1, "alice", feed::UserText::legacy("old times"), at("09:10")};
  f.temp.store.append(feed::post_stream(1), factum::ExpectedVersion::no_stream(),
                      registry.encode(posted, m));
  m.actor = "carol";
  f.temp.store.append(feed::post_stream(1), factum::ExpectedVersion::exact(1),
                      registry.encode(feed::Liked{1, "carol", at("09:20")}, m));
}

}  // namespace

TEST_CASE("factum-feed: a join is tagged with its handle, and a taken handle is refused") {
  Feed f;
  f.feed.join("alice", at("09:00"));
  const auto joined = tagged(f.temp.store, "handle:alice");
  REQUIRE(joined.size() == 1);
  CHECK(joined.front().stream_id == "user-alice");
  CHECK(joined.front().type == "feed.UserJoined");
  const factum::Head before = f.temp.store.head();
  CHECK_THROWS_WITH_AS(f.feed.join("alice", at("10:00"), "Alice Again"),
                       "user 'alice' exists already", FeedError);
  CHECK(f.temp.store.head().position == before.position);
  CHECK(tagged(f.temp.store, "handle:alice").size() == 1);
}

TEST_CASE("factum-feed: a handle taken before the tags is refused, and a new one is tagged") {
  Feed f;
  append_untagged_history(f);
  CHECK(tagged(f.temp.store, "handle:alice").empty());
  const factum::Position head = f.temp.store.head_position();
  CHECK_THROWS_WITH_AS(f.feed.join("alice", at("10:00")), "user 'alice' exists already", FeedError);
  CHECK(f.temp.store.head_position() == head);
  f.feed.join("bob", at("10:00"));
  CHECK(tagged(f.temp.store, "handle:bob").size() == 1);
}

TEST_CASE("factum-feed: a like is tagged like:user:post, and a second like is refused") {
  Feed f;
  f.feed.join("alice", at("09:00"));
  f.feed.join("bob", at("09:00"));
  f.feed.join("carol", at("09:00"));
  const feed::PostId id = f.feed.post("alice", "hello", at("10:00"));
  CHECK(tagged(f.temp.store, "post:1").size() == 1);
  CHECK(f.feed.like("bob", id, at("10:01")) == 1);
  CHECK(f.feed.like("carol", id, at("10:02")) == 2);
  const auto liked = tagged(f.temp.store, "like:bob:1");
  REQUIRE(liked.size() == 1);
  CHECK(liked.front().type == "feed.Liked");
  CHECK(liked.front().stream_id == "post-1");
  const factum::Position head = f.temp.store.head_position();
  CHECK_THROWS_WITH_AS(f.feed.like("bob", id, at("10:03")), "'bob' already likes post #1",
                       FeedError);
  CHECK_THROWS_WITH_AS(f.feed.like("bob", 2, at("10:03")), "unknown post #2", FeedError);
  CHECK(f.temp.store.head_position() == head);
  CHECK(f.feed.find_post(id)->likes == 2);
}

TEST_CASE("factum-feed: a like of a post older than the tags is looked for in its stream") {
  Feed f;
  append_untagged_history(f);
  const factum::Position head = f.temp.store.head_position();
  CHECK_THROWS_WITH_AS(f.feed.like("carol", 1, at("10:00")), "'carol' already likes post #1",
                       FeedError);
  CHECK(f.temp.store.head_position() == head);
  CHECK(f.feed.like("alice", 1, at("10:01")) == 2);  // her own post: allowed, as before
  CHECK(tagged(f.temp.store, "like:alice:1").size() == 1);
  CHECK_THROWS_WITH_AS(f.feed.like("alice", 1, at("10:02")), "'alice' already likes post #1",
                       FeedError);
}

TEST_CASE("factum-feed: threads racing to join with the same handles, one join of each lands") {
  Feed f;
  constexpr int kHandles = 6;
  constexpr int kThreads = 4;
  int landed = 0;
  const std::vector<std::string> refusals = race(
      kHandles * kThreads,
      [&](int i) { f.feed.join("user" + std::to_string(i % kHandles), at("09:00")); }, landed);
  CHECK(landed == kHandles);
  REQUIRE(refusals.size() == static_cast<std::size_t>(kHandles * (kThreads - 1)));
  for (const std::string& r : refusals) {
    CHECK_MESSAGE(contains(r, "exists already"), r);
  }
  for (int h = 0; h < kHandles; ++h) {
    CHECK(tagged(f.temp.store, "handle:user" + std::to_string(h)).size() == 1);
  }
  CHECK(f.feed.totals().users == kHandles);
}

TEST_CASE("factum-feed: threads racing for the same like, one like of each lands") {
  Feed f;
  f.feed.join("alice", at("09:00"));
  f.feed.join("bob", at("09:00"));
  constexpr int kPosts = 5;
  constexpr int kThreads = 4;
  for (int p = 0; p < kPosts; ++p) f.feed.post("alice", "post " + std::to_string(p), at("10:00"));
  int landed = 0;
  const std::vector<std::string> refusals = race(
      kPosts * kThreads, [&](int i) { f.feed.like("bob", 1 + i % kPosts, at("11:00")); }, landed);
  CHECK(landed == kPosts);
  REQUIRE(refusals.size() == static_cast<std::size_t>(kPosts * (kThreads - 1)));
  for (const std::string& r : refusals) {
    CHECK_MESSAGE(contains(r, "'bob' already likes post #"), r);
  }
  for (int p = 1; p <= kPosts; ++p) {
    CHECK(tagged(f.temp.store, "like:bob:" + std::to_string(p)).size() == 1);
    CHECK(f.feed.find_post(p)->likes == 1);
  }
}

TEST_CASE("factum-bank: a payment reference is used once across all accounts") {
  bank::test::BankFixture f;
  f.open_with("acc-1", "100");
  f.open_with("acc-2", "100");
  f.bank.deposit("acc-1", f.m("25"), "invoice", "INV-2024-0042");
  const auto used = tagged(f.store(), "payment:INV-2024-0042");
  REQUIRE(used.size() == 1);
  CHECK(used.front().stream_id == "account-acc-1");
  CHECK(used.front().type == "bank.Deposited");
  const factum::Position head = f.store().head_position();
  const char* message =
      "payment reference INV-2024-0042 was used already, by account acc-1 (position ";
  for (const std::function<void()>& again : std::vector<std::function<void()>>{
           [&] { f.bank.deposit("acc-2", f.m("25"), "invoice", "INV-2024-0042"); },
           [&] { f.bank.deposit("acc-1", f.m("25"), "invoice", "INV-2024-0042"); },
           [&] { f.bank.withdraw("acc-2", f.m("5"), "card", "INV-2024-0042"); },
           [&] { f.bank.transfer("acc-2", "acc-1", f.m("5"), "rent", "INV-2024-0042"); }}) {
    try {
      again();
      FAIL("a used payment reference was accepted");
    } catch (const bank::Refused& r) {
      CHECK(r.reason() == bank::Refused::Reason::reference_used);
      CHECK_MESSAGE(contains(r.what(), message), r.what());
    }
  }
  CHECK(f.store().head_position() == head);
  CHECK(f.bank.account("acc-1")->balance == f.m("125"));
  CHECK(f.bank.account("acc-2")->balance == f.m("100"));
  CHECK_THROWS_AS(f.bank.deposit("acc-2", f.m("1"), "x", "bad ref"), bank::Refused);
  f.bank.transfer("acc-2", "acc-1", f.m("5"), "rent", "RENT-2024-05");
  CHECK(tagged(f.store(), "payment:RENT-2024-05").size() == 1);  // the debit carries it
}

TEST_CASE("factum-bank: threads booking one payment reference to many accounts, one lands") {
  bank::test::BankFixture f;
  constexpr int kAccounts = 6;
  for (int a = 1; a <= kAccounts; ++a) f.open_with("acc-" + std::to_string(a), "100");
  int landed = 0;
  const std::vector<std::string> refusals = race(
      kAccounts * 2,
      [&](int i) {
        const std::string account = "acc-" + std::to_string(1 + i % kAccounts);
        if (i < kAccounts) {
          f.bank.deposit(account, f.m("10"), "salary", "SAL-7");
        } else {
          f.bank.deposit(account, f.m("1"), "cash");  // no reference: the same account moves
        }
      },
      landed);
  CHECK(landed == kAccounts + 1);
  REQUIRE(refusals.size() == static_cast<std::size_t>(kAccounts - 1));
  for (const std::string& r : refusals) {
    CHECK_MESSAGE(contains(r, "payment reference SAL-7 was used already, by account acc-"), r);
  }
  REQUIRE(tagged(f.store(), "payment:SAL-7").size() == 1);
  bank::Money total;
  for (const bank::AccountRow& row : f.bank.accounts()) total += row.balance;
  CHECK(total == f.m(std::to_string(kAccounts * 101 + 10).c_str()));
}

namespace {

// Runs the programs argv(0), ..., argv(n - 1) at once, each process in a folder of its own;
// returns the runs.
std::vector<factum::test::ProgramRun> at_once(
    int n, const std::function<std::vector<std::string>(int)>& argv) {
  std::vector<factum::test::ProgramRun> runs(static_cast<std::size_t>(n));
  std::vector<std::unique_ptr<factum::test::TempDir>> dirs;
  for (int i = 0; i < n; ++i) dirs.push_back(std::make_unique<factum::test::TempDir>());
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      const auto k = static_cast<std::size_t>(i);
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      runs[k] = factum::test::run_program(argv(i), dirs[k]->path());
    });
  }
  for (std::thread& t : threads) t.join();
  return runs;
}

// How many runs exited 0; checks that every other one exited 1 with `message` on stderr.
int winners(const std::vector<factum::test::ProgramRun>& runs, const std::string& message) {
  int ok = 0;
  for (const factum::test::ProgramRun& r : runs) {
    if (r.code == 0) {
      ++ok;
    } else {
      CHECK(r.code == 1);
      CHECK_MESSAGE(contains(r.err, message), r.err);
    }
  }
  return ok;
}

}  // namespace

TEST_CASE("factum-feed processes racing to join one handle and to like one post: one lands") {
  Feed f;
  f.feed.join("alice", at("09:00"));
  f.feed.post("alice", "hello", at("10:00"));
  const std::string db = f.temp.path.string();
  const std::string kek = factum::test::samples_kek().string();
  const auto joins = at_once(4, [&](int) -> std::vector<std::string> {
    return {FACTUM_FEED_BIN, "--db", db, "--kek", kek, "join", "zoe"};
  });
  CHECK(winners(joins, "factum-feed: user 'zoe' exists already") == 1);
  CHECK(tagged(f.temp.store, "handle:zoe").size() == 1);
  const auto likes = at_once(4, [&](int) -> std::vector<std::string> {
    return {FACTUM_FEED_BIN, "--db", db, "--kek", kek, "like", "zoe", "1"};
  });
  CHECK(winners(likes, "factum-feed: 'zoe' already likes post #1") == 1);
  CHECK(tagged(f.temp.store, "like:zoe:1").size() == 1);
}

TEST_CASE("factum-bank processes racing to book one payment reference: one lands") {
  bank::test::BankFixture f;
  for (int a = 1; a <= 4; ++a) f.open_with("acc-" + std::to_string(a), "100");
  const std::string db = f.temp.path.string();
  const std::string kek = factum::test::samples_kek().string();
  // Each process books the reference to another account.
  const auto runs = at_once(4, [&](int a) -> std::vector<std::string> {
    return {FACTUM_BANK_BIN,
            "--db",
            db,
            "--kek",
            kek,
            "deposit",
            "acc-" + std::to_string(a + 1),
            "10",
            "--reference",
            "SAL-2024-05"};
  });
  CHECK(winners(runs, "factum-bank: payment reference SAL-2024-05 was used already") == 1);
  CHECK(tagged(f.store(), "payment:SAL-2024-05").size() == 1);
}
