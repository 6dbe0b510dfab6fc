// Where the PostgreSQL backend connects: libpq's connection keywords and values, made from a
// postgresql:// URI or from PostgresOptions (checked field by field), and how messages show
// the place (never with its password). Every connection of a store (readers, the writer,
// watchers) is made from the same PgTarget, so they all reach the same database and schema.
//
// Thread-safety: a PgTarget is immutable once made; share it as a shared_ptr<const PgTarget>.
#pragma once

#include <string>
#include <vector>

#include "factum/eventstore/postgres_options.hpp"

namespace factum::detail {

struct PgTarget {
  // libpq's keyword/value arrays (PQconnectdbParams), without their terminating nulls.
  std::vector<std::string> keywords;
  std::vector<std::string> values;
  // True when the value of "dbname" is a URI for libpq to expand (its parameters take
  // precedence over the keywords before it: factum's defaults).
  bool expand_dbname = false;
  // The place for messages and EventStore::path(): the URI or the keywords, password masked.
  std::string shown;
};

// The target of a postgresql:// or postgres:// URI (libpq parses it when connecting). Unless
// the URI or the environment (PGCONNECT_TIMEOUT) sets a connect_timeout, connect_timeout = 10
// seconds: every connection attempt ends, even against a port that accepts and never answers.
PgTarget pg_target(const std::string& uri);

// The target `where` names (with the URI's default connect_timeout when where.connect_timeout
// is zero). Throws InvalidArgument naming the first field it refuses (see
// postgres_options.hpp); a password's value is never in the message.
PgTarget pg_target(const PostgresOptions& where);

}  // namespace factum::detail
