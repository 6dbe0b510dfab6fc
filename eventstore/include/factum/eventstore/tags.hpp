// factum/eventstore/tags.hpp — tags on events: the first part of consistency by query (DCB,
// docs/dcb.md).
//
// A tag is an opaque string such as "username:alice" or "seat:14C" that names something an
// event is about beyond its stream. Tags ride in the event's metadata, under the reserved key
// kTagsMetadataKey, so the hash chain covers them like every metadata value: an edited, added
// or removed tag breaks the chain (verify: hash_mismatch). Each append indexes its events' tags
// in the table factum_event_tags (tag, position), in the append's own transaction, on both
// backends, and so does import; verify checks that the index and the log agree
// (tag_index_mismatch). Reads by query and conditional appends build on this index.
//
//   factum::EventData e = registry.encode(UserRegistered{"alice"});
//   factum::set_tags(e.metadata, {"username:alice"});
//   store.append("user-7", factum::ExpectedVersion::no_stream(), e);
//
// Tags are not erasable (docs/erasure.md): keep personal data out of them, or use an opaque id.
//
// Thread-safety: plain functions on values.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event.hpp"

namespace factum {

// The metadata key that holds an event's tags: the tags, sorted, unique, separated by ','.
inline constexpr const char* kTagsMetadataKey = "factum.tags";
inline constexpr std::size_t kMaxTagsPerEvent = 32;
inline constexpr std::size_t kMaxTagLength = 128;

// Throws InvalidArgument unless `tag` is 1 to kMaxTagLength bytes of printable ASCII other than
// space and ',' (0x21-0x7E without 0x2C).
void validate_tag(std::string_view tag);

// Sets `metadata`'s tags to `tags` (sorted, duplicates dropped; none removes the key). Throws
// InvalidArgument for an invalid tag or more than kMaxTagsPerEvent distinct tags (`metadata`
// is then unchanged).
void set_tags(Metadata& metadata, std::vector<std::string> tags);

// The tags of `metadata` (none when it has no kTagsMetadataKey). Throws InvalidArgument when
// the value is not what set_tags writes: an append refuses such an event before writing.
std::vector<std::string> tags_of(const Metadata& metadata);

}  // namespace factum
