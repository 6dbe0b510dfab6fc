// The record headers of an event (factum/kafka/headers.hpp names them).
#pragma once

#include "client.hpp"
#include "factum/eventstore/event_view.hpp"

namespace factum::kafka::detail {

// A new header list describing `event` (the list holds copies of the values).
Headers event_headers(const EventView& event);

}  // namespace factum::kafka::detail
