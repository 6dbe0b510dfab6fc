// The hash chain: verify() finds edits, deletions, insertions and reorderings made with raw
// SQL behind the library's back, and verify(expected_head) finds a cut-off tail.
#include <doctest/doctest.h>

#include <cstdio>

#include "support/malformed_row.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::check_names_row;
using factum::test::check_reads_intact;
using factum::test::make_event;
using factum::test::make_events;
using factum::test::raw_exec;
using factum::test::raw_int;
using factum::test::TempStore;
using Problem = VerifyResult::Problem;

namespace {

// What docs/verify_chain.py says of the file: "none" when intact, else "<problem> at position
// <n>", as it prints it.
std::string python_verdict(const std::filesystem::path& file) {
  const std::string command =
      "python3 '" FACTUM_SOURCE_DIR "/docs/verify_chain.py' '" + file.string() + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  const int status = pclose(pipe);
  if (status == 0) return "none";
  return out.substr(0, out.find(':'));
}

// The C++ verify and the Python script agree on the problem and its position.
void check_python_agrees(const std::filesystem::path& file, const VerifyResult& r) {
  const std::string expected =
      r.ok() ? "none"
             : std::string(problem_name(r.problem)) + " at position " + std::to_string(r.position);
  CHECK(python_verdict(file) == expected);
}

// A store with 10 events over 3 streams, with metadata, and its triggers dropped so raw SQL
// can tamper with it.
struct TamperedStore : TempStore {
  TamperedStore() {
    for (int i = 0; i < 5; ++i) {
      auto batch = make_events(2, "p" + std::to_string(i) + "-");
      batch[0].metadata.actor = "alice";
      batch[1].metadata.values = {{"k", "v"}};
      store.append("s-" + std::to_string(i % 3), ExpectedVersion::any(), batch);
    }
    REQUIRE(store.verify().ok());
    raw_exec(path, factum::test::kDropTriggers);
  }
  // Runs `sql` on the file behind the store's back; verifies with the store and the Python
  // script, which must agree.
  VerifyResult after(const std::string& sql) {
    raw_exec(path, sql);
    VerifyResult r = store.verify();
    check_python_agrees(path, r);
    return r;
  }
};

}  // namespace

TEST_CASE("verify reports an intact chain and counts its events") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_events(5));
  const VerifyResult r = t.store.verify();
  CHECK(r.ok());
  CHECK(static_cast<bool>(r));
  CHECK(r.events_checked == 5);
  CHECK(r.position == 0);
  check_python_agrees(t.path, r);
}

TEST_CASE("verify names an event row inserted below position 1, which no read hides") {
  for (const std::string at : {"0", "-5"}) {
    CAPTURE(at);
    TamperedStore t;
    const auto r = t.after(std::string("INSERT INTO events SELECT ") + at +
                           ", stream_key, 6, randomblob(16), type, schema_version, payload, "
                           "correlation_id, causation_id, compensates, actor, extra, recorded_at, "
                           "hash FROM events WHERE position = 10");
    CHECK(r.problem == Problem::unchained_row);
    CHECK(r.position == 1);
    CHECK(r.message.find(std::string("position ") + at) != std::string::npos);
    CHECK_THROWS_AS(t.store.read_all().to_vector(), CorruptEventError);
    CHECK_THROWS_AS(t.store.read_category("s").to_vector(), CorruptEventError);
    CHECK_THROWS_AS(t.store.read_stream("s-1").to_vector(), CorruptEventError);
  }
}

TEST_CASE("verify names a stream row that no event belongs to") {
  TamperedStore t;
  const auto r = t.after("INSERT INTO streams (stream_id, category) VALUES ('ghost-1', 'ghost')");
  CHECK(r.problem == Problem::unchained_row);
  CHECK(r.message.find("ghost-1") != std::string::npos);
}

TEST_CASE("verify names an edited payload") {
  TamperedStore t;
  const auto r = t.after("UPDATE events SET payload = X'00' WHERE position = 4");
  CHECK(r.problem == Problem::hash_mismatch);
  CHECK(r.position == 4);
  CHECK(r.events_checked == 3);
  CHECK(r.message.find("position 4") != std::string::npos);
}

