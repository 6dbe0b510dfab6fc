#include "record_error.hpp"

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/text.hpp"

namespace factum::kafka::detail {
namespace {

// `message` without factum's leading "factum: ".
std::string_view unprefixed(std::string_view message) {
  constexpr std::string_view kPrefix = "factum: ";
  if (message.substr(0, kPrefix.size()) == kPrefix) message.remove_prefix(kPrefix.size());
  return message;
}

// "factum: kafka: ingest 'N' cannot append the record at topic 'T' partition P offset O
// (key 'K'): <why>; ..." for `why`.
std::string naming(const RecordPlace& place, std::string_view why) {
  const std::string partition = std::to_string(place.partition);
  return "factum: kafka: ingest '" + printable(place.ingest) +
         "' cannot append the record at topic '" + printable(place.topic) + "' partition " +
         partition + " offset " + std::to_string(place.offset) + " (key '" + printable(place.key) +
         "'): " + std::string(unprefixed(why)) +
         ". It is read again until it can be appended; to skip it, store the offset " +
         std::to_string(place.offset + 1) + " for partition " + partition +
         " (table factum_kafka_offsets, name '" + printable(place.ingest) + "')";
}

// The detail DuplicateEventError's constructor was given: its message after
// "factum: event <id> appended to stream '<stream>' ".
std::string duplicate_detail(const DuplicateEventError& e) {
  const std::string head =
      "factum: event " + e.event_id() + " appended to stream '" + e.stream() + "' ";
  const std::string_view what = e.what();
  return std::string(what.substr(0, head.size()) == head ? what.substr(head.size()) : what);
}

}  // namespace

void rethrow_naming(const RecordPlace& place) {
  try {
    throw;
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(naming(place, e.what()));
  } catch (const DuplicateEventError& e) {
    throw DuplicateEventError(e.event_id(), e.stream(),
                              duplicate_detail(e) + " (" + naming(place, "a duplicate") + ")");
  } catch (const StorageError& e) {
    throw StorageError(e.kind(), naming(place, e.what()));
  } catch (const ConcurrencyError&) {
    throw;  // not expected: the ingest appends with ExpectedVersion::any
  } catch (const Error& e) {
    throw Error(naming(place, e.what()));
  }
}

}  // namespace factum::kafka::detail
