#include "factum/projections/projection.hpp"

#include "factum/eventstore/errors.hpp"
#include "factum/projections/projection_engine.hpp"

namespace factum {
namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > 100) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s.front())) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return s.find("__g") == std::string_view::npos;
}

}  // namespace

std::string IdempotencyKey::to_string() const {
  return std::to_string(position) + ":" + id.to_string();
}

ProjectionContext::ProjectionContext(Sql* sql, std::string projection, std::uint64_t generation)
    : sql_(sql), projection_(std::move(projection)), generation_(generation) {}

Sql& ProjectionContext::sql() {
  if (sql_ == nullptr) {
    throw InvalidArgument("factum: projection '" + projection_ +
                          "' has an external target: it has no SQL transaction");
  }
  return *sql_;
}

std::string ProjectionContext::table(std::string_view logical) {
  if (!is_identifier(logical)) {
    throw InvalidArgument("factum: projection '" + projection_ + "': table name '" +
                          std::string(logical) +
                          "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, without '__g')");
  }
  if (tables_.emplace(logical).second && creating_ && sql_ != nullptr) check_free(logical);
  return std::string(logical) + "__g" + std::to_string(generation_);
}

// A logical name is the name of a view every reader of the file sees: it must not be taken by
// another projection (whose view this one's swap would replace, and whose tables its cleanup
// would drop) or by anything else in the file. SQLite compares names without case.
void ProjectionContext::check_free(std::string_view logical) {
  const std::string name(logical);
  std::string owner;
  sql_->query(
      "SELECT projection FROM factum_projection_tables WHERE lower(logical) = lower(?1) AND "
      "projection <> ?2 LIMIT 1",
      {name, projection_}, [&](const SqlRow& row) { owner = row.text(0); });
  if (!owner.empty()) {
    throw InvalidArgument("factum: projection '" + projection_ + "': table name '" + name +
                          "' is taken by projection '" + owner +
                          "' in this file; give this projection's table another name");
  }
  const bool ours =
      sql_->query_integer(
              "SELECT 1 FROM factum_projection_tables WHERE lower(logical) = lower(?1) LIMIT 1",
              {name})
          .has_value();
  // Triggers have names of their own; tables, indexes and views share one namespace. The
  // projection's own view is expected (a rebuild); anything else by that name is not.
  const std::string type = sql_->object_type(name);
  if (!type.empty() && !(ours && type == "view")) {
    throw InvalidArgument("factum: projection '" + projection_ + "': table name '" + name +
                          "' is already the name of a " + type +
                          " in the store's file; give this projection's table another name");
  }
}

std::string_view to_string(ProjectionState state) noexcept {
  switch (state) {
    case ProjectionState::catching_up:
      return "catching_up";
    case ProjectionState::running:
      return "running";
    case ProjectionState::rebuilding:
      return "rebuilding";
    case ProjectionState::retrying:
      return "retrying";
    case ProjectionState::stopped:
      return "stopped";
    case ProjectionState::failed:
      return "failed";
  }
  return "unknown";
}

void Projection::forget(std::string_view, ProjectionContext&) {}

}  // namespace factum
