// Anchored heads (anchor.hpp): signed receipts of a log's head kept outside the store, checked
// alone (bad_anchor) and against a store (behind_anchor, anchor_mismatch), on both backends.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "factum/eventstore/anchor.hpp"
#include "support/anchor_keys.hpp"
#ifdef FACTUM_TEST_HAVE_POSTGRES
#include "support/pg_test.hpp"
#endif
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::KeyFiles;
using factum::test::make_ed25519_keys;
using factum::test::make_events;
using factum::test::TempDir;
using factum::test::TempStore;
using Problem = VerifyResult::Problem;

namespace {

std::string slurp_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

// A store with `n` events, a key pair and a file of anchors, all in one temporary folder.
struct Anchored {
  TempStore t;
  KeyFiles keys = make_ed25519_keys(t.dir.file(""));
  AnchorSigningKey key = AnchorSigningKey::from_pem_file(keys.private_key);
  AnchorPublicKey pub = AnchorPublicKey::from_pem_file(keys.public_key);
  AnchorFile file{t.dir.file("anchors/log.jsonl")};

  explicit Anchored(std::size_t n = 10) {
    if (n > 0) t.store.append("s-1", ExpectedVersion::any(), make_events(n));
  }
  Anchor anchor() { return anchor_head(t.store, key, file); }
  VerifyResult verify(const EventStore& store) {
    return verify_anchored(store, file.anchors(), pub);
  }
};

Anchor signed_anchor(const AnchorSigningKey& key, Position position = 7) {
  Hash h{};
  h[0] = 0xab;
  return key.sign(Head{position, h}, 1765000000123, std::nullopt);
}

}  // namespace

TEST_CASE("an anchor's signed bytes are the documented text, and its JSON line round-trips") {
  TempDir dir;
  const AnchorSigningKey key =
      AnchorSigningKey::from_pem_file(make_ed25519_keys(dir.file("")).private_key);
  const Anchor a = signed_anchor(key);
  CHECK(a.signed_bytes() == "factum-anchor-v1\nposition 7\nhead ab" + std::string(62, '0') +
                                "\ntime_ms 1765000000123\nprevious " + std::string(64, '0') + "\n");
  CHECK(Anchor::from_json(a.to_json()) == a);
  CHECK(a.to_json().find('\n') == std::string::npos);
  // The next anchor chains to this one's hash, which covers its signature too.
  const Anchor b = key.sign(Head{8, a.head}, a.time_ms + 1, a);
  CHECK(b.previous == a.hash());
  Anchor c = a;
  c.signature[0] ^= 1;
  CHECK(c.hash() != a.hash());
}

TEST_CASE("the worked example of docs/storage-format.md checks: its bytes, signature and hash") {
  const std::string doc = slurp_file(FACTUM_SOURCE_DIR "/docs/storage-format.md");
  const std::string section = doc.substr(doc.find("## Anchors"));
  auto after = [&](const std::string& label, std::size_t length) {
    const std::size_t at = section.find(label);
    REQUIRE(at != std::string::npos);
    return section.substr(at + label.size(), length);
  };
  const std::string raw_hex = after("public key (raw): ", 64);
  std::array<std::uint8_t, 32> raw{};
  const Hash raw_hash = hash_from_hex(raw_hex);  // 32 bytes, as a hash is
  std::copy(raw_hash.begin(), raw_hash.end(), raw.begin());
  const std::size_t line_at = section.find("{\"anchor\":1,");
  REQUIRE(line_at != std::string::npos);
  const Anchor a =
      Anchor::from_json(section.substr(line_at, section.find('\n', line_at) - line_at));
  CHECK(AnchorPublicKey::from_raw(raw).verifies(a));
  CHECK(section.find("```\n" + a.signed_bytes() + "```") != std::string::npos);
  CHECK(section.find(std::to_string(a.signed_bytes().size()) + " bytes") != std::string::npos);
  CHECK(to_hex(a.hash()) == after("the `previous` of the next anchor, is\n`", 64));
}

