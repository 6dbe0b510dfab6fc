// factum/eventstore/postgres_options.hpp — where EventStore::open finds a PostgreSQL store,
// field by field instead of as a connection URI (docs/postgres.md).
//
//   factum::PostgresOptions where;
//   where.host = "db.internal";
//   where.dbname = "ledger";
//   where.user = "app";
//   where.password = secret_from_vault();
//   where.schema = "bank";
//   auto store = factum::EventStore::open(where);
//
// PostgresOptions says where the store is, as a path or a URI does; how the store behaves
// (durability, timeouts, read-only, ...) stays in StoreOptions, open()'s second argument, the
// same for both backends: code that moves from a SQLite file to a server changes only the first
// argument of open(), and one StoreOptions value can be handed to either.
//
// Every field left empty (or unset) leaves libpq's own default, which honours libpq's
// environment variables (PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD, PGSSLMODE, ...) and
// ~/.pgpass.
//
// EventStore::open(const PostgresOptions&, const StoreOptions&) checks every field before it
// connects and throws InvalidArgument naming the field (never a password's value):
//   - a field or a parameter holding a NUL byte;
//   - port outside 1..65535;
//   - connect_timeout below zero;
//   - sslmode other than disable, allow, prefer, require, verify-ca, verify-full;
//   - schema that is not a plain lower-case identifier (see `schema`);
//   - a parameters key that is empty, that libpq does not know, or that one of the fields
//     above sets (host, port, dbname, user, password, application_name, connect_timeout,
//     sslmode: set those through the field).
// Then it throws what open(path) throws for a URI: StorageError (kind io) when the server cannot
// be reached or refuses the connection (wrong user or password; the message names host, port,
// database and user, never the password), not_a_store when the schema does not exist or holds no
// store that may be created, newer_format, ...; and StorageError (kind other) when factum was
// built without its PostgreSQL backend.
//
// Thread-safety: a plain value type, read once by open(); the store keeps its own copy.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace factum {

struct PostgresOptions {
  // The server: a host name, an IP address, or the directory of a Unix-domain socket (an
  // absolute path). Empty: libpq's default (PGHOST, else the local socket). Default: empty.
  std::string host;
  // The server's TCP port (or the socket file's suffix), 1..65535. Unset: libpq's default
  // (PGPORT, else 5432). Default: unset.
  std::optional<int> port;
  // The database. Empty: libpq's default (PGDATABASE, else the user's name). Taken as a name
  // only: a connection string or URI here is not expanded. Default: empty.
  std::string dbname;
  // The role to connect as. Empty: libpq's default (PGUSER, else the operating system user).
  // Default: empty.
  std::string user;
  // The role's password. Empty: libpq's default (PGPASSWORD, ~/.pgpass, or none). Never shown in
  // an error message nor in EventStore::path(). Default: empty.
  std::string password;
  // The schema holding factum's tables (and those of snapshots, checkpoints and read models):
  // every connection of the store (readers, the writer, watchers) gets search_path = this
  // schema alone, so SQL run through Sql finds only its tables unqualified (PostgreSQL's own
  // pg_catalog stays visible). The schema must exist (CREATE SCHEMA it first, as for a URI);
  // open() creates the tables in it, not the schema. A name is 1 to 63 characters of a-z, 0-9,
  // '_' and '$', starting with a letter or '_', and not starting with "pg_": the names
  // PostgreSQL keeps as written without quotes, so `CREATE SCHEMA <name>` in psql makes the
  // same schema. It replaces a search_path set through parameters["options"]. Empty: the
  // first schema of the connection's search_path, as for a URI ("public" on a fresh
  // database). Default: empty.
  std::string schema;
  // The name the server shows for the store's sessions (pg_stat_activity). Empty: libpq's
  // default (PGAPPNAME, else none). Default: empty.
  std::string application_name;
  // How long each connection attempt may take before it fails with StorageError (kind io)
  // naming the host. Zero: PGCONNECT_TIMEOUT when the environment sets it, else 10 seconds
  // (factum's default, as for a URI without connect_timeout: a server that accepts the
  // connection and never answers fails it, never hangs it). libpq waits at least 2 seconds.
  // Default: 0.
  std::chrono::seconds connect_timeout{0};
  // TLS: "disable", "allow", "prefer", "require", "verify-ca" or "verify-full" (libpq's
  // sslmode). Empty: libpq's default (PGSSLMODE, else "prefer"). Default: empty.
  std::string sslmode;
  // Other libpq connection keywords, as libpq documents them ("sslrootcert", "hostaddr",
  // "target_session_attrs", "options", "keepalives", ...), passed as they are. Default: none.
  std::map<std::string, std::string> parameters;
};

}  // namespace factum
