// samples/feed through its API: the rules of the commands (refusals write nothing), the
// fan-out of posts to the followers at the time of posting, and the windowed metrics of
// `feed stats` counted exactly on hand-made histories, deterministic on replay.
#include <chrono>
#include <string>
#include <vector>

#include "demo.hpp"
#include "doctest/doctest.h"
#include "feed_service.hpp"
#include "metrics.hpp"
#include "personal_store.hpp"
#include "report.hpp"
#include "rules.hpp"
#include "support/temp_dir.hpp"
#include "time_text.hpp"

namespace {

using namespace std::chrono_literals;
using factum::Timestamp;
using feed::FeedError;

// 2024-05-01 at "HH:MM" or "HH:MM:SS", UTC.
Timestamp at(const std::string& clock) { return feed::parse_time("2024-05-01T" + clock + "Z"); }

struct Fixture {
  factum::test::TempStore temp{factum::test::personal_options()};
  feed::FeedService feed{temp.store};

  // Users join at 09:00.
  void join(std::initializer_list<const char*> users) {
    for (const char* u : users) feed.join(u, at("09:00"));
  }
  feed::Stats stats() { return feed::compute_stats(temp.store, feed.registry()); }
};

// Who received `post`, in name order.
std::vector<std::string> receivers(factum::EventStore& store, feed::PostId post) {
  std::vector<std::string> out;
  store.read_sql([&](factum::Sql& sql) {
    sql.query("SELECT user FROM feeds WHERE post = ?1 ORDER BY user", {post},
              [&](const factum::SqlRow& row) { out.push_back(row.text(0)); });
  });
  return out;
}

// The log's head and every read-model row, to prove a refused command changed nothing.
std::string state_of(factum::EventStore& store) {
  std::string out = factum::to_hex(store.head().hash);
  store.read_sql([&](factum::Sql& sql) {
    for (const char* q : {"SELECT post || author || text || at || likes FROM posts ORDER BY post",
                          "SELECT user || post || author || at FROM feeds ORDER BY user, post",
                          "SELECT follower || followee || since FROM follows ORDER BY 1",
                          "SELECT user || joined FROM users ORDER BY user"}) {
      sql.query(q, {}, [&](const factum::SqlRow& row) { out += "|" + row.text(0); });
    }
  });
  return out;
}

// Runs `command`, which must throw FeedError with `message`, and checks nothing changed.
template <class Command>
void refused(Fixture& f, Command command, const std::string& message) {
  const std::string before = state_of(f.temp.store);
  CHECK_THROWS_WITH_AS(command(), message.c_str(), FeedError);
  CHECK(state_of(f.temp.store) == before);
}

}  // namespace

TEST_CASE("join refuses a taken name and a malformed one, writing nothing") {
  Fixture f;
  f.join({"alice"});
  refused(
      f, [&] { f.feed.join("alice", at("10:00")); }, "user 'alice' exists already");
  refused(
      f, [&] { f.feed.join("Alice", at("10:00")); },
      "malformed user name 'Alice': use 1-32 lowercase letters, digits, '_' or '.', "
      "starting with a letter");
  CHECK_THROWS_AS(f.feed.join("", at("10:00")), FeedError);
  CHECK_THROWS_AS(f.feed.join(std::string(33, 'a'), at("10:00")), FeedError);
  CHECK(f.feed.totals().users == 1);
}

TEST_CASE("posting needs a known author and a one-line text of at most 280 characters") {
  Fixture f;
  f.join({"alice"});
  refused(
      f, [&] { f.feed.post("zed", "hi", at("10:00")); }, "unknown user 'zed'");
  refused(
      f, [&] { f.feed.post("alice", "   ", at("10:00")); }, "post text is empty");
  refused(
      f, [&] { f.feed.post("alice", std::string(281, 'x'), at("10:00")); },
      "post text is 281 characters; the limit is 280");
  refused(
      f, [&] { f.feed.post("alice", "two\nlines", at("10:00")); },
      "post text must be one line without control characters");
  refused(
      f, [&] { f.feed.post("alice", "bad \xff byte", at("10:00")); },
      "post text is not valid UTF-8");
  std::string longest;
  for (int i = 0; i < 280; ++i) longest += "é";  // 280 characters, 560 bytes
  CHECK(f.feed.post("alice", longest, at("10:00")) == 1);
}

