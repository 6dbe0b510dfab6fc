// What the file records about projections: one row per projection in factum_projections, the
// tables of each generation in factum_projection_tables, and the views that serve the current
// generation under the tables' logical names. Every function runs inside the caller's
// transaction.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "factum/eventstore/sql.hpp"
#include "factum/projections/projection_engine.hpp"

namespace factum::detail {

struct ProjectionRow {
  std::string name;
  std::uint32_t version = 0;
  std::uint64_t generation = 0;
  ProjectionMode mode = ProjectionMode::async;
  ProjectionState state = ProjectionState::stopped;
  std::uint32_t rebuild_version = 0;     // 0: no rebuild in progress
  std::uint64_t rebuild_generation = 0;  // the generation being built
  std::uint64_t skipped = 0;
  std::optional<ProjectionFailure> error;

  friend bool operator==(const ProjectionRow&, const ProjectionRow&) = default;
};

// What the engine keeps of a ProjectionContext (its public header shows the user's part only).
class ProjectionContextAccess {
 public:
  static void set_key(ProjectionContext& ctx, const IdempotencyKey& key) { ctx.key_ = key; }
  // The context of a reset(): table() checks that each name is free in the file.
  static void set_creating(ProjectionContext& ctx) noexcept { ctx.creating_ = true; }
  // The tables reset() named through table().
  static const std::set<std::string>& tables(const ProjectionContext& ctx) noexcept {
    return ctx.tables_;
  }
};

void create_meta_tables(Sql& sql);
bool meta_tables_exist(Sql& sql);
// The projection's row; nullopt when the file has none (or no factum_projections table).
std::optional<ProjectionRow> load_row(Sql& sql, const std::string& name);
// For a runner, whose engine created the tables when it was constructed (create_meta_tables
// commits before any runner exists, and nothing drops them): the same reads and writes without
// looking the tables up in sqlite_master first or creating them, through constant SQL text
// (prepared once per connection by the Sql handle's cache). These run inside every inline
// append.
std::optional<ProjectionRow> load_own_row(Sql& sql, const std::string& name);
Position load_position(Sql& sql, const std::string& checkpoint);
void save_position(Sql& sql, const std::string& checkpoint, Position position);
std::vector<ProjectionRow> load_rows(Sql& sql);
void save_row(Sql& sql, const ProjectionRow& row);

// Records the tables a generation's reset() named.
void register_tables(Sql& sql, const std::string& projection, std::uint64_t generation,
                     const std::set<std::string>& tables);
// Points each logical name of `generation` at its physical table (CREATE VIEW), dropping the
// views of names the generation no longer has.
void serve_generation(Sql& sql, const std::string& projection, std::uint64_t generation,
                      std::uint64_t previous);
// Drops the physical tables of `generation` and forgets them.
void drop_generation(Sql& sql, const std::string& projection, std::uint64_t generation);

// "inline" or "async", as the file stores a mode.
std::string_view to_string(ProjectionMode mode) noexcept;

// The checkpoint name of a projection's rebuild.
std::string rebuild_checkpoint_name(const std::string& projection);

}  // namespace factum::detail
