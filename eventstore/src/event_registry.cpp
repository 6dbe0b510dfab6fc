#include "factum/eventstore/event_registry.hpp"

#include <string>

namespace factum {

void EventRegistry::add_type(std::string name, std::uint32_t version, std::type_index type) {
  if (name.empty()) throw InvalidArgument("factum: an event type name must not be empty");
  if (version == 0) {
    throw InvalidArgument("factum: event type '" + name +
                          "' has schema version 0; versions start at 1");
  }
  if (aliases_.contains(name)) {
    throw InvalidArgument("factum: event type name '" + name + "' is an alias already");
  }
  const auto [it, inserted] = types_.try_emplace(name, TypeInfo{version, type});
  if (!inserted && (it->second.type != type || it->second.current_version != version)) {
    throw InvalidArgument("factum: event type name '" + name + "' is registered for another type");
  }
}

void EventRegistry::add_alias(std::string old_name, std::string name) {
  if (old_name.empty()) throw InvalidArgument("factum: an alias must not be empty");
  if (types_.contains(old_name) || aliases_.contains(old_name)) {
    throw InvalidArgument("factum: alias '" + old_name + "' is registered already");
  }
  aliases_.emplace(std::move(old_name), std::move(name));
}

void EventRegistry::add_upcaster(std::string type, std::uint32_t from, std::uint32_t to,
                                 Step step) {
  if (from >= to) {
    throw InvalidArgument("factum: an upcaster of '" + type + "' from schema version " +
                          std::to_string(from) + " to " + std::to_string(to) +
                          " does not raise the version: chains must only go up (no cycles)");
  }
  const auto [it, inserted] = upcasters_.try_emplace({type, from}, Upcaster{to, std::move(step)});
  if (!inserted) {
    throw InvalidArgument("factum: two upcasters of '" + type + "' from schema version " +
                          std::to_string(from));
  }
}

void EventRegistry::validate() const {
  for (const auto& [key, upcaster] : upcasters_) {
    const auto& [type, from] = key;
    const auto info = types_.find(type);
    if (info == types_.end()) {
      throw InvalidArgument("factum: upcasters are registered for '" + type +
                            "', which is not a registered event type");
    }
    const std::uint32_t current = info->second.current_version;
    std::uint32_t v = from;
    while (v < current) {
      const auto step = upcasters_.find({type, v});
      if (step == upcasters_.end()) {
        throw InvalidArgument("factum: the upcasters of '" + type + "' have a gap: none from " +
                              "schema version " + std::to_string(v) + " (current version " +
                              std::to_string(current) + ")");
      }
      v = step->second.to_version;
    }
    if (v != current) {
      throw InvalidArgument("factum: an upcaster of '" + type + "' leads to schema version " +
                            std::to_string(v) + ", past the current version " +
                            std::to_string(current));
    }
  }
}

bool EventRegistry::knows(std::string_view type) const {
  return types_.contains(canonical_name(type));
}

std::string_view EventRegistry::canonical_name(std::string_view type) const {
  const auto alias = aliases_.find(type);
  return alias == aliases_.end() ? type : std::string_view(alias->second);
}

void EventRegistry::require_registered(std::string_view name, std::type_index type) const {
  const auto it = types_.find(name);
  if (it == types_.end() || it->second.type != type) {
    throw UnknownEventTypeError(std::string(name), "it is not registered with this registry");
  }
}

CorruptEventError EventRegistry::corrupt(const RecordedEvent& recorded, const std::string& why) {
  std::string_view detail = why;
  if (detail.starts_with("factum: ")) detail.remove_prefix(8);  // say "factum:" once
  return CorruptEventError(recorded.position, "'" + recorded.type + "' (schema version " +
                                                  std::to_string(recorded.schema_version) +
                                                  "): " + std::string(detail));
}

std::string EventRegistry::current_payload(const RecordedEvent& recorded) const {
  std::call_once(validated_, [this] { validate(); });
  if (!hash_matches(recorded)) {
    throw corrupt(recorded, "it does not match its hash: its payload or metadata were altered");
  }
  const std::string_view name = canonical_name(recorded.type);
  const auto info = types_.find(name);
  if (info == types_.end()) {
    throw UnknownEventTypeError(recorded.type, "at position " + std::to_string(recorded.position) +
                                                   ", not registered with this registry");
  }
  const std::uint32_t current = info->second.current_version;
  std::uint32_t v = recorded.schema_version;
  if (v > current) {
    throw UnknownEventTypeError(
        recorded.type, "schema version " + std::to_string(v) + " at position " +
                           std::to_string(recorded.position) +
                           " is newer than this code's version " + std::to_string(current));
  }
  std::string bytes(reinterpret_cast<const char*>(recorded.payload.data()),
                    recorded.payload.size());
  while (v < current) {
    const auto step = upcasters_.find({std::string(name), v});
    if (step == upcasters_.end()) {
      throw UnknownEventTypeError(recorded.type, "no upcaster from schema version " +
                                                     std::to_string(v) + " (position " +
                                                     std::to_string(recorded.position) + ")");
    }
    try {
      bytes = step->second.step(as_bytes(bytes));
    } catch (const PayloadError& e) {
      throw corrupt(recorded,
                    "upcasting from schema version " + std::to_string(v) + ": " + e.what());
    }
    v = step->second.to_version;
  }
  return bytes;
}

}  // namespace factum
