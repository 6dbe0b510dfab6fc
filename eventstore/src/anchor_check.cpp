// Anchoring a store's head and checking anchors, alone and against a store (anchor.hpp).
#include <string>

#include "anchoring.hpp"
#include "factum/eventstore/anchor.hpp"

namespace factum {
namespace {

VerifyResult bad(const Anchor& a, std::size_t index, const std::string& what) {
  VerifyResult r;
  r.problem = VerifyResult::Problem::bad_anchor;
  r.position = a.position;
  r.message = "anchor " + std::to_string(index + 1) + " (position " + std::to_string(a.position) +
              "): " + what;
  return r;
}

// The acceptance of anchors[i] covered by a later anchor, if any: the anchors up to i may then
// go unheld, and the one after i may go back.
const AcceptedRollback* covered(const std::vector<Anchor>& anchors, std::size_t i,
                                const std::vector<AcceptedRollback>& accepted) {
  const Hash h = anchors[i].hash();
  for (const AcceptedRollback& a : accepted) {
    if (a.anchor != h) continue;
    for (std::size_t j = i + 1; j < anchors.size(); ++j) {
      if (anchors[j].position >= a.position) return &a;
    }
  }
  return nullptr;
}

}  // namespace

Anchor anchor_head(const EventStore& store, const AnchorSigningKey& key, AnchorSink& sink) {
  return detail::anchor_log(detail::anchored_log(store), key, sink);
}

AcceptedRollback accept_rollback(EventStore& store, AnchorSink& sink, const AnchorPublicKey& key,
                                 const std::string& reason) {
  const std::optional<Anchor> newest = sink.last();
  if (!newest) throw InvalidArgument("factum: no rollback to accept: the sink holds no anchor");
  if (!key.verifies(*newest)) {
    throw AnchorError(
        "factum: not accepting a rollback: the sink's newest anchor (position " +
        std::to_string(newest->position) +
        ") is not signed by the public key: the anchors were altered or belong to another key");
  }
  detail::AnchoredLog log = detail::anchored_log(store);
  log.append = [&store](ExpectedVersion expected, const EventData& e) {
    return store.append(kAnchorStream, expected, e);
  };
  return detail::record_acceptance(log, *newest, reason);
}

std::vector<AcceptedRollback> accepted_rollbacks(const EventStore& store) {
  return detail::acceptances_in(detail::anchored_log(store).anchor_events());
}

VerifyResult check_anchors(const std::vector<Anchor>& anchors, const AnchorPublicKey& key,
                           const std::vector<AcceptedRollback>& accepted) {
  for (std::size_t i = 0; i < anchors.size(); ++i) {
    const Anchor& a = anchors[i];
    if (!key.verifies(a)) {
      return bad(a, i,
                 "its signature is not the public key's over its fields: it was altered, "
                 "or signed by another key");
    }
    if ((a.position == 0) != (a.head == Hash{})) {
      return bad(a, i, "an empty log's anchor has an all-zero head, and only it does");
    }
    if (i == 0 && a.previous != Hash{}) {
      return bad(a, i,
                 "the first anchor follows another one (its previous hash is not zero): "
                 "anchors before it are missing");
    }
    if (i > 0 && a.previous != anchors[i - 1].hash()) {
      return bad(a, i,
                 "it does not follow anchor " + std::to_string(i) +
                     " (its previous hash is not that anchor's hash): an anchor between "
                     "them is missing, or they were reordered or altered");
    }
    if (i > 0 && a.position < anchors[i - 1].position) {
      const AcceptedRollback* r = covered(anchors, i - 1, accepted);
      if (r == nullptr || a.position < r->position) {
        return bad(a, i,
                   "its position is lower than anchor " + std::to_string(i) + "'s (" +
                       std::to_string(anchors[i - 1].position) +
                       "): a log that went back was anchored without an accepted rollback "
                       "that this anchor covers");
      }
    }
  }
  return {};
}

VerifyResult verify_anchored(const EventStore& store, const std::vector<Anchor>& anchors,
                             const AnchorPublicKey& key, VerifyOptions options) {
  const std::vector<AcceptedRollback> accepted = accepted_rollbacks(store);
  VerifyResult r = check_anchors(anchors, key, accepted);
  if (!r.ok()) return r;
  // Anchors up to the last covered acceptance may be gone from the log; those still held are
  // checked like any other.
  std::size_t accepted_up_to = 0;  // anchors before this index may go unheld
  for (std::size_t i = 0; i < anchors.size(); ++i) {
    if (covered(anchors, i, accepted) != nullptr) accepted_up_to = i + 1;
  }
  const detail::AnchoredLog log = detail::anchored_log(store);
  for (std::size_t i = 0; i < anchors.size(); ++i) {
    if (i < accepted_up_to && detail::not_held(log, anchors[i])) continue;
    options.anchored_heads.push_back(Head{anchors[i].position, anchors[i].head});
  }
  return store.verify(options);
}

}  // namespace factum
