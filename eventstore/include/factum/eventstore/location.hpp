// factum/eventstore/location.hpp — what EventStore::open's location names, and how to show it.
//
// EventStore::open takes either the path of a SQLite store file or a PostgreSQL connection URI
// (docs/postgres.md). is_server_location() is the one rule open() itself follows to tell them
// apart, and shown_location() is the location as a message may print it: a URI with its
// passwords masked, so a secret passed on a command line or in a setting never reaches a log.
// The library's own messages, the `factum` command line and the sample programs all use them.
//
//   factum::is_server_location("postgresql://app@db/ledger")    // true
//   factum::is_server_location("postgresql-notes.db")           // false: a file
//   factum::shown_location("postgres://app:s3cret@db/ledger")   // "postgres://app:***@db/ledger"
//   factum::shown_location("postgresql://db/x?password=s3cret")  //
//   "postgresql://db/x?password=***"
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace factum {

// True when `location` is a PostgreSQL connection URI: it starts with "postgresql://" or
// "postgres://" (lowercase, as libpq requires). Anything else, a keyword/value string such as
// "host=db password=x" included, is the path of a store file to EventStore::open.
bool is_server_location(std::string_view location) noexcept;

// `location` as messages show it. A file's path is returned unchanged. In a server URI, each
// password is replaced by `***`:
//   - user:password@ — the password between the user's ':' and the '@' that ends the
//     credentials: the authority's last '@' (a password may hold a raw '@'), else, as libpq
//     reads it, the first '@' before the path's '/' (a raw '?' or '#' in a password);
//   - a password= or sslpassword= query parameter (its name percent-decoded, as libpq decodes
//     it) — the value up to the next '&'.
// The rest of the URI (user, hosts, ports, database, other parameters) is kept as it is.
// Throws std::bad_alloc only.
std::string shown_location(std::string_view location);

}  // namespace factum
