#include "postgres_target.hpp"

#include "factum/eventstore/location.hpp"

#ifdef FACTUM_HAVE_POSTGRES
#include "postgres/libpq.hpp"
#endif

#include <algorithm>
#include <array>
#include <cstdlib>
#include <set>
#include <string_view>
#include <utility>

#include "factum/eventstore/errors.hpp"

namespace factum::detail {
namespace {

// The libpq keywords PostgresOptions sets through fields of its own.
constexpr std::array<std::string_view, 8> kFieldKeywords = {
    "host", "port", "dbname", "user", "password", "application_name", "connect_timeout", "sslmode"};
constexpr std::array<std::string_view, 6> kSslModes = {"disable", "allow",     "prefer",
                                                       "require", "verify-ca", "verify-full"};

template <std::size_t N>
bool one_of(std::string_view s, const std::array<std::string_view, N>& list) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

[[noreturn]] void refuse(std::string_view field, const std::string& why) {
  throw InvalidArgument("factum: PostgresOptions::" + std::string(field) + " " + why);
}

void check_no_nul(std::string_view field, std::string_view value) {
  if (value.find('\0') != std::string_view::npos) refuse(field, "holds a NUL byte");
}

// 1 to 63 characters of a-z, 0-9, '_' and '$', starting with a letter or '_', not with "pg_":
// a name PostgreSQL keeps as written without quotes (so psql's CREATE SCHEMA makes the same
// one), which needs no escaping in a search_path nor in libpq's options.
bool is_schema_name(std::string_view s) {
  const auto lower = [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; };
  const auto other = [&](char c) { return lower(c) || (c >= '0' && c <= '9') || c == '$'; };
  return !s.empty() && s.size() <= 63 && !s.starts_with("pg_") && lower(s.front()) &&
         std::all_of(s.begin(), s.end(), other);
}

// The keywords this libpq accepts (all of them when it cannot tell, or without libpq).
std::set<std::string, std::less<>> libpq_keywords() {
  std::set<std::string, std::less<>> out;
#ifdef FACTUM_HAVE_POSTGRES
  if (PQconninfoOption* options = libpq().PQconndefaults(); options != nullptr) {
    for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) out.emplace(o->keyword);
    libpq().PQconninfoFree(options);
  }
#endif
  return out;
}

void check_parameters(const std::map<std::string, std::string>& parameters) {
  const auto known = libpq_keywords();
  for (const auto& [key, value] : parameters) {
    if (key.empty()) refuse("parameters", "holds an empty keyword");
    check_no_nul("parameters", key);
    if (one_of(key, kFieldKeywords)) {
      refuse("parameters", "sets '" + key + "': set it through PostgresOptions::" + key);
    }
    if (!known.empty() && !known.contains(key)) {
      refuse("parameters", "holds '" + key + "', which is not a libpq connection keyword");
    }
    check_no_nul("parameters[\"" + key + "\"]", value);
  }
}

void check_fields(const PostgresOptions& where) {
  const std::pair<std::string_view, const std::string*> texts[] = {
      {"host", &where.host},      {"dbname", &where.dbname},
      {"user", &where.user},      {"password", &where.password},
      {"schema", &where.schema},  {"application_name", &where.application_name},
      {"sslmode", &where.sslmode}};
  for (const auto& [field, value] : texts) check_no_nul(field, *value);
  if (where.port && (*where.port < 1 || *where.port > 65535)) {
    refuse("port", "is " + std::to_string(*where.port) + ": a port is 1 to 65535");
  }
  if (where.connect_timeout.count() < 0) {
    refuse("connect_timeout", "is negative (" + std::to_string(where.connect_timeout.count()) +
                                  " s): 0 leaves libpq's default");
  }
  if (!where.sslmode.empty() && !one_of(where.sslmode, kSslModes)) {
    refuse("sslmode", "is '" + where.sslmode +
                          "': one of disable, allow, prefer, require, verify-ca, verify-full");
  }
  if (!where.schema.empty() && !is_schema_name(where.schema)) {
    refuse("schema", "'" + where.schema +
                         "' is not a name factum accepts: 1 to 63 characters of a-z, 0-9, _ "
                         "and $, starting with a letter or _, not with pg_");
  }
  check_parameters(where.parameters);
}

// `value` as PQconnectdb reads it back: bare, or in single quotes with ' and \ escaped.
std::string quoted(const std::string& value) {
  if (!value.empty() && value.find_first_of(" \t\n\r\f\v'\\") == std::string::npos) return value;
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

// Adds keyword = value to `t` (an empty value leaves libpq's default: nothing is added).
void add(PgTarget& t, const std::string& keyword, const std::string& value) {
  if (value.empty()) return;
  t.keywords.push_back(keyword);
  t.values.push_back(value);
  if (!t.shown.empty()) t.shown += ' ';
  const bool secret = keyword.find("password") != std::string::npos;
  t.shown += keyword + "=" + (secret ? std::string("***") : quoted(value));
}

// libpq's options (the server's command-line options for the session), ending with the
// schema's search_path, which thereby wins over one set in parameters["options"].
std::string session_options(const PostgresOptions& where) {
  const auto it = where.parameters.find("options");
  std::string out = it != where.parameters.end() ? it->second : std::string();
  if (where.schema.empty()) return out;
  return out + (out.empty() ? "" : " ") + "-c search_path=" + where.schema;
}

// The connect_timeout factum gives a connection whose place sets none: a server that accepts
// the connection and never answers fails it after this long, not never.
constexpr const char* kDefaultConnectTimeout = "10";

// Whether libpq's environment sets the connect timeout (which then applies).
bool environment_sets_connect_timeout() {
  const char* value = std::getenv("PGCONNECT_TIMEOUT");
  return value != nullptr && *value != '\0';
}

// Adds factum's default connect_timeout to `t` unless the environment sets one. Not shown: the
// place is named as it was given.
void add_default_connect_timeout(PgTarget& t) {
  if (environment_sets_connect_timeout()) return;
  t.keywords.emplace_back("connect_timeout");
  t.values.emplace_back(kDefaultConnectTimeout);
}

}  // namespace

PgTarget pg_target(const std::string& uri) {
  // The default first: libpq gives the parameters of an expanded dbname (the URI's own
  // connect_timeout) precedence over the keywords before it.
  PgTarget t;
  add_default_connect_timeout(t);
  t.keywords.emplace_back("dbname");
  t.values.push_back(uri);
  t.expand_dbname = true;
  t.shown = shown_location(uri);
  return t;
}

PgTarget pg_target(const PostgresOptions& where) {
  check_fields(where);
  PgTarget t;
  add(t, "host", where.host);
  if (where.port) add(t, "port", std::to_string(*where.port));
  add(t, "dbname", where.dbname);
  add(t, "user", where.user);
  add(t, "password", where.password);
  add(t, "application_name", where.application_name);
  if (where.connect_timeout.count() > 0) {
    add(t, "connect_timeout", std::to_string(where.connect_timeout.count()));
  } else {
    add_default_connect_timeout(t);
  }
  add(t, "sslmode", where.sslmode);
  for (const auto& [key, value] : where.parameters) {
    if (key != "options") add(t, key, value);
  }
  add(t, "options", session_options(where));
  if (t.shown.empty()) t.shown = "postgresql://";  // every field left to libpq's defaults
  return t;
}

}  // namespace factum::detail
