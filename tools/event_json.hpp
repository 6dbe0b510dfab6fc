// tools/event_json.hpp — an event as JSON: the export format (one object per line, read back by
// import) and the --json form of read, tail and audit. docs/cli.md describes every field.
//
// Text fields (stream id, type, actor, metadata keys and values) are JSON strings when they are
// valid UTF-8 and {"base64": "..."} otherwise, so any stored bytes survive a round trip.
#pragma once

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_view.hpp"
#include "factum/eventstore/personal.hpp"
#include "output.hpp"

namespace factum::cli {

// Every field of the event, payload as base64, hash as hex (the export format).
Json event_to_json(const RecordedEvent& e);
Json event_to_json(const EventView& e);
// event_to_json(e) as one line of text, split around the payload's base64: `before` ends with
// `"payload":"` and `after` starts with the closing quote. Export writes the base64 between
// them in pieces, so a large payload is never held as text (nor in a Json) whole.
struct EventLine {
  std::string before;
  std::string after;
};
EventLine event_line(const RecordedEvent& e);
EventLine event_line(const EventView& e);

// position, stream, version, type, id and recorded_at: for lists of related events (audit).
Json event_brief_json(const RecordedEvent& e);

// The last line of an export: {"trailer": {"events": N, "head_position": P, "head_hash": H}}.
// Export writes it only after every event, so an export without it was cut off (or stopped at
// a damaged event). head_position and head_hash are those of the last exported event (0 and
// 64 zeros when there is none).
// With `export --with-keys` it also counts the subject key lines ("keys": K).
struct ExportTrailer {
  std::uint64_t events = 0;
  Position head_position = 0;
  Hash head_hash{};
  std::optional<std::uint64_t> keys;  // the subject key lines before it (--with-keys)
};

Json trailer_to_json(const ExportTrailer& t);
// Whether a parsed export line is the trailer (an object with a "trailer" field).
bool is_trailer(const Json& j);
// Parses trailer_to_json's output. Throws CliError naming the field that is malformed.
ExportTrailer trailer_from_json(const Json& j);

// A subject's data key, wrapped (`export --with-keys`): {"subject_key": {"subject": S, "kek": K,
// "wrapped": BASE64, "created_at_us": T}}, after the events and before the trailer.
Json key_to_json(const WrappedKey& k);
// Whether a parsed export line is a subject key line.
bool is_key_line(const Json& j);
// Parses key_to_json's output. Throws CliError naming the field that is malformed.
WrappedKey key_from_json(const Json& j);

// Parses event_to_json's output. previous_hash is left zero. Throws CliError naming the field
// that is missing or malformed.
RecordedEvent event_from_json(const Json& j);

}  // namespace factum::cli
