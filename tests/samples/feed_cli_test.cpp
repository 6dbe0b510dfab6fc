// tests/samples/feed_cli_test.cpp — factum-feed end to end: runs the binary (its path comes
// from the build, FACTUM_FEED_BIN) in a temporary folder and checks what it prints, its exit
// code, and that a refused command leaves the log and the read models as they were.

#include <fstream>
#include <string>

#include "doctest/doctest.h"
#include "program_folder.hpp"
#include "report.hpp"
#include "sample_cli.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace {

using factum::test::contains;
using factum::test::slurp;
using Result = factum::test::ProgramRun;

// A temporary folder to run factum-feed in; `args` is shell text (quote what needs it).
struct Folder : factum::test::FeedFolder {
  // Runs shell `script` in the folder with $F set to the program; returns its exit code.
  int shell(const std::string& script) const {
    return factum::test::run_shell("F='" FACTUM_FEED_BIN "' && (" + script + ")", dir.path()).code;
  }
  // The first column of the first row of `query` on the store.
  std::int64_t query(const std::string& query_text) const {
    std::int64_t out = -1;
    factum::EventStore::open(db()).read_sql(
        [&](factum::Sql& sql) { out = sql.query_integer(query_text).value_or(-1); });
    return out;
  }

  // The log's head and every read-model row.
  std::string state() const {
    auto store = factum::EventStore::open(db());
    std::string out = std::to_string(store.head().position) + factum::to_hex(store.head().hash);
    store.read_sql([&](factum::Sql& sql) {
      for (const char* q : {"SELECT post || author || text || at || likes FROM posts",
                            "SELECT user || post || author || at FROM feeds ORDER BY 1",
                            "SELECT follower || followee || since FROM follows ORDER BY 1",
                            "SELECT user || joined FROM users ORDER BY 1"}) {
        sql.query(q, {}, [&](const factum::SqlRow& row) { out += "|" + row.text(0); });
      }
    });
    return out;
  }
};

// A store with alice, bob and carol; bob follows alice; alice posted #1, liked by bob.
void small_world(const Folder& f) {
  f.ok_at("09:00", "join alice");
  f.ok_at("09:01", "join bob");
  f.ok_at("09:02", "join carol");
  f.ok_at("09:10", "follow bob alice");
  f.ok_at("10:00", "post alice 'hello world'");
  f.ok_at("10:01", "like bob 1");
}

// Checks that `args` fails with exactly `message` on one line of stderr and exit code `code`
// (1: refused, 2: a usage error), prints nothing on stdout, and leaves the store as it was (or
// absent).
void refused(const Folder& f, const std::string& args, const std::string& message, int code = 1) {
  const bool existed = std::filesystem::exists(f.db());
  const std::string before = existed ? f.state() : "";
  const Result r = f.run(args);
  INFO(args);
  CHECK(r.code == code);
  CHECK(r.err == "factum-feed: " + message + "\n");
  CHECK(r.out.empty());
  CHECK(std::filesystem::exists(f.db()) == existed);
  if (existed) CHECK(f.state() == before);
}

}  // namespace

TEST_CASE("factum-feed --help lists every command and exits 0") {
  Folder f;
  const std::string help = f.ok("--help");
  for (const char* word :
       {"demo", "join", "post", "like", "follow", "unfollow", "feed", "stats", "--db", "--at"}) {
    CHECK(contains(help, word));
  }
  CHECK(contains(f.ok("feed --help"), "--limit"));
}

TEST_CASE("each factum-feed command prints one line about what it did") {
  Folder f;
  CHECK(f.ok_at("09:00", "join alice") == "alice joined\n");
  CHECK(f.ok_at("09:01", "join bob") == "bob joined\n");
  CHECK(f.ok_at("09:10", "follow bob alice") ==
        "bob now follows alice (their new posts will reach bob's feed)\n");
  CHECK(f.ok_at("10:00", "post alice 'hello world'") ==
        "#1 posted by alice, delivered to the feeds of 1 follower\n");
  CHECK(f.ok_at("10:01", "like bob '#1'") == "bob likes #1 (1 like)\n");
  CHECK(f.ok_at("10:02", "unfollow bob alice") == "bob no longer follows alice\n");
  CHECK(f.ok_at("10:03", "post alice again") ==
        "#2 posted by alice, delivered to the feeds of 0 followers\n");
}

