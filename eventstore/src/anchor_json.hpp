// An anchor's JSON line (Anchor::to_json / from_json): one flat object of integers and hex
// strings, written and parsed without a JSON library (the store's library has none).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "factum/eventstore/anchor.hpp"

namespace factum::detail {

std::string anchor_to_json(const Anchor& anchor);
// Throws AnchorError naming the field that is missing, repeated, unknown or malformed.
Anchor anchor_from_json(std::string_view line);

// The payload of a factum.RollbackAccepted event (docs/storage-format.md, "Accepted
// rollbacks"): {"rollback":1,"anchor":"<hash>","anchor_position":P}. The log's head when it was
// accepted is the event's own previous position and previous_hash.
struct RollbackPayload {
  Hash anchor{};
  Position anchor_position = 0;
};
std::string rollback_to_json(const RollbackPayload& payload);
// nullopt when `text` is not such a payload.
std::optional<RollbackPayload> rollback_from_json(std::string_view text);

}  // namespace factum::detail
