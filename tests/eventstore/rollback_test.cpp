// Accepting a rollback (anchor.hpp, accept_rollback): a log that no longer holds its newest
// anchor records the accepted loss as an event, the next anchor goes back to cover it, and
// verify lets the lost anchors go only once that anchor signs the acceptance. Both backends.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "factum/eventstore/anchor.hpp"
#include "support/anchor_keys.hpp"
#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::KeyFiles;
using factum::test::make_ed25519_keys;
using factum::test::make_events;
using factum::test::TempStore;
using Problem = VerifyResult::Problem;

namespace {

// A store of 10 events anchored once, and `restored`: another log of 8 events, as a backup put
// back in its place would be (it holds neither the anchored position nor its event).
struct RolledBack {
  TempStore t;
  KeyFiles keys = make_ed25519_keys(t.dir.file(""));
  AnchorSigningKey key = AnchorSigningKey::from_pem_file(keys.private_key);
  AnchorPublicKey pub = AnchorPublicKey::from_pem_file(keys.public_key);
  AnchorFile file{t.dir.file("anchors.jsonl")};
  TempStore restored;

  RolledBack() {
    t.store.append("s-1", ExpectedVersion::any(), make_events(10));
    anchor_head(t.store, key, file);
    restored.store.append("s-1", ExpectedVersion::any(), make_events(8));
  }
  VerifyResult verify() { return verify_anchored(restored.store, file.anchors(), pub); }
};

std::string text_of(const Bytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace

TEST_CASE("an accepted rollback is an event of the log, and the next anchor goes back to it") {
  RolledBack r;
  const Anchor lost = *r.file.last();
  CHECK_THROWS_WITH_AS(anchor_head(r.restored.store, r.key, r.file),
                       doctest::Contains("--accept-rollback"), AnchorError);
  const Head before = r.restored.store.head();
  const AcceptedRollback a =
      accept_rollback(r.restored.store, r.file, r.pub, "restored Monday's backup");
  CHECK(a.position == 9);
  CHECK(a.anchor == lost.hash());
  CHECK(a.anchor_position == 10);
  CHECK(a.log == before);
  CHECK(a.reason == "restored Monday's backup");
  CHECK(a.recorded_at.time_since_epoch().count() > 0);
  // The event, as docs/storage-format.md describes it.
  std::vector<RecordedEvent> events;
  for (const RecordedEvent& e : r.restored.store.read_stream(kAnchorStream)) events.push_back(e);
  REQUIRE(events.size() == 1);
  CHECK(events[0].type == kRollbackAcceptedType);
  CHECK(text_of(events[0].payload) ==
        "{\"rollback\":1,\"anchor\":\"" + to_hex(lost.hash()) + "\",\"anchor_position\":10}");
  CHECK(events[0].metadata.values.at("reason") == "restored Monday's backup");
  CHECK(accepted_rollbacks(r.restored.store) == std::vector<AcceptedRollback>{a});
  // Accepting again returns the same acceptance and writes nothing.
  CHECK(accept_rollback(r.restored.store, r.file, r.pub, "again") == a);
  CHECK(r.restored.store.head().position == 9);

  // Not yet signed by an anchor, the acceptance lets nothing go.
  CHECK(r.verify().problem == Problem::behind_anchor);
  const Anchor next = anchor_head(r.restored.store, r.key, r.file);
  CHECK(next.position == 9);  // lower than the anchor it follows, and covering the acceptance
  CHECK(next.previous == lost.hash());
  CHECK(r.verify().ok());
  r.restored.store.append("s-1", ExpectedVersion::any(), make_events(3));
  anchor_head(r.restored.store, r.key, r.file);
  CHECK(r.verify().ok());
  // The anchors alone go back: without the acceptance that is a bad anchor chain.
  CHECK(check_anchors(r.file.anchors(), r.pub).problem == Problem::bad_anchor);
  CHECK(check_anchors(r.file.anchors(), r.pub, {a}).ok());
  // The log that was anchored first never accepted anything: these anchors are not its own.
  const VerifyResult old = verify_anchored(r.t.store, r.file.anchors(), r.pub);
  CHECK(old.problem == Problem::bad_anchor);
  CHECK(old.message.find("without an accepted rollback") != std::string::npos);
}

TEST_CASE("accept_rollback refuses a bad reason, a held anchor, no anchor and a foreign key") {
  RolledBack r;
  for (const std::string& reason : {std::string(), std::string("two\nlines"),
                                    std::string("\x1b[31mred"), std::string(1001, 'x')}) {
    CHECK_THROWS_AS(accept_rollback(r.restored.store, r.file, r.pub, reason), InvalidArgument);
  }
  CHECK_THROWS_WITH_AS(accept_rollback(r.t.store, r.file, r.pub, "nothing was lost"),
                       doctest::Contains("no rollback to accept"), InvalidArgument);
  AnchorFile empty(r.t.dir.file("none.jsonl"));
  CHECK_THROWS_WITH_AS(accept_rollback(r.restored.store, empty, r.pub, "why"),
                       doctest::Contains("holds no anchor"), InvalidArgument);
  const AnchorPublicKey other =
      AnchorPublicKey::from_pem_file(make_ed25519_keys(r.t.dir.file(""), "other").public_key);
  CHECK_THROWS_AS(accept_rollback(r.restored.store, r.file, other, "why"), AnchorError);
  CHECK(r.restored.store.head().position == 8);  // nothing recorded
  CHECK(r.t.store.head().position == 10);
  CHECK(accepted_rollbacks(r.restored.store).empty());
}

TEST_CASE("an acceptance the key never signed, or one of another anchor, lets nothing go") {
  RolledBack r;
  const Anchor lost = *r.file.last();
  // An anchor that goes back, signed with the key but with no acceptance in the log.
  r.file.append([&](const std::optional<Anchor>& last) {
    return r.key.sign(r.restored.store.head(), 1765000000000, last);
  });
  VerifyResult v = r.verify();
  CHECK(v.problem == Problem::bad_anchor);
  CHECK(v.message.find("anchor 2 (position 8)") != std::string::npos);
  // Acceptance events written by hand: of another anchor, and one that is not an acceptance.
  EventData forged;
  forged.type = std::string(kRollbackAcceptedType);
  Hash other = lost.hash();
  other[0] ^= 1;
  forged.payload =
      to_bytes("{\"rollback\":1,\"anchor\":\"" + to_hex(other) + "\",\"anchor_position\":10}");
  EventData junk;
  junk.type = std::string(kRollbackAcceptedType);
  junk.payload = to_bytes("{\"rollback\":1,\"anchor\":\"xyz\"}");
  r.restored.store.append(kAnchorStream, ExpectedVersion::any(), std::vector{forged, junk});
  CHECK(accepted_rollbacks(r.restored.store).size() == 1);  // the junk grants nothing
  CHECK(r.verify().problem == Problem::bad_anchor);
}
