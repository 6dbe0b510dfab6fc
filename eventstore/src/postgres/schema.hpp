// The store's tables in its PostgreSQL schema (docs/postgres.md, "Schema"): checked, or created
// by the first opener, and the NOTIFY channel the schema's commits are announced on.
//
// Internal. Thread-safety: functions of their arguments.
#pragma once

#include <string>

#include "factum/eventstore/store_options.hpp"
#include "postgres/connection.hpp"

namespace factum::detail::pg {

// Checks the schema (creating it when allowed and missing); returns the schema's name.
std::string prepare_schema(PgConn& c, const StoreOptions& options);

// The NOTIFY channel of a store: one per schema, a valid identifier of fixed length.
std::string channel_of(const std::string& schema);

}  // namespace factum::detail::pg
