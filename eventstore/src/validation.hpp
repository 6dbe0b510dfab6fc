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

// Throws DuplicateEventError when one event id appears twice among `batches` (one per stream
// of an append, with `streams` naming them).
void check_unique_ids(std::span<const std::span<const EventData>> batches,
                      std::span<const std::string_view> streams);

}  // namespace factum::detail