TEST_CASE("post ids are numbered from 1 and stored with author, text and time") {
  Fixture f;
  f.join({"alice", "bob"});
  CHECK(f.feed.post("alice", "first", at("10:00")) == 1);
  CHECK(f.feed.post("bob", "second", at("10:01")) == 2);
  const auto post = f.feed.find_post(2);
  REQUIRE(post);
  CHECK(post->author == "bob");
  CHECK(post->text == "second");
  CHECK(post->at == at("10:01"));
  CHECK(post->likes == 0);
  CHECK_FALSE(f.feed.find_post(3));
}

TEST_CASE("a user likes an existing post once") {
  Fixture f;
  f.join({"alice", "bob", "carol"});
  const feed::PostId id = f.feed.post("alice", "hello", at("10:00"));
  CHECK(f.feed.like("bob", id, at("10:01")) == 1);
  CHECK(f.feed.like("carol", id, at("10:02")) == 2);
  refused(
      f, [&] { f.feed.like("bob", id, at("10:03")); }, "'bob' already likes post #1");
  refused(
      f, [&] { f.feed.like("bob", 7, at("10:03")); }, "unknown post #7");
  refused(
      f, [&] { f.feed.like("zed", id, at("10:03")); }, "unknown user 'zed'");
  CHECK(f.feed.find_post(id)->likes == 2);
}

TEST_CASE(
    "follow refuses oneself, a second follow and unknown users, and unfollow needs a follow") {
  Fixture f;
  f.join({"alice", "bob"});
  f.feed.follow("bob", "alice", at("10:00"));
  refused(
      f, [&] { f.feed.follow("bob", "alice", at("10:01")); }, "'bob' already follows 'alice'");
  refused(
      f, [&] { f.feed.follow("bob", "bob", at("10:01")); },
      "a user cannot follow themself ('bob')");
  refused(
      f, [&] { f.feed.follow("bob", "zed", at("10:01")); }, "unknown user 'zed'");
  refused(
      f, [&] { f.feed.follow("zed", "bob", at("10:01")); }, "unknown user 'zed'");
  refused(
      f, [&] { f.feed.unfollow("alice", "bob", at("10:01")); }, "'alice' does not follow 'bob'");
  CHECK(f.feed.followers("alice") == std::vector<std::string>{"bob"});
  f.feed.unfollow("bob", "alice", at("10:02"));
  CHECK(f.feed.followers("alice").empty());
  f.feed.follow("bob", "alice", at("10:03"));  // following again is allowed
  CHECK(f.feed.followers("alice") == std::vector<std::string>{"bob"});
}

TEST_CASE("a post reaches exactly the author's followers at the time of posting") {
  Fixture f;
  f.join({"alice", "bob", "carol", "dave", "erin"});
  f.feed.follow("bob", "alice", at("09:10"));
  f.feed.follow("carol", "alice", at("09:10"));
  f.feed.follow("erin", "alice", at("09:10"));
  f.feed.unfollow("erin", "alice", at("09:20"));
  const feed::PostId first = f.feed.post("alice", "one", at("10:00"));
  CHECK(receivers(f.temp.store, first) == std::vector<std::string>{"bob", "carol"});

  f.feed.follow("dave", "alice", at("10:10"));  // later: no backfill of the first post
  const feed::PostId second = f.feed.post("alice", "two", at("10:20"));
  CHECK(receivers(f.temp.store, second) == std::vector<std::string>{"bob", "carol", "dave"});
  CHECK(f.feed.feed_length("dave") == 1);

  f.feed.unfollow("carol", "alice", at("10:30"));  // delivered posts stay in carol's feed
  const feed::PostId third = f.feed.post("alice", "three", at("10:40"));
  CHECK(receivers(f.temp.store, third) == std::vector<std::string>{"bob", "dave"});
  CHECK(f.feed.feed_length("carol") == 2);
  CHECK(f.feed.feed_length("alice") == 0);  // an author's own posts are not in their feed
  CHECK(f.feed.delivered(third) == 2);
}