TEST_CASE("verify names each edited field") {
  const char* edits[] = {
      "UPDATE events SET type = 'forged' WHERE position = 6",
      "UPDATE events SET schema_version = 9 WHERE position = 6",
      "UPDATE events SET recorded_at = recorded_at + 1 WHERE position = 6",
      "UPDATE events SET actor = 'mallory' WHERE position = 6",
      "UPDATE events SET extra = NULL WHERE position = 6",
      "UPDATE events SET correlation_id = randomblob(16) WHERE position = 6",
      "UPDATE events SET event_id = randomblob(16) WHERE position = 6",
      "UPDATE events SET stream_version = 99 WHERE position = 6",
      "UPDATE events SET stream_key = (SELECT min(stream_key) FROM streams), stream_version = 50 "
      "WHERE position = 6",
      "UPDATE streams SET stream_id = 's-99' WHERE stream_key = "
      "(SELECT stream_key FROM events WHERE position = 6)",
  };
  for (const std::string sql : edits) {
    CAPTURE(sql);
    TamperedStore t;
    const auto r = t.after(sql);
    CHECK(r.problem == Problem::hash_mismatch);
    CHECK(r.position <= 6);
    CHECK(r.position >= 1);
  }
}

TEST_CASE("verify names a re-hashed edit at the next event") {
  // A forger who recomputes the edited event's own hash still breaks the next link.
  TamperedStore t;
  const auto r = t.after("UPDATE events SET hash = randomblob(32) WHERE position = 5");
  CHECK(r.problem == Problem::hash_mismatch);
  CHECK(r.position == 5);
}

TEST_CASE("verify names a deleted event") {
  TamperedStore t;
  const auto r = t.after("DELETE FROM events WHERE position = 3");
  CHECK(r.problem == Problem::position_gap);
  CHECK(r.position == 3);
  CHECK(r.message.find("3") != std::string::npos);
}

TEST_CASE("verify names a deleted first event") {
  TamperedStore t;
  const auto r = t.after("DELETE FROM events WHERE position = 1");
  CHECK(r.problem == Problem::position_gap);
  CHECK(r.position == 1);
}

TEST_CASE("verify names an inserted event") {
  TamperedStore t;
  const auto r = t.after(
      "INSERT INTO events (position, stream_key, stream_version, event_id, type, schema_version, "
      "payload, recorded_at, hash) SELECT 11, stream_key, stream_version + 100, randomblob(16), "
      "type, 1, X'01', recorded_at, randomblob(32) FROM events WHERE position = 10");
  CHECK(r.problem == Problem::hash_mismatch);
  CHECK(r.position == 11);
}

TEST_CASE("verify names an event inserted in place of a deleted one") {
  TamperedStore t;
  const auto r = t.after(
      "DELETE FROM events WHERE position = 7;"
      "INSERT INTO events (position, stream_key, stream_version, event_id, type, schema_version, "
      "payload, recorded_at, hash) SELECT 7, stream_key, 100, randomblob(16), type, 1, X'01', "
      "recorded_at, hash FROM events WHERE position = 8");
  CHECK(r.problem == Problem::hash_mismatch);
  CHECK(r.position == 7);
}

TEST_CASE("verify names reordered events") {
  TamperedStore t;
  const auto r = t.after(
      "UPDATE events SET position = 100 WHERE position = 4;"
      "UPDATE events SET position = 4 WHERE position = 5;"
      "UPDATE events SET position = 5 WHERE position = 100;");
  CHECK(r.problem == Problem::hash_mismatch);
  CHECK(r.position == 4);
}