TEST_CASE("Anchor::from_json names what is wrong with a line") {
  TempDir dir;
  const AnchorSigningKey key =
      AnchorSigningKey::from_pem_file(make_ed25519_keys(dir.file("")).private_key);
  const std::string good = signed_anchor(key).to_json();
  auto error_of = [](const std::string& line) -> std::string {
    try {
      (void)Anchor::from_json(line);
    } catch (const AnchorError& e) {
      return e.what();
    }
    return "";
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK(error_of(good).empty());
  CHECK(error_of(replaced("\"position\":7,", "")).find("\"position\" is missing") !=
        std::string::npos);
  CHECK(error_of(replaced("{", "{\"extra\":1,")).find("unknown field \"extra\"") !=
        std::string::npos);
  CHECK(error_of(replaced("{", "{\"position\":8,")).find("appears twice") != std::string::npos);
  CHECK(error_of(replaced("\"head\":\"ab", "\"head\":\"zz")).find("not hex") != std::string::npos);
  CHECK(error_of(replaced("\"head\":\"ab", "\"head\":\"a")).find("64 hexadecimal") !=
        std::string::npos);
  CHECK(error_of(replaced("\"anchor\":1", "\"anchor\":2")).find("format 2") != std::string::npos);
  CHECK(error_of(replaced("\"position\":7", "\"position\":\"7\"")).find("an integer") !=
        std::string::npos);
  CHECK(error_of(replaced("\"position\":7", "\"position\":-7")).find("negative") !=
        std::string::npos);
  CHECK(error_of(good + " x").find("text follows") != std::string::npos);
  CHECK(error_of(replaced("\"position\":7", "\"position\":07")).find("leading zero") !=
        std::string::npos);
  CHECK(!error_of(replaced("\"position\":7", "\"position\":7.0")).empty());
  CHECK(error_of(replaced("\"head\":\"ab", "\"head\":\"\\u0061b")).find("escape") !=
        std::string::npos);
  CHECK(!error_of("").empty());
  CHECK(!error_of(good.substr(0, good.size() / 2)).empty());
}

TEST_CASE("a signature checks with its key's public key only, over every field") {
  TempDir dir;
  const KeyFiles keys = make_ed25519_keys(dir.file(""));
  const AnchorSigningKey key = AnchorSigningKey::from_pem_file(keys.private_key);
  const AnchorPublicKey pub = AnchorPublicKey::from_pem_file(keys.public_key);
  const AnchorPublicKey other =
      AnchorPublicKey::from_pem_file(make_ed25519_keys(dir.file(""), "other").public_key);
  const Anchor a = signed_anchor(key);
  CHECK(pub.verifies(a));
  CHECK(AnchorPublicKey::from_raw(key.public_key()).verifies(a));
  CHECK_FALSE(other.verifies(a));
  for (int field = 0; field < 5; ++field) {
    Anchor b = a;
    if (field == 0) b.position += 1;
    if (field == 1) b.head[31] ^= 1;
    if (field == 2) b.time_ms += 1;
    if (field == 3) b.previous[0] ^= 1;
    if (field == 4) b.signature[63] ^= 1;
    CHECK_FALSE(pub.verifies(b));
  }
}

TEST_CASE("keys that are missing, not PEM or not Ed25519 are refused by name") {
  TempDir dir;
  const KeyFiles p256 = factum::test::make_p256_keys(dir.file(""));
  write_file(dir.file("junk.pem"), "not a key\n");
  auto error_of = [](auto load) -> std::string {
    try {
      load();
    } catch (const AnchorError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of([&] {
          AnchorSigningKey::from_pem_file(dir.file("none.pem"));
        }).find("cannot be opened") != std::string::npos);
  CHECK(error_of([&] {
          AnchorSigningKey::from_pem_file(dir.file("junk.pem"));
        }).find("is not a PEM private key") != std::string::npos);
  CHECK(error_of([&] {
          AnchorSigningKey::from_pem_file(p256.private_key);
        }).find("not an Ed25519 key") != std::string::npos);
  CHECK(error_of([&] {
          AnchorPublicKey::from_pem_file(p256.public_key);
        }).find("not an Ed25519 key") != std::string::npos);
  CHECK(error_of([&] {
          AnchorPublicKey::from_pem_file(dir.file("junk.pem"));
        }).find("is not a PEM public key") != std::string::npos);
}

TEST_CASE("anchors of a growing log chain in the file, and verify with them passes") {
  Anchored a(0);
  const Anchor empty = a.anchor();
  CHECK(empty.position == 0);
  CHECK(empty.head == Hash{});
  a.t.store.append("s-1", ExpectedVersion::any(), make_events(5));
  const Anchor first = a.anchor();
  const Anchor again = a.anchor();  // nothing appended between: the same head, anchored again
  a.t.store.append("s-2", ExpectedVersion::any(), make_events(5));
  const Anchor last = a.anchor();
  const std::vector<Anchor> all = a.file.anchors();
  REQUIRE(all.size() == 4);
  CHECK(all[1] == first);
  CHECK(all[3] == last);
  CHECK(first.position == 5);
  CHECK(again.position == 5);
  CHECK(last.position == 10);
  CHECK(last.head == a.t.store.head().hash);
  CHECK(last.previous == again.hash());
  CHECK(all[0].previous == Hash{});
  CHECK(check_anchors(all, a.pub).ok());
  const VerifyResult r = a.verify(a.t.store);
  CHECK(r.ok());
  CHECK(r.events_checked == 10);
  // A log that grew after its last anchor still verifies.
  a.t.store.append("s-3", ExpectedVersion::any(), make_events(3));
  CHECK(a.verify(a.t.store).ok());
}

TEST_CASE("a log shorter than its anchors is behind_anchor, another log is anchor_mismatch") {
  Anchored a(10);
  a.anchor();
  TempStore shorter;  // a log that lost its last two events (an older backup, say)
  shorter.store.append("s-1", ExpectedVersion::any(), make_events(8));
  CHECK(shorter.store.verify().ok());  // the chain alone cannot tell
  const VerifyResult behind = a.verify(shorter.store);
  CHECK(behind.problem == Problem::behind_anchor);
  CHECK(behind.position == 9);
  CHECK(behind.message.find("behind an anchor of position 10") != std::string::npos);

  TempStore other;  // a log rewritten from scratch with recomputed hashes
  other.store.append("s-1", ExpectedVersion::any(), make_events(12));
  CHECK(other.store.verify().ok());
  const VerifyResult mismatch = a.verify(other.store);
  CHECK(mismatch.problem == Problem::anchor_mismatch);
  CHECK(mismatch.position == 10);
  CHECK(mismatch.message.find(to_hex(a.t.store.head().hash)) != std::string::npos);
}

TEST_CASE("anchor_head refuses a store that is behind or differs from the last anchor") {
  Anchored a(10);
  a.anchor();
  const std::string before = slurp_file(a.file.path());
  TempStore shorter;
  shorter.store.append("s-1", ExpectedVersion::any(), make_events(8));
  CHECK_THROWS_WITH_AS(anchor_head(shorter.store, a.key, a.file),
                       doctest::Contains("it ends at position 8, behind the anchor of position 10"),
                       AnchorError);
  TempStore other;
  other.store.append("s-1", ExpectedVersion::any(), make_events(12));
  CHECK_THROWS_WITH_AS(
      anchor_head(other.store, a.key, a.file),
      doctest::Contains("its event at position 10 is not the one signed by the anchor"),
      AnchorError);
  CHECK(slurp_file(a.file.path()) == before);  // nothing appended
}

TEST_CASE("check_anchors names an altered, missing, reordered or foreign anchor as bad_anchor") {
  Anchored a(1);
  for (int i = 0; i < 4; ++i) {
    a.anchor();
    a.t.store.append("s-1", ExpectedVersion::any(), make_events(1));
  }
  const std::vector<Anchor> all = a.file.anchors();
  REQUIRE(all.size() == 4);
  auto problem = [&](std::vector<Anchor> v) {
    const VerifyResult r = check_anchors(v, a.pub);
    return r.ok() ? std::string() : r.message;
  };
  CHECK(problem(all).empty());
  std::vector<Anchor> altered = all;
  altered[2].position = 2;  // moved back: its signature no longer holds
  CHECK(problem(altered).find("anchor 3 (position 2): its signature") != std::string::npos);
  std::vector<Anchor> missing = all;
  missing.erase(missing.begin() + 1);
  CHECK(problem(missing).find("anchor 2 (position 3): it does not follow anchor 1") !=
        std::string::npos);
  std::vector<Anchor> no_first(all.begin() + 1, all.end());
  CHECK(problem(no_first).find("anchors before it are missing") != std::string::npos);
  std::vector<Anchor> reordered = all;
  std::swap(reordered[1], reordered[2]);
  CHECK(problem(reordered).find("anchor 2") != std::string::npos);
  const AnchorPublicKey other =
      AnchorPublicKey::from_pem_file(make_ed25519_keys(a.t.dir.file(""), "other").public_key);
  CHECK_FALSE(check_anchors(all, other).ok());
  // A signed anchor of a log that went back is refused too, though each link holds.
  std::vector<Anchor> back = all;
  back.push_back(a.key.sign(Head{1, all[0].head}, all[3].time_ms, all[3]));
  CHECK(problem(back).find("its position is lower than anchor 4's") != std::string::npos);
  // verify_anchored stops at a bad anchor, before walking the log.
  const VerifyResult r = verify_anchored(a.t.store, missing, a.pub);
  CHECK(r.problem == Problem::bad_anchor);
  CHECK(r.events_checked == 0);
}

TEST_CASE("an anchor file's torn last line is ignored and cut off, and a bad line is named") {
  Anchored a(3);
  a.anchor();
  const std::string whole = slurp_file(a.file.path());
  // A crash in the middle of the next write leaves half a line without its newline.
  write_file(a.file.path(), whole + whole.substr(0, 100));
  CHECK(a.file.anchors().size() == 1);
  a.t.store.append("s-1", ExpectedVersion::any(), make_events(1));
  a.anchor();
  const std::vector<Anchor> all = a.file.anchors();
  REQUIRE(all.size() == 2);
  CHECK(check_anchors(all, a.pub).ok());
  CHECK(slurp_file(a.file.path()).substr(0, whole.size()) == whole);
  // A damaged line in the middle is an error naming the file and the line.
  std::string text = slurp_file(a.file.path());
  text[whole.size() - 5] = 'x';  // a hex digit of line 1's signature
  write_file(a.file.path(), text);
  CHECK_THROWS_WITH_AS(a.file.anchors(), doctest::Contains("line 1 of the anchor file"),
                       AnchorError);
  // A damaged last line stops the next anchor too, naming it.
  write_file(a.file.path(), whole + "{\"anchor\":1}\n");
  CHECK_THROWS_WITH_AS(a.anchor(), doctest::Contains("last line of the anchor file"), AnchorError);
  // A file that does not exist holds no anchors.
  CHECK(AnchorFile(a.t.dir.file("none.jsonl")).anchors().empty());
}

TEST_CASE("an anchor that cannot be written whole leaves the file as it was") {
  Anchored a(3);
  a.anchor();
  const std::string before = slurp_file(a.file.path());
  // A child whose files may not grow past the anchor file's size plus 100 bytes (a full disk
  // for this file): the next line (~330 bytes) is written only in part, then refused.
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{static_cast<rlim_t>(before.size() + 100),
                       static_cast<rlim_t>(before.size() + 100)};
    int rc = setrlimit(RLIMIT_FSIZE, &limit) == 0 ? 2 : 3;
    try {
      AnchorFile(a.file.path()).append([&](const std::optional<Anchor>& last) {
        return a.key.sign(Head{last->position, last->head}, last->time_ms, last);
      });
    } catch (const AnchorError& e) {
      rc = std::string(e.what()).find("the anchor cannot be written") != std::string::npos ? 0 : 4;
    }
    _exit(rc);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(slurp_file(a.file.path()) == before);  // nothing of the refused line stays
  a.t.store.append("s-1", ExpectedVersion::any(), make_events(1));
  a.anchor();
  CHECK(a.file.anchors().size() == 2);
  CHECK(check_anchors(a.file.anchors(), a.pub).ok());
}

TEST_CASE("threads and processes anchoring to one file at once never fork the chain") {
  Anchored a(1);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 5; ++j) a.anchor();
    });
  }
  for (std::thread& th : threads) th.join();
  std::vector<pid_t> children;
  for (int i = 0; i < 3; ++i) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int rc = 0;
      try {
        AnchorFile file(a.file.path());
        const AnchorSigningKey key = AnchorSigningKey::from_pem_file(a.keys.private_key);
        for (int j = 0; j < 5; ++j) {
          file.append([&](const std::optional<Anchor>& last) {
            return key.sign(Head{last ? last->position : 0, last ? last->head : Hash{}},
                            last ? last->time_ms : 0, last);
          });
        }
      } catch (...) {
        rc = 1;
      }
      _exit(rc);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  const std::vector<Anchor> all = a.file.anchors();
  CHECK(all.size() == 35);
  CHECK(check_anchors(all, a.pub).ok());
}

