#include "factum/eventstore/errors.hpp"

#include <string>
#include <utility>

namespace factum {

ConcurrencyError::ConcurrencyError(std::string stream, std::string expected, std::uint64_t actual)
    : Error("factum: stream '" + stream + "' expected version " + expected +
            " but its version is " + std::to_string(actual)),
      stream_(std::move(stream)),
      expected_(std::move(expected)),
      actual_(actual) {}

DuplicateEventError::DuplicateEventError(std::string event_id, std::string stream,
                                         const std::string& detail)
    : Error("factum: event " + event_id + " appended to stream '" + stream + "' " + detail),
      event_id_(std::move(event_id)),
      stream_(std::move(stream)) {}

CorruptEventError::CorruptEventError(std::uint64_t position, const std::string& detail)
    : Error("factum: event at position " + std::to_string(position) + " is corrupt: " + detail),
      position_(position) {}

CorruptStoreError::CorruptStoreError(std::uint64_t position, std::string stream,
                                     std::uint64_t stream_version, const std::string& detail)
    : Error("factum: the log is damaged: " + detail),
      position_(position),
      stream_(std::move(stream)),
      stream_version_(stream_version) {}

UnknownEventTypeError::UnknownEventTypeError(std::string type, const std::string& detail)
    : Error("factum: unknown event type '" + type + "'" + (detail.empty() ? "" : ": " + detail)),
      type_(std::move(type)) {}

}  // namespace factum
