// tools/event_json.cpp — events to and from JSON (see event_json.hpp).
#include "event_json.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string_view>

#include "base64.hpp"
#include "cli.hpp"
#include "factum/eventstore/errors.hpp"

namespace factum::cli {
namespace {

Json optional_id(const std::optional<EventId>& id) {
  return id ? Json(id->to_string()) : Json(nullptr);
}

Json values_json(const std::map<std::string, std::string>& values) {
  const bool plain_keys =
      std::all_of(values.begin(), values.end(), [](const auto& kv) { return is_utf8(kv.first); });
  if (plain_keys) {
    Json out = Json::object();
    for (const auto& [k, v] : values) out[k] = json_text(v);
    return out;
  }
  // A key that is not UTF-8 cannot be a JSON object key: a list of pairs instead.
  Json out = Json::array();
  for (const auto& [k, v] : values) out.push_back({{"key", json_text(k)}, {"value", json_text(v)}});
  return out;
}

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw CliError("field '" + field + "' " + what);
}

const Json& field(const Json& j, const std::string& name) {
  const auto it = j.find(name);
  if (it == j.end()) bad(name, "is missing");
  return *it;
}

std::uint64_t unsigned_field(const Json& j, const std::string& name, std::uint64_t max) {
  const Json& v = field(j, name);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max) {
    bad(name, "is not an integer from 0 to " + std::to_string(max));
  }
  return v.get<std::uint64_t>();
}

std::string text_value(const Json& v, const std::string& name) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.size() == 1 && v.contains("base64") && v["base64"].is_string()) {
    if (auto bytes = base64_decode(v["base64"].get<std::string>())) return to_string(*bytes);
  }
  bad(name, "is not a string (or {\"base64\": ...})");
}

EventId id_value(const Json& v, const std::string& name) {
  if (!v.is_string()) bad(name, "is not an event id");
  try {
    return EventId::parse(v.get<std::string>());
  } catch (const Error&) {
    bad(name, "is not an event id");
  }
}

std::optional<EventId> optional_id_value(const Json& m, const std::string& name) {
  const auto it = m.find(name);
  if (it == m.end() || it->is_null()) return std::nullopt;
  return id_value(*it, "metadata." + name);
}

std::map<std::string, std::string> values_value(const Json& m) {
  std::map<std::string, std::string> out;
  const auto it = m.find("values");
  if (it == m.end() || it->is_null()) return out;
  if (it->is_object()) {
    for (const auto& [k, v] : it->items()) out[k] = text_value(v, "metadata.values." + k);
  } else if (it->is_array()) {
    for (const Json& kv : *it) {
      if (!kv.is_object()) bad("metadata.values", "holds an item that is not {key, value}");
      out[text_value(field(kv, "key"), "metadata.values.key")] =
          text_value(field(kv, "value"), "metadata.values.value");
    }
  } else {
    bad("metadata.values", "is not an object");
  }
  return out;
}

Metadata metadata_value(const Json& j) {
  Metadata m;
  const auto it = j.find("metadata");
  if (it == j.end() || it->is_null()) return m;
  if (!it->is_object()) bad("metadata", "is not an object");
  m.correlation_id = optional_id_value(*it, "correlation_id");
  m.causation_id = optional_id_value(*it, "causation_id");
  m.compensates = optional_id_value(*it, "compensates");
  const auto actor = it->find("actor");
  if (actor != it->end() && !actor->is_null()) m.actor = text_value(*actor, "metadata.actor");
  m.values = values_value(*it);
  return m;
}

}  // namespace

namespace {

// The metadata of an owned event, or decoded from a view's stored bytes.
const Metadata& metadata_of(const RecordedEvent& e) { return e.metadata; }
Metadata metadata_of(const EventView& e) { return e.metadata(); }

// The envelope and metadata of event_to_json, without the payload.
template <class Event>
Json envelope_json(const Event& e) {
  Json j = Json::object();
  j["position"] = e.position;
  j["stream"] = json_text(std::string(e.stream_id));
  j["version"] = e.stream_version;
  j["id"] = e.id.to_string();
  j["type"] = json_text(std::string(e.type));
  j["schema_version"] = e.schema_version;
  j["recorded_at"] = format_time(e.recorded_at);
  j["recorded_at_us"] = e.recorded_at.time_since_epoch().count();
  const Metadata& metadata = metadata_of(e);
  Json m = Json::object();
  m["correlation_id"] = optional_id(metadata.correlation_id);
  m["causation_id"] = optional_id(metadata.causation_id);
  m["compensates"] = optional_id(metadata.compensates);
  m["actor"] = metadata.actor.empty() ? Json(nullptr) : json_text(metadata.actor);
  m["values"] = values_json(metadata.values);
  j["metadata"] = std::move(m);
  return j;
}

template <class Event>
Json full_json(const Event& e) {
  Json j = envelope_json(e);
  j["payload"] = base64_encode(e.payload);
  j["hash"] = to_hex(e.hash);
  return j;
}

template <class Event>
EventLine line_of(const Event& e) {
  Json j = envelope_json(e);
  j["payload"] = "";
  j["hash"] = to_hex(e.hash);
  // Hidden code points (bidirectional controls, C1 controls, ...) as \u escapes: an export
  // printed on a terminal cannot drive it either.
  std::string text = escape_hidden_in_json(j.dump(-1, ' ', false, Json::error_handler_t::strict));
  // Keys keep their order, so the top-level "payload" is the last field but "hash": the last
  // match is it (a metadata key "payload" comes earlier, and a quote inside a string is
  // escaped).
  static constexpr std::string_view kMark = R"(,"payload":"","hash":")";
  const std::size_t at = text.rfind(kMark);
  if (at == std::string::npos) throw std::logic_error("event_line: no payload field");
  const std::size_t split = at + std::string_view(R"(,"payload":")").size();
  return EventLine{text.substr(0, split), text.substr(split)};
}

}  // namespace

