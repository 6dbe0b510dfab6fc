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

}  // namespace

Anchor anchor_head(const EventStore& store, const AnchorSigningKey& key, AnchorSink& sink) {
  return detail::anchor_log(detail::anchored_log(store), key, sink);
}

VerifyResult check_anchors(const std::vector<Anchor>& anchors, const AnchorPublicKey& key) {
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
      return bad(a, i,
                 "its position is lower than anchor " + std::to_string(i) + "'s (" +
                     std::to_string(anchors[i - 1].position) +
                     "): a log that went back was anchored");
    }
  }
  return {};
}

VerifyResult verify_anchored(const EventStore& store, const std::vector<Anchor>& anchors,
                             const AnchorPublicKey& key, VerifyOptions options) {
  VerifyResult r = check_anchors(anchors, key);
  if (!r.ok()) return r;
  for (const Anchor& a : anchors) options.anchored_heads.push_back(Head{a.position, a.head});
  return store.verify(options);
}

}  // namespace factum