TEST_CASE("a feed lists posts newest first, with likes, up to the limit") {
  Fixture f;
  f.join({"alice", "bob", "carol"});
  f.feed.follow("carol", "alice", at("09:30"));
  f.feed.follow("carol", "bob", at("09:30"));
  f.feed.post("alice", "a1", at("10:00"));
  f.feed.post("bob", "b1", at("10:05"));
  f.feed.post("alice", "a2", at("10:03"));  // logged last, happened second
  f.feed.like("bob", 1, at("10:06"));
  const auto items = f.feed.feed("carol", 2);
  REQUIRE(items.size() == 2);
  CHECK(items[0].text == "b1");
  CHECK(items[1].text == "a2");
  CHECK(f.feed.feed("carol", 10).back().likes == 1);
  CHECK_THROWS_WITH_AS(f.feed.feed("zed", 5), "unknown user 'zed'", FeedError);
}

TEST_CASE("likes per 5-minute tumbling window are counted exactly, boundaries included") {
  Fixture f;
  f.join({"alice", "bob", "carol", "dave"});
  const feed::PostId id = f.feed.post("alice", "hello", at("09:59"));
  f.feed.like("bob", id, at("10:00:00"));
  f.feed.like("carol", id, at("10:04:59"));
  f.feed.like("dave", id, at("10:05:00"));  // the next window
  const feed::PostId other = f.feed.post("bob", "again", at("10:16"));
  f.feed.like("alice", other, at("10:17"));
  const feed::Stats s = f.stats();
  const std::vector<feed::LikeWindow> expected{
      {at("10:00"), 2}, {at("10:05"), 1}, {at("10:15"), 1}};
  CHECK(s.like_windows == expected);
  CHECK(s.likes == 4);
}

TEST_CASE("trending shows the hour up to the newest like, from 1-hour windows hopping by 5") {
  Fixture f;
  f.join({"alice", "bob", "carol", "dave", "erin"});
  f.feed.post("alice", "one", at("09:05"));
  f.feed.post("bob", "two", at("09:06"));
  f.feed.like("bob", 1, at("09:10"));
  f.feed.like("carol", 1, at("10:20"));
  f.feed.like("dave", 1, at("10:50"));
  f.feed.like("carol", 2, at("10:55"));
  f.feed.like("dave", 2, at("10:56"));
  f.feed.like("erin", 2, at("10:57"));
  const feed::Stats s = f.stats();
  CHECK(s.trending_start == at("10:00"));
  CHECK(s.trending_end == at("11:00"));
  REQUIRE(s.trending.size() == 2);
  CHECK(s.trending[0] == feed::PostWindow{2, "bob", "two", at("10:00"), at("11:00"), 3, ""});
  CHECK(s.trending[1] == feed::PostWindow{1, "alice", "one", at("10:00"), at("11:00"), 2, ""});
  // Each post's best hour, the earliest among equals: post 1's two likes at 10:20 and 10:50
  // share the windows starting 09:55 to 10:20.
  REQUIRE(s.peaks.size() == 2);
  CHECK(s.peaks[0] == feed::PostWindow{2, "bob", "two", at("10:00"), at("11:00"), 3, ""});
  CHECK(s.peaks[1] == feed::PostWindow{1, "alice", "one", at("09:55"), at("10:55"), 2, ""});
}

TEST_CASE("a session ends after 30 minutes without activity of its user") {
  Fixture f;
  f.feed.join("alice", at("10:00"));
  f.feed.join("bob", at("10:00"));
  f.feed.follow("alice", "bob", at("10:20"));
  f.feed.post("alice", "hi", at("10:49"));       // 29 minutes later: same session
  f.feed.unfollow("alice", "bob", at("11:19"));  // exactly 30 minutes: a new one
  const feed::Stats s = f.stats();
  REQUIRE(s.users.size() == 2);
  CHECK(s.users[0] == feed::UserSessions{"alice", 2, 4, 49min});
  CHECK(s.users[1] == feed::UserSessions{"bob", 1, 1, 0min});
}

TEST_CASE("a like logged over 10 minutes behind the newest activity is late and left out") {
  Fixture f;
  f.join({"alice", "bob", "carol", "dave"});
  f.feed.post("alice", "hello", at("11:00"));
  f.feed.like("bob", 1, at("12:00"));
  f.feed.like("carol", 1, at("11:56"));  // 4 minutes behind: still accepted
  f.feed.like("dave", 1, at("11:30"));   // 30 minutes behind: late
  const feed::Stats s = f.stats();
  CHECK(s.late == feed::LateCounts{1, 1, 1});
  CHECK(s.likes == 3);
  const std::vector<feed::LikeWindow> expected{{at("11:55"), 1}, {at("12:00"), 1}};
  CHECK(s.like_windows == expected);
  REQUIRE(s.trending.size() == 1);
  CHECK(s.trending[0].likes == 2);
}