TEST_CASE("factum-feed feed shows the posts delivered to a user, newest first, up to --limit") {
  Folder f;
  small_world(f);
  f.ok_at("10:05", "post alice 'second post'");
  f.ok_at("10:06", "post carol 'not followed by bob'");
  CHECK(f.ok("feed bob") ==
        "Feed of bob: 2 of 2 posts, newest first (times UTC)\n"
        "  #2    05-01 10:05  alice     ♥ 0  second post\n"
        "  #1    05-01 10:00  alice     ♥ 1  hello world\n");
  CHECK(f.ok("feed bob --limit 1") ==
        "Feed of bob: 1 of 2 posts, newest first (times UTC)\n"
        "  #2    05-01 10:05  alice     ♥ 0  second post\n");
  CHECK(contains(f.ok("feed carol"), "(empty: follow someone"));
}

TEST_CASE("factum-feed --db names the store file") {
  Folder f;
  f.ok("--db other.db join alice");
  CHECK(std::filesystem::exists(f.dir.file("other.db")));
  CHECK_FALSE(std::filesystem::exists(f.db()));
  CHECK(contains(f.ok("feed alice --db other.db"), "Feed of alice: 0 of 0 posts"));
}

TEST_CASE("factum-feed stats shows likes per 5 minutes, trending posts, sessions and late likes") {
  Folder f;
  small_world(f);                         // bob liked #1 at 10:01
  f.ok_at("10:03", "like carol 1");       // same 5-minute window
  f.ok_at("10:07", "like alice 1");       // the next one
  f.ok_at("09:30", "post carol 'late'");  // 37 minutes behind the newest activity
  const std::string out = f.ok("stats");
  INFO(out);
  CHECK(contains(out, "Likes per 5 minutes (tumbling windows, times UTC)"));
  CHECK(contains(out, "  05-01 10:00  " + feed::bar(2, 2, 24) + "    2\n"));
  CHECK(contains(out, "  05-01 10:05  " + feed::bar(1, 2, 24) + "    1\n"));
  CHECK(contains(out, "Trending: likes per post in 05-01 09:10–10:10"));
  CHECK(contains(out, "  #1    alice   " + feed::bar(3, 3, 12) + "   3  hello world\n"));
  CHECK(contains(out, "Sessions (30 minutes without activity end one)"));
  CHECK(contains(out,
                 "0 likes of the tumbling windows, 0 of the trending windows, "
                 "1 activities of the sessions"));
  CHECK(f.ok("stats") == out);  // the same log gives the same numbers
}

TEST_CASE("factum-feed stats on a store without likes says so") {
  Folder f;
  f.ok_at("09:00", "join alice");
  const std::string out = f.ok("stats");
  CHECK(contains(out, "up to the newest like:\n  no likes yet\n"));
  CHECK(contains(out, "Trending (windows of 1 hour hopping by 5 minutes): no likes yet\n"));
  CHECK(contains(out, "1 session of 1 user, on average 0 min and 1.0 activities"));
}

TEST_CASE("factum-feed commands from concurrent processes all land, with distinct post ids") {
  Folder f;
  small_world(f);
  f.ok("join dave");
  CHECK(
      f.shell("p=; for u in alice bob carol dave; do \"$F\" post $u \"hi from $u\" & p=\"$p $!\"; "
              "done; for u in alice carol dave; do \"$F\" like $u 1 & p=\"$p $!\"; done; "
              "r=0; for j in $p; do wait $j || r=1; done; exit $r") == 0);
  CHECK(f.query("SELECT count(DISTINCT post) FROM posts WHERE post BETWEEN 2 AND 5") == 4);
  CHECK(f.query("SELECT count(DISTINCT author) FROM posts WHERE post BETWEEN 2 AND 5") == 4);
  CHECK(f.query("SELECT likes FROM posts WHERE post = 1") == 4);
  CHECK(f.query("SELECT count(*) FROM feeds WHERE user = 'bob'") == 2);  // #1 and alice's
}

