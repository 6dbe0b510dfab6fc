// tests/samples/feed_forget_test.cpp — factum-feed and personal data (issue 31): display names
// and post texts are stored encrypted under the user's subject; `forget USER` erases them from
// every output that showed them, keeps the likes and the hash chain, and refuses what it cannot
// do. Runs the binary (FACTUM_FEED_BIN) in a temporary folder; a store of the schema-1 layout
// is written through the library.

#include <sys/stat.h>

#include <factum/eventstore/personal.hpp>

#include <filesystem>
#include <string>

#include "doctest/doctest.h"
#include "events.hpp"
#include "personal_store.hpp"
#include "program_folder.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace {

using factum::test::contains;
using factum::test::slurp;
using Result = factum::test::ProgramRun;

constexpr const char* kName = "Alice Liddell";
constexpr const char* kText = "tea party at the rabbit hole";

struct Folder : factum::test::FeedFolder {
  // Checks a refusal: exit 1, one line on stderr holding `part`, nothing on stdout.
  void refused(const std::string& args, const std::string& part) const {
    const Result r = run(args);
    INFO(args, "\n", r.err);
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(contains(r.err, part));
  }
  std::filesystem::path kek() const { return dir.file("feed.db.kek"); }
  std::string stored_bytes() const { return factum::test::stored_bytes(db()); }
  std::string payloads() const { return factum::test::stored_payloads(db()); }
};

// alice (with a display name) posts; bob follows her and likes the post; carol posts too.
void tea_party(const Folder& f) {
  CHECK(f.ok_at("09:00", "join alice --name '" + std::string(kName) + "'") ==
        "alice (Alice Liddell) joined\n");
  f.ok_at("09:01", "join bob --name 'Bob Stone'");
  f.ok_at("09:02", "join carol");
  f.ok_at("09:10", "follow bob alice");
  f.ok_at("09:11", "follow bob carol");
  f.ok_at("10:00", "post alice '" + std::string(kText) + "'");
  f.ok_at("10:01", "like bob 1");
  f.ok_at("10:02", "like carol 1");
  f.ok_at("10:05", "post carol 'croquet at noon'");
}

}  // namespace

TEST_CASE(
    "forget USER erases the display name and post texts from feed and stats, and likes stay") {
  Folder f;
  tea_party(f);
  // Before: the name and the text are shown, and the log holds neither in plain text.
  const std::string feed_before = f.ok("feed bob");
  CHECK(contains(feed_before, "alice (Alice Liddell)"));
  CHECK(contains(feed_before, kText));
  CHECK(contains(feed_before, "♥ 2"));
  const std::string stats_before = f.ok("stats");
  CHECK(contains(stats_before, kText));
  CHECK(contains(stats_before, kName));
  const std::string payloads = f.payloads();
  CHECK_FALSE(contains(payloads, kName));
  CHECK_FALSE(contains(payloads, kText));
  CHECK(contains(payloads, "user:alice"));  // the subject, an id, is plain

  const std::string said = f.ok("forget alice");
  CHECK(contains(said, "forgot alice (subject user:alice"));
  CHECK(contains(said, "display name and the texts of their 1 post are erased"));

  const std::string feed_after = f.ok("feed bob");
  CHECK_FALSE(contains(feed_after, kName));
  CHECK_FALSE(contains(feed_after, kText));
  CHECK(contains(feed_after, "#1"));
  CHECK(contains(feed_after, "<erased>"));
  CHECK(contains(feed_after, "♥ 2"));              // the likes remain
  CHECK(contains(feed_after, "croquet at noon"));  // nobody else's text is touched
  CHECK(contains(feed_after, "Feed of bob: 2 of 2 posts"));
  const std::string stats_after = f.ok("stats");
  CHECK_FALSE(contains(stats_after, kName));
  CHECK_FALSE(contains(stats_after, kText));
  CHECK(contains(stats_after, "<erased>"));
  CHECK(contains(stats_after, "2 likes in all"));

  // The proof: the chain still verifies; the fact of the forget is in the log.
  auto store = factum::EventStore::open(f.db());
  CHECK(store.verify().ok());
  CHECK(store.read_stream(std::string(factum::kSubjectsStream)).to_vector().size() == 1);
  // Nothing of the name or the text is left in the store's bytes: not in the log (ciphertext
  // under a deleted key), nor in the read models (purged by Projection::forget).
  const std::string bytes = f.stored_bytes();
  CHECK_FALSE(contains(bytes, kName));
  CHECK_FALSE(contains(bytes, kText));
}

TEST_CASE(
    "forget refuses an unknown user, a malformed name and a second forget, and a forgotten "
    "user cannot post") {
  Folder f;
  tea_party(f);
  f.refused("forget zed", "unknown user 'zed'");
  f.refused("forget 'Alice Liddell'", "malformed user name");
  f.ok("forget alice");
  f.refused("forget alice", "'alice' was forgotten already");
  f.refused("post alice 'back again'", "'alice' was forgotten");
  f.refused("join alice --name 'Alice Again'", "exists already");
  CHECK(factum::EventStore::open(f.db()).verify().ok());
}

TEST_CASE(
    "the key file: made beside the store with mode 0600, and a store with keys refuses to "
    "run without it") {
  Folder f;
  tea_party(f);
  REQUIRE(std::filesystem::exists(f.kek()));
  CHECK(std::filesystem::file_size(f.kek()) == 32);
  struct stat st {};
  REQUIRE(::stat(f.kek().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::filesystem::rename(f.kek(), f.dir.file("elsewhere.kek"));
  f.refused("feed bob",
            "the key file 'feed.db.kek' is missing, and 'feed.db' holds the keys of 3 users");
  f.refused("forget alice", "is missing");
  CHECK_FALSE(std::filesystem::exists(f.kek()));  // never made again over existing keys
  const std::string feed = f.ok("--kek elsewhere.kek feed bob");
  CHECK(contains(feed, kText));
  // A PostgreSQL URI has no file to sit beside: --kek is required.
  f.refused("--db postgresql://nobody@127.0.0.1:1/none feed bob", "needs --kek FILE");
}

TEST_CASE(
    "a store of the schema-1 layout (plain names and texts) opens and reads, and its older "
    "users cannot be forgotten") {
  Folder f;
  {
    auto store = factum::EventStore::open(f.db());
    factum::EventRegistry old;  // the layouts before personal data, as the old program wrote
    old.add<feed::UserJoinedV1>().add<feed::PostedV1>();
    const auto at = factum::Timestamp{std::chrono::hours(24 * 19844)};
    store.append("user-olga", factum::ExpectedVersion::no_stream(), old,
                 feed::UserJoinedV1{"olga", at});
    store.append("user-pete", factum::ExpectedVersion::no_stream(), old,
                 feed::UserJoinedV1{"pete", at});
    store.append("post-1", factum::ExpectedVersion::no_stream(), old,
                 feed::PostedV1{1, "olga", "an old plain post", at});
  }
  f.ok_at("09:00", "follow pete olga");
  f.ok_at("09:01", "post olga 'a new personal post'");
  const std::string feed = f.ok("feed pete");
  CHECK(contains(feed, "a new personal post"));
  CHECK(contains(f.ok("stats"), "olga"));
  f.refused("forget olga", "joined before factum-feed kept names and posts as personal data");
  f.ok_at("09:02", "join nina --name 'Nina N'");
  CHECK(contains(f.ok("forget nina"), "forgot nina"));
  CHECK(factum::EventStore::open(f.db()).verify().ok());
}
