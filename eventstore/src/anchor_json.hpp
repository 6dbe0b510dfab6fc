// An anchor's JSON line (Anchor::to_json / from_json): one flat object of integers and hex
// strings, written and parsed without a JSON library (the store's library has none).
#pragma once

#include <string>
#include <string_view>

#include "factum/eventstore/anchor.hpp"

namespace factum::detail {

std::string anchor_to_json(const Anchor& anchor);
// Throws AnchorError naming the field that is missing, repeated, unknown or malformed.
Anchor anchor_from_json(std::string_view line);

}  // namespace factum::detail