TEST_CASE(
    "factum-feed: bad input gets a one-line error, exit code 1, and leaves the store unchanged") {
  Folder f;
  small_world(f);
  refused(f, "join alice", "user 'alice' exists already");
  refused(f, "join Bob!",
          "malformed user name 'Bob!': use 1-32 lowercase letters, digits, '_' "
          "or '.', starting with a letter");
  refused(f, "post zed hi", "unknown user 'zed'");
  refused(f, "post alice ''", "post text is empty");
  refused(f, "post alice \"$(printf 'x%.0s' $(seq 281))\"",
          "post text is 281 characters; the limit is 280");
  refused(f, "like carol 99", "unknown post #99");
  refused(f, "like bob 1", "'bob' already likes post #1");
  refused(f, "like bob one", "malformed post id 'one': use a number such as 17");
  refused(f, "follow bob bob", "a user cannot follow themself ('bob')");
  refused(f, "follow bob alice", "'bob' already follows 'alice'");
  refused(f, "follow bob zed", "unknown user 'zed'");
  refused(f, "unfollow carol alice", "'carol' does not follow 'alice'");
  refused(f, "feed zed", "unknown user 'zed'");
  refused(f, "demo", "'feed.db' already holds 6 events; `factum-feed demo --fresh` replaces them");
}

TEST_CASE("factum-feed: malformed command lines get a one-line error and exit code 2") {
  Folder f;
  refused(f, "", "A subcommand is required (see factum-feed --help)", 2);
  refused(f, "frobnicate", "unknown command 'frobnicate' (see factum-feed --help)", 2);
  refused(f, "join", "USER is required (see factum-feed --help)", 2);
  refused(f, "feed alice extra",
          "The following argument was not expected: extra (see factum-feed --help)", 2);
  refused(f, "feed alice --limit 0",
          "--limit: Value 0 not in range 1 to 1000 (see factum-feed --help)", 2);
  refused(f, "--at yesterday join alice",
          "--at: malformed time 'yesterday': use a real UTC time YYYY-MM-DDTHH:MM[:SS]Z (see "
          "factum-feed --help)",
          2);
  refused(f, "demo --users 1", "--users: Value 1 not in range 2 to 1000 (see factum-feed --help)",
          2);
}

TEST_CASE(
    "factum-feed commands other than join and demo refuse a missing store and create no file") {
  Folder f;
  const std::string message =
      "no feed store at 'feed.db' (start one with `factum-feed demo` or `factum-feed join USER`)";
  for (const char* args : {"post alice hi", "like alice 1", "follow alice bob",
                           "unfollow alice bob", "feed alice", "stats"}) {
    refused(f, args, message);
  }
  refused(f, "join Alice",
          "malformed user name 'Alice': use 1-32 lowercase letters, digits, "
          "'_' or '.', starting with a letter");
}

TEST_CASE("factum-feed demo creates thousands of events and shows a feed and the stats") {
  Folder f;
  const std::string out = f.ok("--at 2024-05-03T21:00:00Z demo");
  INFO(out);
  CHECK(out.rfind("Created 80 users, ", 0) == 0);
  CHECK(contains(out, "over 3 days up to 2024-05-03 21:00:00 UTC"));
  for (const char* part : {"Feed of alice: 8 of ", "Likes per 5 minutes",
                           "busiest: ", "Trending: likes per post in 05-03 20:", "Best hours",
                           "Sessions (30 minutes", "Late events", "Try: factum-feed",
                           "factum-feed join alice: refused: user 'alice' exists already",
                           "already likes post #", "nothing written: the log still ends at"}) {
    CHECK(contains(out, part));
  }
  CHECK(factum::EventStore::open(f.db()).head_position() > 3000);
  CHECK(contains(f.ok("feed alice --limit 3"), "Feed of alice: 3 of "));
  CHECK(f.ok("--at 2024-05-03T21:00:00Z post alice 'after the demo'").rfind("#", 0) == 0);
}

