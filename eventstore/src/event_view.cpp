#include "factum/eventstore/event_view.hpp"

#include "event_rows.hpp"
#include "factum/eventstore/errors.hpp"
#include "hash_chain.hpp"

namespace factum {

std::map<std::string, std::string> EventView::metadata_values() const {
  std::map<std::string, std::string> out;
  if (encoded_values.empty()) return out;
  if (!detail::decode_values(encoded_values, out)) {
    throw CorruptEventError(position, "its metadata key/values are malformed");
  }
  return out;
}

std::optional<std::string_view> EventView::metadata_value(std::string_view key) const noexcept {
  std::optional<std::string_view> found;
  if (encoded_values.empty()) return found;
  const bool ok = detail::walk_values(encoded_values, [&](std::string_view k, std::string_view v) {
    if (k == key) found = v;
  });
  return ok ? found : std::nullopt;
}

Metadata EventView::metadata() const {
  Metadata m;
  m.correlation_id = correlation_id;
  m.causation_id = causation_id;
  m.compensates = compensates;
  m.actor.assign(actor);
  m.values = metadata_values();
  return m;
}

RecordedEvent EventView::to_recorded() const {
  RecordedEvent e;
  detail::assign(e, *this);
  return e;
}

}  // namespace factum