TEST_CASE("stats are identical on replay of the same log") {
  factum::test::TempStore temp{factum::test::personal_options()};
  feed::FeedService service(temp.store);
  feed::DemoRunner runner(service);
  for (const feed::Action& a :
       feed::plan_demo({.seed = 3, .users = 25, .days = 1, .end = at("23:00")})) {
    runner.run(a);
  }
  const feed::Stats first = feed::compute_stats(temp.store, service.registry());
  const feed::Stats second = feed::compute_stats(temp.store, service.registry());
  CHECK(first == second);
  CHECK(feed::render_stats(first) == feed::render_stats(second));
  CHECK(first.likes == static_cast<std::int64_t>(runner.summary().likes));
  CHECK(first.late.likes > 0);  // the demo logs some likes late
  CHECK_FALSE(first.like_windows.empty());
}

TEST_CASE("the demo plan is the same for a seed and every action of it is accepted") {
  const feed::DemoOptions options{.seed = 11, .users = 20, .days = 1, .end = at("20:00")};
  const auto plan = feed::plan_demo(options);
  const auto again = feed::plan_demo(options);
  REQUIRE(plan.size() == again.size());
  for (std::size_t i = 0; i < plan.size(); ++i) {
    CHECK(plan[i].at == again[i].at);
    CHECK(plan[i].user == again[i].user);
  }
  factum::test::TempStore temp{factum::test::personal_options()};
  feed::FeedService service(temp.store);
  feed::DemoRunner runner(service);
  for (const feed::Action& a : plan) CHECK_NOTHROW(runner.run(a));
  const feed::Totals totals = service.totals();
  CHECK(totals.users == 20);
  CHECK(totals.posts == static_cast<std::int64_t>(runner.summary().posts));
  CHECK(totals.likes == static_cast<std::int64_t>(runner.summary().likes));
  CHECK(temp.store.head_position() == plan.size());
  CHECK_THROWS_AS(feed::plan_demo({.users = 1}), FeedError);
}

TEST_CASE("post ids, times and bars parse and render as documented") {
  CHECK(feed::parse_post_id("17") == 17);
  CHECK(feed::parse_post_id("#17") == 17);
  for (const char* bad : {"", "#", "0", "-3", "1x", "x"}) {
    CHECK_THROWS_AS(feed::parse_post_id(bad), FeedError);
  }
  CHECK(feed::parse_time("2024-05-01T10:05:07Z") == at("10:05:07"));
  CHECK(feed::parse_time("2024-05-01 10:05") == at("10:05"));
  CHECK_THROWS_AS(feed::parse_time("10:05"), FeedError);
  CHECK_THROWS_AS(feed::parse_time("2024-13-01T10:05Z"), FeedError);
  for (const char* bad : {"2024-02-30T10:05Z", "2023-02-29T10:05Z", "2100-02-29T10:05Z", "",
                          "2024-05-01T10:05Zx", "2024-05-01T24:00Z", "2024-5-01T10:05Z"}) {
    CHECK_THROWS_AS(feed::parse_time(bad), FeedError);
  }
  CHECK(feed::parse_time("2024-02-29T23:59:59Z") ==
        factum::Timestamp{std::chrono::sys_days{std::chrono::year{2024} / 2 / 29} +
                          std::chrono::seconds{86399}});
  CHECK(feed::parse_time("2000-02-29T00:00Z") ==
        factum::Timestamp{std::chrono::sys_days{std::chrono::year{2000} / 2 / 29}});
  CHECK(feed::format_day_minute(at("10:05")) == "05-01 10:05");
  CHECK(feed::bar(1, 2, 4) == "██  ");
  CHECK(feed::bar(1, 16, 2) == "▏ ");
  CHECK(feed::bar(0, 5, 3) == "   ");
  CHECK(feed::shorten("abcdef", 4) == "abc…");
}