TEST_CASE("factum-feed demo refuses a store with events, and --fresh replaces it") {
  Folder f;
  small_world(f);
  refused(f, "demo --users 10 --days 1",
          "'feed.db' already holds 6 events; `factum-feed demo --fresh` replaces them");
  const std::string out = f.ok("demo --fresh --users 10 --days 1");
  CHECK(out.rfind("Created 10 users, ", 0) == 0);
  CHECK(f.state() != "");
  CHECK(contains(f.ok("feed alice --limit 1"), "Feed of alice"));
}

TEST_CASE("factum-feed refuses a file that is not a factum store and leaves it as it was") {
  Folder f;
  std::ofstream(f.db()) << "my notes";
  for (const char* args : {"stats", "join alice", "demo --fresh"}) {
    const Result r = f.run(args);
    INFO(args);
    CHECK(r.code == 1);
    CHECK(r.err == "factum-feed: 'feed.db' is not a factum store: it is not a SQLite database\n");
    CHECK(slurp(f.db()) == "my notes");
  }
}

namespace {

using factum::test::Refusal;

// factum-feed in a folder of its own, with feed.db made by successful commands: alice, bob and
// carol; bob follows alice; alice posted #1, liked by bob.
struct Network {
  factum::test::SampleFolder folder{"factum-feed", FACTUM_FEED_BIN};
  std::filesystem::path db = folder.file("feed.db");
  Network() {
    const auto at = [](const char* clock) { return std::string("2024-05-01T") + clock + "Z"; };
    folder.ok({"--at", at("09:00"), "join", "alice"});
    folder.ok({"--at", at("09:01"), "join", "bob"});
    folder.ok({"--at", at("09:02"), "join", "carol"});
    folder.ok({"--at", at("09:10"), "follow", "bob", "alice"});
    folder.ok({"--at", at("10:00"), "post", "alice", "hello world"});
    folder.ok({"--at", at("10:01"), "like", "bob", "1"});
  }
};

}  // namespace

TEST_CASE("factum-feed: every usage error exits 2 and leaves the store byte for byte unchanged") {
  Network net;
  factum::test::check_refusals(
      net.folder, net.db,
      {
          {{}, 2, "A subcommand is required"},
          {{"frobnicate"}, 2, "unknown command 'frobnicate'"},
          {{"join"}, 2, "USER is required"},
          {{"feed", "alice", "extra"}, 2, "extra"},
          {{"feed", "alice", "--limit", "0"}, 2, "--limit"},
          {{"feed", "alice", "--bogus"}, 2, "--bogus"},
          {{"demo", "--users", "1"}, 2, "--users"},
          {{"demo", "--days", "31"}, 2, "--days"},
          {{"--at", "yesterday", "like", "carol", "1"}, 2, "--at: malformed time 'yesterday'"},
          {{"--at", "2024-02-30T10:00Z", "like", "carol", "1"}, 2, "'2024-02-30T10:00Z'"},
          {{"--at", "", "like", "carol", "1"}, 2, "--at: malformed time ''"},
          {{"--db"}, 2, "--db"},
      });
}

TEST_CASE("factum-feed: every refused command leaves the store byte for byte unchanged") {
  Network net;
  factum::test::check_refusals(
      net.folder, net.db,
      {
          {{"join", "alice"}, 1, "user 'alice' exists already"},
          {{"join", "Bob!"}, 1, "malformed user name 'Bob!'"},
          {{"post", "zed", "hi"}, 1, "unknown user 'zed'"},
          {{"post", "alice", ""}, 1, "post text is empty"},
          {{"post", "alice", std::string(281, 'x')}, 1, "post text is 281 characters"},
          {{"post", "alice", "two\nlines"}, 1, "post text must be one line"},
          {{"post", "alice", "bad \xff byte"}, 1, "post text is not valid UTF-8"},
          {{"like", "carol", "99"}, 1, "unknown post #99"},
          {{"like", "bob", "1"}, 1, "'bob' already likes post #1"},
          {{"like", "bob", "one"}, 1, "malformed post id 'one'"},
          {{"like", "zed", "1"}, 1, "unknown user 'zed'"},
          {{"follow", "bob", "bob"}, 1, "a user cannot follow themself ('bob')"},
          {{"follow", "bob", "alice"}, 1, "'bob' already follows 'alice'"},
          {{"follow", "bob", "zed"}, 1, "unknown user 'zed'"},
          {{"unfollow", "carol", "alice"}, 1, "'carol' does not follow 'alice'"},
          {{"feed", "zed"}, 1, "unknown user 'zed'"},
          {{"feed", "Zed"}, 1, "malformed user name 'Zed'"},
          {{"demo"}, 1, "'feed.db' already holds 6 events"},
      });
}

