// eventstore/src/location.cpp — store files and server URIs (see location.hpp).
#include "factum/eventstore/location.hpp"

#include <algorithm>

namespace factum {
namespace {

constexpr std::size_t npos = std::string::npos;
constexpr std::string_view kMask = "***";

// Where the credentials of `uri` (user[:password]@) end: the '@' after them, or npos. The
// authority's last '@' covers a password holding a raw '@'; libpq's own rule (the first '@'
// before the path's '/', reading past '?' and '#') covers a password holding a raw '?' or '#'.
std::size_t credentials_end(std::string_view uri, std::size_t authority) {
  const std::size_t host_end = std::min(uri.find_first_of("/?#", authority), uri.size());
  const std::size_t last_at = uri.substr(authority, host_end - authority).rfind('@');
  if (last_at != npos) return authority + last_at;
  const std::size_t at = uri.find('@', authority);
  return at < uri.find('/', authority) ? at : npos;
}

// user:password@host -> user:***@host (the user ends at its first ':', as libpq reads it).
void mask_credentials(std::string& uri, std::size_t authority) {
  const std::size_t at = credentials_end(uri, authority);
  if (at == npos) return;
  const std::size_t colon = uri.find(':', authority);
  if (colon < at) uri.replace(colon + 1, at - colon - 1, kMask);
}

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `text` with each %XX written as its byte, as libpq decodes a URI parameter's name (a '%' not
// followed by two hex digits is kept: libpq refuses such a URI).
std::string percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int high = text[i] == '%' && i + 2 < text.size() ? hex_digit(text[i + 1]) : -1;
    const int low = high >= 0 ? hex_digit(text[i + 2]) : -1;
    if (low < 0) {
      out += text[i];
      continue;
    }
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

bool is_secret_parameter(std::string_view encoded_name) {
  const std::string name = percent_decoded(encoded_name);
  return name == "password" || name == "sslpassword";
}

// ...?password=secret&... -> ...?password=***&...: each parameter after the first '?' is
// name=value up to the next '&' (libpq gives '#' no meaning there, so it is part of the value).
void mask_parameters(std::string& uri) {
  for (std::size_t start = uri.find('?'); start != npos; start = uri.find('&', start)) {
    ++start;
    const std::size_t end = std::min(uri.find('&', start), uri.size());
    const std::size_t equals = uri.find('=', start);
    if (equals < end && is_secret_parameter(std::string_view(uri).substr(start, equals - start)))
      uri.replace(equals + 1, end - equals - 1, kMask);
  }
}

}  // namespace

bool is_server_location(std::string_view location) noexcept {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string shown_location(std::string_view location) {
  std::string out(location);
  if (!is_server_location(location)) return out;
  mask_credentials(out, out.find("://") + 3);
  mask_parameters(out);
  return out;
}

}  // namespace factum
