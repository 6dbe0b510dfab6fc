// tools/event_json.hpp — an event as JSON: the export format (one object per line, read back by
// import) and the --json form of read, tail and audit. docs/cli.md describes every field.
//
// Text fields (stream id, type, actor, metadata keys and values) are JSON strings when they are
// valid UTF-8 and {"base64": "..."} otherwise, so any stored bytes survive a round trip.
#pragma once

#include "factum/eventstore/event.hpp"
#include "output.hpp"

namespace factum::cli {

// Every field of the event, payload as base64, hash as hex (the export format).
Json event_to_json(const RecordedEvent& e);
// position, stream, version, type, id and recorded_at: for lists of related events (audit).
Json event_brief_json(const RecordedEvent& e);

// Parses event_to_json's output. previous_hash is left zero. Throws CliError naming the field
// that is missing or malformed.
RecordedEvent event_from_json(const Json& j);

}  // namespace factum::cli