TEST_CASE("a callback sink delivers each anchor and keeps none whose delivery failed") {
  Anchored a(2);
  std::vector<Anchor> delivered;
  bool fail = false;
  CallbackAnchorSink sink([&](const Anchor& x) {
    if (fail) throw std::runtime_error("the timestamping service is down");
    delivered.push_back(x);
  });
  const Anchor first = anchor_head(a.t.store, a.key, sink);
  fail = true;
  a.t.store.append("s-1", ExpectedVersion::any(), make_events(1));
  CHECK_THROWS_WITH(anchor_head(a.t.store, a.key, sink), "the timestamping service is down");
  fail = false;
  const Anchor second = anchor_head(a.t.store, a.key, sink);
  CHECK(second.previous == first.hash());
  CHECK(sink.anchors() == delivered);
  CHECK(delivered.size() == 2);
  CHECK(verify_anchored(a.t.store, delivered, a.pub).ok());
  // A sink that starts from the application's newest anchor continues its chain.
  CallbackAnchorSink resumed([](const Anchor&) {}, second);
  CHECK(anchor_head(a.t.store, a.key, resumed).previous == second.hash());
}

#ifdef FACTUM_TEST_HAVE_POSTGRES
TEST_SUITE_BEGIN("postgres-only");

TEST_CASE("anchors in a PostgreSQL table chain across sinks and threads, and verify with them") {
  Anchored a(4);
  const std::string uri = factum::test::pg_test_uri();  // another schema than the store's
  PostgresAnchorSink sink(uri, "ledger_anchors");
  CHECK_FALSE(sink.last().has_value());
  const Anchor first = anchor_head(a.t.store, a.key, sink);
  a.t.store.append("s-1", ExpectedVersion::any(), make_events(2));
  // A second sink on the same table (another process or machine) continues the same chain.
  PostgresAnchorSink other(uri, "ledger_anchors");
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) anchor_head(a.t.store, a.key, t == 0 ? sink : other);
    });
  }
  for (std::thread& th : threads) th.join();
  const std::vector<Anchor> all = other.anchors();
  REQUIRE(all.size() == 13);
  CHECK(all.front() == first);
  CHECK(sink.last() == all.back());
  CHECK(all.back().position == 6);
  CHECK(check_anchors(all, a.pub).ok());
  CHECK(verify_anchored(a.t.store, all, a.pub).ok());
  CHECK_THROWS_AS(PostgresAnchorSink(uri, "no-dashes"), InvalidArgument);
  CHECK_THROWS_AS(PostgresAnchorSink(uri, "9lives"), InvalidArgument);
}

