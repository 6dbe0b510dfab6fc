// samples/common/own_store.cpp — refusing another program's store (see own_store.hpp).
#include "own_store.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "store_location.hpp"

namespace factum::samples {
namespace {

std::optional<std::string> first_text(Sql& sql, const std::string& query,
                                      std::span<const SqlValue> params) {
  std::optional<std::string> out;
  sql.query(query, params, [&](const SqlRow& row) {
    if (!out) out = row.text(0);
  });
  return out;
}

// The first category of a stream not in `own`, stepping from one distinct category to the
// next through the index streams_by_category (docs/storage-format.md).
std::optional<std::string> foreign_category(Sql& sql, const std::vector<std::string>& own) {
  std::optional<std::string> category =
      first_text(sql, "SELECT category FROM streams ORDER BY category LIMIT 1", {});
  while (category && std::find(own.begin(), own.end(), *category) != own.end()) {
    const SqlValue after[] = {*category};
    category = first_text(
        sql, "SELECT category FROM streams WHERE category > ?1 ORDER BY category LIMIT 1", after);
  }
  return category;
}

// The type of one event of `category`.
std::string type_in(Sql& sql, const std::string& category) {
  const SqlValue params[] = {category};
  return first_text(sql,
                    "SELECT e.type FROM streams s JOIN events e ON e.stream_key = s.stream_key"
                    " WHERE s.category = ?1 LIMIT 1",
                    params)
      .value_or("?");
}

// The first event type not in `own`: one query with a parameter per type.
std::optional<std::string> foreign_type(Sql& sql, const std::vector<std::string>& own) {
  std::string query = "SELECT type FROM events WHERE type NOT IN (";
  std::vector<SqlValue> params;
  for (const std::string& type : own) {
    query += (params.empty() ? "?" : ", ?") + std::to_string(params.size() + 1);
    params.emplace_back(type);
  }
  return first_text(sql, query + ") LIMIT 1", params);
}

std::string refusal(const EventStore& store, const StoreOwner& owner, const std::string& why) {
  return "'" + factum::shown_location(store.path().string()) + "' is not a " + owner.program +
         " store: it holds " + why + "; give " + owner.program + " a store of its own with --db";
}

}  // namespace

void require_own_store(const EventStore& store, const StoreOwner& owner) {
  std::string why;
  store.read_sql([&](Sql& sql) {
    // A new store (an empty file) holds nothing yet: its first write makes its tables.
    if (sql.object_type("streams") != "table") return;
    if (const auto category = foreign_category(sql, owner.categories)) {
      why = *category + " streams (events such as " + type_in(sql, *category) + ")";
    } else if (const auto type = foreign_type(sql, owner.types)) {
      why = "events of type " + *type;
    }
  });
  if (!why.empty()) throw std::runtime_error(refusal(store, owner, why));
}

}  // namespace factum::samples
