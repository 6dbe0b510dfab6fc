#include "projection_meta.hpp"

#include <chrono>

#include "factum/projections/checkpoint_store.hpp"

namespace factum::detail {
namespace {

std::int64_t now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

std::string physical(const std::string& logical, std::uint64_t generation) {
  return logical + "__g" + std::to_string(generation);
}

std::vector<std::string> tables_of(Sql& sql, const std::string& projection,
                                   std::uint64_t generation) {
  std::vector<std::string> out;
  sql.query(
      "SELECT logical FROM factum_projection_tables WHERE projection = ?1 AND generation = ?2 "
      "ORDER BY logical",
      {projection, static_cast<std::int64_t>(generation)},
      [&](const SqlRow& row) { out.push_back(row.text(0)); });
  return out;
}

// `name` quoted, as the engine names a view or a generation's table in its own SQL. The
// projection's SQL names them unquoted (ctx.table()): SQLite compares names without case,
// PostgreSQL folds unquoted names to lower case, so on PostgreSQL the quoted name is in lower
// case too, or a logical name with capitals would name no table the projection created.
std::string quoted(const Sql& sql, std::string name) {
  if (sql.dialect() == SqlDialect::postgres) {
    for (char& c : name) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return "\"" + name + "\"";
}

SqlValue text_or_null(const std::optional<std::string>& s) {
  return s ? SqlValue(*s) : SqlValue(nullptr);
}

}  // namespace

void create_meta_tables(Sql& sql) {
  CheckpointStore::create_table(sql);
  sql.execute(table_ddl(
      sql,
      "CREATE TABLE IF NOT EXISTS factum_projections ("
      "name TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, generation INTEGER NOT NULL, "
      "mode TEXT NOT NULL, state TEXT NOT NULL, rebuild_version INTEGER NOT NULL DEFAULT 0, "
      "rebuild_generation INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0, "
      "error_position INTEGER, error_type TEXT, error_message TEXT, "
      "updated_at INTEGER NOT NULL) WITHOUT ROWID"));
  sql.execute(
      table_ddl(sql,
                "CREATE TABLE IF NOT EXISTS factum_projection_tables ("
                "projection TEXT NOT NULL, generation INTEGER NOT NULL, logical TEXT NOT NULL, "
                "PRIMARY KEY (projection, generation, logical)) WITHOUT ROWID"));
}

bool meta_tables_exist(Sql& sql) { return sql.object_type("factum_projections") == "table"; }

namespace {

// Text written by this or an older release; anything else reads as stopped / async.
ProjectionState state_from(std::string_view text) {
  for (ProjectionState s :
       {ProjectionState::catching_up, ProjectionState::running, ProjectionState::rebuilding,
        ProjectionState::retrying, ProjectionState::stopped, ProjectionState::failed}) {
    if (text == to_string(s)) return s;
  }
  return ProjectionState::stopped;
}

ProjectionMode mode_from(std::string_view text) {
  return text == to_string(ProjectionMode::inline_append) ? ProjectionMode::inline_append
                                                          : ProjectionMode::async;
}

ProjectionRow read_row(const SqlRow& r) {
  ProjectionRow row;
  row.name = r.text(0);
  row.version = static_cast<std::uint32_t>(r.integer(1));
  row.generation = static_cast<std::uint64_t>(r.integer(2));
  row.mode = mode_from(r.text(3));
  row.state = state_from(r.text(4));
  row.rebuild_version = static_cast<std::uint32_t>(r.integer(5));
  row.rebuild_generation = static_cast<std::uint64_t>(r.integer(6));
  row.skipped = static_cast<std::uint64_t>(r.integer(7));
  if (!r.is_null(8)) {
    row.error = ProjectionFailure{static_cast<Position>(r.integer(8)),
                                  r.is_null(9) ? std::string() : r.text(9),
                                  r.is_null(10) ? std::string() : r.text(10)};
  }
  return row;
}

#define FACTUM_SELECT_ROWS                                                               \
  "SELECT name, version, generation, mode, state, rebuild_version, rebuild_generation, " \
  "skipped, error_position, error_type, error_message FROM factum_projections"
constexpr std::string_view kSelectRows = FACTUM_SELECT_ROWS;
constexpr std::string_view kSelectRow = FACTUM_SELECT_ROWS " WHERE name = ?1";
#undef FACTUM_SELECT_ROWS

}  // namespace

std::optional<ProjectionRow> load_row(Sql& sql, const std::string& name) {
  if (!meta_tables_exist(sql)) return std::nullopt;
  return load_own_row(sql, name);
}

std::optional<ProjectionRow> load_own_row(Sql& sql, const std::string& name) {
  std::optional<ProjectionRow> out;
  sql.query(kSelectRow, {name}, [&](const SqlRow& r) { out = read_row(r); });
  return out;
}

Position load_position(Sql& sql, const std::string& checkpoint) {
  const auto p =
      sql.query_integer("SELECT position FROM factum_checkpoints WHERE name = ?1", {checkpoint});
  return p ? static_cast<Position>(*p) : 0;
}

void save_position(Sql& sql, const std::string& checkpoint, Position position) {
  sql.execute(
      "INSERT INTO factum_checkpoints (name, position, updated_at) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (name) DO UPDATE SET position = excluded.position, "
      "updated_at = excluded.updated_at",
      {checkpoint, static_cast<std::int64_t>(position), now_us()});
}

std::vector<ProjectionRow> load_rows(Sql& sql) {
  std::vector<ProjectionRow> out;
  if (!meta_tables_exist(sql)) return out;
  sql.query(std::string(kSelectRows) + " ORDER BY name", {},
            [&](const SqlRow& r) { out.push_back(read_row(r)); });
  return out;
}

void save_row(Sql& sql, const ProjectionRow& row) {
  const std::optional<ProjectionFailure>& e = row.error;
  const std::vector<SqlValue> params{
      row.name,
      static_cast<std::int64_t>(row.version),
      static_cast<std::int64_t>(row.generation),
      std::string(to_string(row.mode)),
      std::string(to_string(row.state)),
      static_cast<std::int64_t>(row.rebuild_version),
      static_cast<std::int64_t>(row.rebuild_generation),
      static_cast<std::int64_t>(row.skipped),
      e ? SqlValue(static_cast<std::int64_t>(e->position)) : SqlValue(nullptr),
      text_or_null(e ? std::optional<std::string>(e->event_type) : std::nullopt),
      text_or_null(e ? std::optional<std::string>(e->message) : std::nullopt),
      now_us()};
  sql.execute(
      "INSERT INTO factum_projections (name, version, generation, mode, state, "
      "rebuild_version, rebuild_generation, skipped, error_position, error_type, error_message, "
      "updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) "
      "ON CONFLICT (name) DO UPDATE SET version = excluded.version, "
      "generation = excluded.generation, mode = excluded.mode, state = excluded.state, "
      "rebuild_version = excluded.rebuild_version, "
      "rebuild_generation = excluded.rebuild_generation, skipped = excluded.skipped, "
      "error_position = excluded.error_position, error_type = excluded.error_type, "
      "error_message = excluded.error_message, updated_at = excluded.updated_at",
      params);
}

void register_tables(Sql& sql, const std::string& projection, std::uint64_t generation,
                     const std::set<std::string>& tables) {
  for (const std::string& logical : tables) {
    sql.execute(
        "INSERT INTO factum_projection_tables (projection, generation, logical) "
        "VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
        {projection, static_cast<std::int64_t>(generation), logical});
  }
}

void serve_generation(Sql& sql, const std::string& projection, std::uint64_t generation,
                      std::uint64_t previous) {
  if (previous != 0) {
    for (const std::string& logical : tables_of(sql, projection, previous)) {
      sql.execute("DROP VIEW IF EXISTS " + quoted(sql, logical));
    }
  }
  for (const std::string& logical : tables_of(sql, projection, generation)) {
    sql.execute("DROP VIEW IF EXISTS " + quoted(sql, logical));
    sql.execute("CREATE VIEW " + quoted(sql, logical) + " AS SELECT * FROM " +
                quoted(sql, physical(logical, generation)));
  }
}

void drop_generation(Sql& sql, const std::string& projection, std::uint64_t generation) {
  for (const std::string& logical : tables_of(sql, projection, generation)) {
    sql.execute("DROP TABLE IF EXISTS " + quoted(sql, physical(logical, generation)));
  }
  sql.execute("DELETE FROM factum_projection_tables WHERE projection = ?1 AND generation = ?2",
              {projection, static_cast<std::int64_t>(generation)});
}

std::string_view to_string(ProjectionMode mode) noexcept {
  return mode == ProjectionMode::inline_append ? "inline" : "async";
}

std::string rebuild_checkpoint_name(const std::string& projection) {
  return projection + "#rebuild";
}

}  // namespace factum::detail