TEST_SUITE_END();
#endif

TEST_SUITE_BEGIN("sqlite-only");

TEST_CASE("an older copy of the file put back is behind_anchor, though its chain verifies") {
  TempDir dir;
  const std::filesystem::path db = dir.file("store.db");
  const KeyFiles keys = make_ed25519_keys(dir.file(""));
  const AnchorSigningKey key = AnchorSigningKey::from_pem_file(keys.private_key);
  AnchorFile file(dir.file("anchors.jsonl"));
  {
    EventStore store = EventStore::open(db, TempStore::fast_options());
    store.append("s-1", ExpectedVersion::any(), make_events(8));
  }
  std::filesystem::copy_file(db, dir.file("backup.db"));  // closed: the file holds everything
  {
    EventStore store = EventStore::open(db, TempStore::fast_options());
    store.append("s-1", ExpectedVersion::any(), make_events(4));
    anchor_head(store, key, file);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
  std::filesystem::copy_file(dir.file("backup.db"), db);
  const EventStore restored = EventStore::open(db, TempStore::fast_options());
  CHECK(restored.verify().ok());  // the chain alone sees a whole log of 8 events
  const VerifyResult r =
      verify_anchored(restored, file.anchors(), AnchorPublicKey::from_pem_file(keys.public_key));
  CHECK(r.problem == Problem::behind_anchor);
  CHECK(r.position == 9);
}

TEST_SUITE_END();
