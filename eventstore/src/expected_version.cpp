#include "factum/eventstore/expected_version.hpp"

namespace factum {

bool ExpectedVersion::matches(std::uint64_t actual) const noexcept {
  switch (kind_) {
    case Kind::any:
      return true;
    case Kind::no_stream:
      return actual == 0;
    case Kind::stream_exists:
      return actual > 0;
    case Kind::exact:
      return actual == version_;
  }
  return false;
}

std::string ExpectedVersion::to_string() const {
  switch (kind_) {
    case Kind::any:
      return "any";
    case Kind::no_stream:
      return "no stream";
    case Kind::stream_exists:
      return "stream exists";
    case Kind::exact:
      return "exactly " + std::to_string(version_);
  }
  return "?";
}

}  // namespace factum