TEST_CASE("verify names a malformed row instead of throwing") {
  TamperedStore t;
  SUBCASE("hash of the wrong size") {
    const auto r = t.after("UPDATE events SET hash = X'0102' WHERE position = 2");
    CHECK(r.problem == Problem::malformed_row);
    CHECK(r.position == 2);
  }
  SUBCASE("event id of the wrong size") {
    const auto r = t.after("UPDATE events SET event_id = X'01' WHERE position = 3");
    CHECK(r.problem == Problem::malformed_row);
    CHECK(r.position == 3);
  }
  SUBCASE("text where a blob belongs") {
    const auto r = t.after("UPDATE events SET payload = 'text' WHERE position = 8");
    CHECK(r.problem == Problem::malformed_row);
    CHECK(r.position == 8);
  }
  SUBCASE("garbage key/values") {
    const auto r = t.after("UPDATE events SET extra = X'FFFFFFFF' WHERE position = 2");
    CHECK(r.problem == Problem::malformed_row);
    CHECK(r.position == 2);
  }
  SUBCASE("a stream moved to another category") {
    const auto r = t.after("UPDATE streams SET category = 'other' WHERE stream_id = 's-1'");
    CHECK(r.problem == Problem::malformed_row);
    CHECK(r.position == 3);
    CHECK(r.message.find("other") != std::string::npos);
  }
  SUBCASE("missing stream row") {
    const auto r = t.after(
        "DELETE FROM streams WHERE stream_key = (SELECT stream_key FROM events WHERE position = "
        "1)");
    CHECK(r.problem == Problem::malformed_row);
    CHECK(r.position == 1);
  }
}

TEST_CASE("reading a malformed row throws CorruptEventError naming its position") {
  TamperedStore t;
  raw_exec(t.path, "UPDATE events SET event_id = X'01' WHERE position = 3");
  try {
    t.store.read_all().to_vector();
    FAIL("expected CorruptEventError");
  } catch (const CorruptEventError& e) {
    CHECK(e.position() == 3);
  }
}

// Each column of the event at position 3 (stream s-1, version 1) made malformed in turn: reads by
// stream and of the whole log throw CorruptEventError naming the position and what is wrong,
// and another stream's events are read as they were written.
TEST_CASE("reads name each malformed column of a row") {
  struct Case {
    const char* set;
    const char* problem;
  };
  const Case cases[] = {
      {"stream_version = 'one'", "its stream version is not a positive integer"},
      {"stream_version = 0", "its stream version is not a positive integer"},
      {"event_id = 'sixteen bytes!!!'", "its event id is not 16 bytes"},
      {"event_id = X'00'", "its event id is not 16 bytes"},
      {"type = X'41'", "its type is not text"},
      {"schema_version = 1.5", "its schema version is not a 32-bit unsigned integer"},
      {"schema_version = -1", "its schema version is not a 32-bit unsigned integer"},
      {"schema_version = 4294967296", "its schema version is not a 32-bit unsigned integer"},
      {"payload = 'text'", "its payload is not a blob"},
      {"payload = 7", "its payload is not a blob"},
      {"correlation_id = X'0102'", "a metadata event id is not 16 bytes"},
      {"causation_id = 'text'", "a metadata event id is not 16 bytes"},
      {"compensates = 5", "a metadata event id is not 16 bytes"},
      {"actor = X'6D616C6C6F7279'", "its actor is not text"},
      {"extra = 'k=v'", "its metadata key/values are malformed"},
      {"extra = X'FFFFFFFF'", "its metadata key/values are malformed"},
      {"recorded_at = 'yesterday'", "its recorded-at time is not an integer"},
      {"hash = X'0102'", "its hash is not 32 bytes"},
      {"hash = 'thirty-two bytes of text, or so?'", "its hash is not 32 bytes"},
  };
  for (const Case& c : cases) {
    const std::string set = c.set;
    CAPTURE(set);
    TamperedStore t;
    const auto before = t.store.read_stream("s-1").to_vector();
    REQUIRE(before.size() == 4);
    REQUIRE(before[0].position == 3);
    raw_exec(t.path, std::string("UPDATE events SET ") + c.set + " WHERE position = 3");
    check_names_row([&] { t.store.read_stream("s-1").to_vector(); }, 3, c.problem);
    check_names_row([&] { t.store.read_all().to_vector(); }, 3, c.problem);
    check_reads_intact(t.store, "s-0", 4, 1);
  }
}

