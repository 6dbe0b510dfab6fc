#include "validation.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/tags.hpp"
#include "factum/eventstore/text.hpp"

namespace factum::detail {
namespace {

constexpr std::size_t kMaxTypeLength = 256;

bool has_control_character(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

// At most 64 bytes of `text`, escaped for a message (factum/eventstore/text.hpp).
std::string shown(std::string_view text) {
  return printable(text.substr(0, 64)) + (text.size() > 64 ? "..." : "");
}

}  // namespace

void validate_stream_id(std::string_view stream, const StoreOptions& options) {
  if (stream.empty()) throw InvalidArgument("factum: a stream id must not be empty");
  if (stream.size() > options.max_stream_id_length) {
    throw InvalidArgument("factum: stream id '" + shown(stream) + "' is " +
                          std::to_string(stream.size()) + " bytes long; the limit is " +
                          std::to_string(options.max_stream_id_length));
  }
  if (stream.front() == '-') {
    throw InvalidArgument("factum: stream id '" + shown(stream) +
                          "' starts with '-', which would leave it without a category");
  }
  if (has_control_character(stream)) {
    throw InvalidArgument("factum: stream id '" + shown(stream) + "' contains a control character");
  }
}

void validate_batch(std::string_view stream, std::span<const EventData> events,
                    const StoreOptions& options) {
  validate_stream_id(stream, options);
  if (events.empty()) {
    throw InvalidArgument("factum: empty batch appended to stream '" + std::string(stream) + "'");
  }
  for (const EventData& e : events) {
    auto where = [&] {
      return "event " + e.id.to_string() + " of stream '" + std::string(stream) + "'";
    };
    if (e.type.empty()) throw InvalidArgument("factum: " + where() + " has an empty type");
    if (e.type.size() > kMaxTypeLength || has_control_character(e.type)) {
      throw InvalidArgument("factum: " + where() + " has an invalid type '" + shown(e.type) + "'");
    }
    if (e.payload.size() > options.max_payload_size) {
      throw InvalidArgument("factum: " + where() + " has a payload of " +
                            std::to_string(e.payload.size()) + " bytes; the limit is " +
                            std::to_string(options.max_payload_size));
    }
    if (e.metadata.compensates && *e.metadata.compensates == e.id) {
      throw InvalidArgument("factum: " + where() + " compensates itself");
    }
    if (!e.metadata.values.empty() && e.metadata.values.contains(kTagsMetadataKey)) {
      try {
        tags_of(e.metadata);
      } catch (const InvalidArgument& error) {
        throw InvalidArgument("factum: " + where() + " has invalid tags: " + error.what());
      }
    }
  }
}

bool is_server_text(std::string_view text) noexcept {
  return text.find('\0') == std::string_view::npos && is_utf8(text);
}

void validate_server_text(std::string_view stream, std::span<const EventData> events) {
  // "the <field> '<value>'[ of event <id> of stream '<stream>'] is not ...": the field first.
  const auto refuse = [&](std::string_view field, std::string_view value, const EventData* e) {
    const std::string of =
        e != nullptr ? " of event " + e->id.to_string() + " of stream '" + shown(stream) + "'" : "";
    throw InvalidArgument("factum: the " + std::string(field) + " '" + shown(value) + "'" + of +
                          " is not valid UTF-8 or holds a NUL byte: a PostgreSQL store keeps it "
                          "in a text column, which holds UTF-8 only");
  };
  if (!is_server_text(stream)) refuse("stream id", stream, nullptr);
  for (const EventData& e : events) {
    if (!is_server_text(e.type)) refuse("type", e.type, &e);
    if (!is_server_text(e.metadata.actor)) refuse("actor", e.metadata.actor, &e);
  }
}

void check_unique_ids(std::span<const std::span<const EventData>> batches,
                      std::span<const std::string_view> streams) {
  std::size_t total = 0;
  for (const auto& b : batches) total += b.size();
  if (total < 2) return;
  std::vector<std::pair<EventId, std::size_t>> ids;
  ids.reserve(total);
  for (std::size_t i = 0; i < batches.size(); ++i) {
    for (const EventData& e : batches[i]) ids.emplace_back(e.id, i);
  }
  std::sort(ids.begin(), ids.end());
  for (std::size_t i = 1; i < ids.size(); ++i) {
    if (ids[i].first == ids[i - 1].first) {
      throw DuplicateEventError(ids[i].first.to_string(), std::string(streams[ids[i].second]),
                                "appears twice in the same append");
    }
  }
}

}  // namespace factum::detail
