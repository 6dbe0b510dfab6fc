// The record headers of an event (factum/kafka/headers.hpp names them).
#pragma once

#include "client.hpp"
#include "factum/eventstore/event.hpp"

namespace factum::kafka::detail {

// A new header list describing `event`.
Headers event_headers(const RecordedEvent& event);

}  // namespace factum::kafka::detail
