// Argument checks done on the caller's thread, before anything touches the file.
#pragma once

#include <span>
#include <string_view>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/store_options.hpp"

namespace factum::detail {

// Throws InvalidArgument when `stream` is empty, longer than the limit, starts with '-' (it
// would have no category), or holds a control character.
void validate_stream_id(std::string_view stream, const StoreOptions& options);

// Throws InvalidArgument when `events` is empty, or an event has an empty or over-long type,
// a control character in its type, or a payload over the limit.
void validate_batch(std::string_view stream, std::span<const EventData> events,
                    const StoreOptions& options);

// True when `text` fits a PostgreSQL text column: valid UTF-8 (factum/eventstore/text.hpp's
// is_utf8) without NUL bytes.
bool is_server_text(std::string_view text) noexcept;

// Throws InvalidArgument, naming the field, the event and the stream, when a stream id, type or
// actor of `events` is not server text (is_server_text): what a PostgreSQL text column cannot
// hold. SQLite stores these fields as raw bytes (docs/storage-format.md), so only the
// PostgreSQL backend calls this, on the caller's thread, before the append joins a commit
// group (docs/postgres.md, "What differs from SQLite").
void validate_server_text(std::string_view stream, std::span<const EventData> events);

// Throws DuplicateEventError when one event id appears twice among `batches` (one per stream
// of an append, with `streams` naming them).
void check_unique_ids(std::span<const std::span<const EventData>> batches,
                      std::span<const std::string_view> streams);

}  // namespace factum::detail