TEST_CASE("a newest event whose hash is not 32 bytes: head, append and import name it alike") {
  TamperedStore t;
  raw_exec(t.path, "UPDATE events SET hash = x'0102' WHERE position = 10");
  auto names_position_10 = [](const CorruptEventError& e) {
    CHECK(e.position() == 10);
    CHECK(std::string(e.what()).find("hash is not 32 bytes") != std::string::npos);
  };
  try {
    (void)t.store.head();
    FAIL("head() accepted a damaged hash");
  } catch (const CorruptEventError& e) {
    names_position_10(e);
  }
  try {
    t.store.append("s-9", ExpectedVersion::any(), make_events(1));
    FAIL("append() chained onto a damaged hash");
  } catch (const CorruptEventError& e) {
    names_position_10(e);
  }
  RecordedEvent next;
  next.position = 11;
  try {
    t.store.import_events(std::span<const RecordedEvent>(&next, 1));
    FAIL("import_events() chained onto a damaged hash");
  } catch (const CorruptEventError& e) {
    names_position_10(e);
  }
  CHECK(raw_int(t.path, "SELECT count(*) FROM events") == 10);  // nothing written
}

TEST_CASE("verify names events removed from the end of the log") {
  TamperedStore t;
  const auto r = t.after("DELETE FROM events WHERE position >= 9");
  CHECK(r.problem == Problem::truncated);
  CHECK(r.position == 9);
  CHECK(r.message.find("10") != std::string::npos);
}

TEST_CASE("the chain alone cannot see a carefully cut-off tail, verify(expected_head) can") {
  TamperedStore t;
  const Head kept = t.store.head();
  // A forger who also rewinds the position counter leaves a chain that is intact in itself.
  raw_exec(t.path,
           "DELETE FROM events WHERE position >= 9;"
           "UPDATE sqlite_sequence SET seq = 8 WHERE name = 'events'");
  CHECK(t.store.verify().ok());  // what the chain cannot see on its own
  const auto r = t.store.verify(kept.hash);
  CHECK(r.problem == Problem::head_mismatch);
  CHECK(r.message.find(to_hex(kept.hash)) != std::string::npos);
}

TEST_CASE("verify(expected_head) passes when the log grew after the head was kept") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_events(3));
  const Head kept = t.store.head();
  t.store.append("s-1", ExpectedVersion::any(), make_events(3));
  CHECK(t.store.verify(kept.hash).ok());
  CHECK(t.store.verify(t.store.head().hash).ok());
  CHECK(t.store.verify(Head{}.hash).ok());  // the empty store's head
}

TEST_CASE(
    "every event read or notified carries the previous hash, so its own hash can be checked") {
  TempStore t;
  std::vector<RecordedEvent> notified;
  boost::signals2::scoped_connection c =
      t.store.on_appended().connect([&](const std::vector<RecordedEvent>& events) {
        notified.insert(notified.end(), events.begin(), events.end());
      });
  t.store.append("a-1", ExpectedVersion::any(), make_events(3));
  t.store.append("b-1", ExpectedVersion::any(), make_events(2));
  const auto all = t.store.read_all().to_vector();
  CHECK(all == notified);
  CHECK(all[0].previous_hash == Hash{});
  for (std::size_t i = 1; i < all.size(); ++i) CHECK(all[i].previous_hash == all[i - 1].hash);
  for (const auto& e : all) CHECK(hash_matches(e));
  for (const auto& e : t.store.read_stream("b-1")) CHECK(hash_matches(e));
  for (const auto& e : t.store.read_category("a")) CHECK(hash_matches(e));
  CHECK(hash_matches(*t.store.read_event(all[3].id)));
  RecordedEvent forged = all[2];
  forged.payload.push_back(std::byte{1});
  CHECK_FALSE(hash_matches(forged));
  forged = all[2];
  forged.metadata.actor = "mallory";
  CHECK_FALSE(hash_matches(forged));
}

TEST_CASE("caused_by links an effect to its cause and keeps the correlation") {
  TempStore t;
  auto command = make_event("cmd.Transfer");
  command.metadata.actor = "alice";
  t.store.append("transfer-1", ExpectedVersion::any(), command);
  const auto cause = *t.store.read_event(command.id);
  const Metadata first = caused_by(cause);
  CHECK(first.causation_id == cause.id);
  CHECK(first.correlation_id == cause.id);  // the cause had no correlation id: it starts one
  CHECK(first.actor == "alice");
  auto effect = make_event("bank.Debited");
  effect.metadata = first;
  t.store.append("account-1", ExpectedVersion::any(), effect);
  const Metadata second = caused_by(*t.store.read_event(effect.id));
  CHECK(second.causation_id == effect.id);
  CHECK(second.correlation_id == cause.id);  // the whole chain shares the first correlation
}