TEST_CASE("factum-feed --at takes only real UTC times, to the second") {
  Network net;
  std::vector<Refusal> refusals;
  for (const char* bad : {"2024-02-30T10:00Z",
                          "2023-02-29T10:00Z",
                          "2024-04-31T10:00Z",
                          "2024-13-01T10:00Z",
                          "2024-00-10T10:00Z",
                          "2024-05-00T10:00Z",
                          "",
                          " ",
                          "2024-05-01",
                          "2024-05-01T10",
                          "2024-05-01T10:",
                          "2024-05-01T10:00Zx",
                          "2024-05-01T10:00:00Z junk",
                          "2024-05-01T10:00ZZ",
                          "2024-05-01T24:00Z",
                          "2024-05-01T10:60Z",
                          "2024-05-01T10:00:60Z",
                          "2024-5-01T10:00Z",
                          "2024-05-1T10:00Z",
                          "2024-05-01T1:00Z",
                          "2024-05-01T10:0Z",
                          "2024-05-01T10:00:0Z",
                          " 2024-05-01T10:00Z",
                          "+2024-05-01T10:00Z",
                          "2024-05-01T-1:00Z",
                          "2024-05-01T10:+1Z",
                          "1969-12-31T23:59Z",
                          "2024-05-01X10:00Z",
                          "2024/05/01T10:00Z"}) {
    refusals.push_back({{"--at", bad, "join", "dave"},
                        2,
                        "--at: malformed time '" + std::string(bad) +
                            "': use a real UTC time YYYY-MM-DDTHH:MM[:SS]Z"});
  }
  factum::test::check_refusals(net.folder, net.db, refusals);
  // A leap day is a real day, in 2024 and in 2000; the time goes into the event as given.
  CHECK(net.folder.ok({"--at", "2024-02-29T23:59:59Z", "join", "dave"}) == "dave joined\n");
  CHECK(net.folder.ok({"--at", "2000-02-29 00:00", "join", "erin"}) == "erin joined\n");
  CHECK(net.folder.ok({"--at", "2024-02-29T12:00Z", "post", "dave", "leap"}) ==
        "#2 posted by dave, delivered to the feeds of 0 followers\n");
  CHECK(contains(net.folder.ok({"feed", "bob"}), "#1    05-01 10:00  alice"));
}

TEST_CASE("factum-feed escapes control characters and bytes that are not UTF-8 in its errors") {
  Network net;
  factum::test::check_one_line_error(net.folder.run({"join", "a\x1b[31m\x07\xff"}), "factum-feed",
                                     1, "malformed user name 'a\\x1b[31m\\x07\\xff'");
  factum::test::check_one_line_error(net.folder.run({"like", "bob", "1\x1b]0;x\x07"}),
                                     "factum-feed", 1, "malformed post id '1\\x1b]0;x\\x07'");
  factum::test::check_one_line_error(net.folder.run({"--at", "\x1b[2J\r\n", "join", "dave"}),
                                     "factum-feed", 2, "'\\x1b[2J\\x0d\\x0a'");
  factum::test::check_one_line_error(net.folder.run({"frob\x1b[2J\r\n"}), "factum-feed", 2,
                                     "unknown command 'frob\\x1b[2J\\x0d\\x0a'");
}