Json event_to_json(const RecordedEvent& e) { return full_json(e); }
Json event_to_json(const EventView& e) { return full_json(e); }
EventLine event_line(const RecordedEvent& e) { return line_of(e); }
EventLine event_line(const EventView& e) { return line_of(e); }

Json event_brief_json(const RecordedEvent& e) {
  Json j = Json::object();
  j["position"] = e.position;
  j["stream"] = json_text(e.stream_id);
  j["version"] = e.stream_version;
  j["type"] = json_text(e.type);
  j["id"] = e.id.to_string();
  j["recorded_at"] = format_time(e.recorded_at);
  return j;
}

Json trailer_to_json(const ExportTrailer& t) {
  Json inner = Json::object();
  inner["events"] = t.events;
  inner["head_position"] = t.head_position;
  inner["head_hash"] = to_hex(t.head_hash);
  if (t.keys) inner["keys"] = *t.keys;
  Json j = Json::object();
  j["trailer"] = std::move(inner);
  return j;
}

Json key_to_json(const WrappedKey& k) {
  Json inner = Json::object();
  inner["subject"] = k.subject;  // subject ids and KEK ids are ASCII
  inner["kek"] = k.kek_id;
  inner["wrapped"] = base64_encode(k.wrapped);
  inner["created_at_us"] = k.created_at.time_since_epoch().count();
  Json j = Json::object();
  j["subject_key"] = std::move(inner);
  return j;
}

bool is_key_line(const Json& j) { return j.is_object() && j.contains("subject_key"); }

WrappedKey key_from_json(const Json& j) {
  const Json& k = field(j, "subject_key");
  if (!k.is_object()) bad("subject_key", "is not an object");
  WrappedKey out;
  const Json& subject = field(k, "subject");
  const Json& kek = field(k, "kek");
  const Json& wrapped = field(k, "wrapped");
  const Json& at = field(k, "created_at_us");
  if (!subject.is_string()) bad("subject_key.subject", "is not a string");
  if (!kek.is_string()) bad("subject_key.kek", "is not a string");
  std::optional<Bytes> bytes;
  if (wrapped.is_string()) bytes = base64_decode(wrapped.get<std::string>());
  if (!bytes) bad("subject_key.wrapped", "is not base64");
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!at.is_number_integer() || (at.is_number_unsigned() && at.get<std::uint64_t>() > kMax)) {
    bad("subject_key.created_at_us", "is not a 64-bit integer");
  }
  out.subject = subject.get<std::string>();
  out.kek_id = kek.get<std::string>();
  out.wrapped = std::move(*bytes);
  out.created_at = Timestamp(std::chrono::microseconds(at.get<std::int64_t>()));
  return out;
}

bool is_trailer(const Json& j) { return j.is_object() && j.contains("trailer"); }

ExportTrailer trailer_from_json(const Json& j) {
  const Json& t = field(j, "trailer");
  if (!t.is_object()) bad("trailer", "is not an object");
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  ExportTrailer out;
  out.events = unsigned_field(t, "events", kMax);
  out.head_position = unsigned_field(t, "head_position", kMax);
  if (t.contains("keys")) out.keys = unsigned_field(t, "keys", kMax);
  const Json& hash = field(t, "head_hash");
  try {
    if (!hash.is_string()) throw InvalidArgument("not a string");
    out.head_hash = hash_from_hex(hash.get<std::string>());
  } catch (const Error&) {
    bad("trailer.head_hash", "is not a SHA-256 hash (64 hexadecimal digits)");
  }
  return out;
}

RecordedEvent event_from_json(const Json& j) {
  if (!j.is_object()) throw CliError("an event must be a JSON object");
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  RecordedEvent e;
  e.position = unsigned_field(j, "position", kMax);
  e.stream_id = text_value(field(j, "stream"), "stream");
  e.stream_version = unsigned_field(j, "version", kMax);
  e.id = id_value(field(j, "id"), "id");
  e.type = text_value(field(j, "type"), "type");
  e.schema_version = static_cast<std::uint32_t>(
      unsigned_field(j, "schema_version", std::numeric_limits<std::uint32_t>::max()));
  const Json& at = field(j, "recorded_at_us");
  if (!at.is_number_integer() || (at.is_number_unsigned() && at.get<std::uint64_t>() > kMax)) {
    bad("recorded_at_us", "is not a 64-bit integer");
  }
  e.recorded_at = Timestamp(std::chrono::microseconds(at.get<std::int64_t>()));
  e.metadata = metadata_value(j);
  const Json& payload = field(j, "payload");
  std::optional<Bytes> bytes;
  if (payload.is_string()) bytes = base64_decode(payload.get<std::string>());
  if (!bytes) bad("payload", "is not base64");
  e.payload = std::move(*bytes);
  const Json& hash = field(j, "hash");
  if (!hash.is_string()) bad("hash", "is not a SHA-256 hash");
  try {
    e.hash = hash_from_hex(hash.get<std::string>());
  } catch (const Error&) {
    bad("hash", "is not a SHA-256 hash (64 hexadecimal digits)");
  }
  return e;
}

}  // namespace factum::cli
