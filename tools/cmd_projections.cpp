// tools/cmd_projections.cpp — `factum projections DB`: every projection recorded in the file
// (ProjectionEngine::recorded: version, generation, mode, state, checkpoint, lag, last error)
// and the other checkpoints (subscriptions), without the projections' code; and
// `factum checkpoint reset DB NAME [--to P]` for operators, the one command besides import that
// writes (a checkpoint row, never an event).
#include <iostream>
#include <memory>
#include <set>

#include "cli.hpp"
#include "factum/projections/checkpoint_store.hpp"
#include "factum/projections/projection_engine.hpp"
#include "options.hpp"
#include "output.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

constexpr const char* kRebuildSuffix = "#rebuild";

struct ProjectionsOptions {
  std::string db;
  bool json = false;
};

std::string mode_name(ProjectionMode m) {
  return m == ProjectionMode::inline_append ? "inline" : "async";
}

std::string error_text(const std::optional<ProjectionFailure>& e) {
  if (!e) return "-";
  return "position " + std::to_string(e->position) + " " + printable(e->event_type) + ": " +
         printable(e->message);
}

Json status_json(const ProjectionStatus& s) {
  Json j = Json::object();
  j["name"] = json_text(s.name);
  j["version"] = s.version;
  j["generation"] = s.generation;
  j["mode"] = mode_name(s.mode);
  j["state"] = std::string(to_string(s.state));
  j["checkpoint"] = s.checkpoint;
  j["lag"] = s.lag;
  j["rebuild_checkpoint"] = s.rebuild_checkpoint;
  j["skipped"] = s.skipped;
  j["error"] = s.error ? Json{{"position", s.error->position},
                              {"type", json_text(s.error->event_type)},
                              {"message", json_text(s.error->message)}}
                       : Json(nullptr);
  return j;
}

// The checkpoints that are not a projection's own (nor its rebuild's): subscriptions'.
std::vector<Checkpoint> other_checkpoints(const std::vector<Checkpoint>& all,
                                          const std::vector<ProjectionStatus>& projections) {
  std::set<std::string> own;
  for (const ProjectionStatus& p : projections) {
    own.insert(p.name);
    own.insert(p.name + kRebuildSuffix);
  }
  std::vector<Checkpoint> out;
  for (const Checkpoint& c : all) {
    if (!own.count(c.name)) out.push_back(c);
  }
  return out;
}

void print_projections(const std::vector<ProjectionStatus>& projections) {
  Table t({{"PROJECTION"},
           {"VERSION", Align::right},
           {"GENERATION", Align::right},
           {"MODE"},
           {"STATE"},
           {"CHECKPOINT", Align::right},
           {"LAG", Align::right},
           {"SKIPPED", Align::right},
           {"LAST ERROR"}});
  for (const ProjectionStatus& s : projections) {
    std::string state(to_string(s.state));
    if (s.state == ProjectionState::rebuilding) {
      state += " (" + std::to_string(s.rebuild_checkpoint) + "/" + std::to_string(s.head) + ")";
    }
    t.add({printable(s.name), std::to_string(s.version), std::to_string(s.generation),
           mode_name(s.mode), state, std::to_string(s.checkpoint), std::to_string(s.lag),
           std::to_string(s.skipped), error_text(s.error)});
  }
}

void print_checkpoints(const std::vector<Checkpoint>& checkpoints, Position head) {
  Table t({{"CHECKPOINT"}, {"POSITION", Align::right}, {"LAG", Align::right}, {"UPDATED AT"}});
  for (const Checkpoint& c : checkpoints) {
    t.add({printable(c.name), std::to_string(c.position),
           std::to_string(head - std::min(head, c.position)), format_time(c.updated_at)});
  }
}

int run_projections(const ProjectionsOptions& o) {
  EventStore store = open_read_only(o.db);
  const std::vector<ProjectionStatus> projections = ProjectionEngine::recorded(store);
  const std::vector<Checkpoint> others =
      other_checkpoints(CheckpointStore(store).list(), projections);
  const Position head = store.head_position();
  if (o.json) {
    Json p = Json::array();
    for (const ProjectionStatus& s : projections) p.push_back(status_json(s));
    Json c = Json::array();
    for (const Checkpoint& cp : others) {
      c.push_back({{"name", json_text(cp.name)},
                   {"position", cp.position},
                   {"lag", head - std::min(head, cp.position)},
                   {"updated_at", format_time(cp.updated_at)}});
    }
    print_json({{"head", head}, {"projections", std::move(p)}, {"checkpoints", std::move(c)}});
    return kOk;
  }
  if (projections.empty() && others.empty()) {
    std::cout << "no projections or checkpoints recorded in '" << printable(shown_location(o.db))
              << "' (head " << head << ")\n";
    return kOk;
  }
  if (!projections.empty()) print_projections(projections);
  if (!projections.empty() && !others.empty()) std::cout << '\n';
  if (!others.empty()) print_checkpoints(others, head);
  return kOk;
}

// --- checkpoint reset
// ------------------------------------------------------------------------------

struct ResetOptions {
  std::string db;
  std::string name;
  Position to = 0;
  bool forward = false;
  bool force = false;
  bool json = false;
};

bool is_projection_checkpoint(const EventStore& store, const std::string& name) {
  for (const ProjectionStatus& s : ProjectionEngine::recorded(store)) {
    if (name == s.name || name == s.name + kRebuildSuffix) return true;
  }
  return false;
}

int run_reset(const ResetOptions& o) {
  EventStore store = open_writable(o.db);
  CheckpointStore checkpoints(store);
  std::optional<Position> from;
  for (const Checkpoint& c : checkpoints.list()) {
    if (c.name == o.name) from = c.position;
  }
  if (!from) {
    throw CliError("no checkpoint named '" + printable(o.name) + "' in '" + shown_location(o.db) +
                   "' (factum projections lists them)");
  }
  const Position head = store.head_position();
  if (o.to > head) {
    throw CliError("--to " + std::to_string(o.to) + " is past the head of the log (" +
                   std::to_string(head) + ")");
  }
  if (o.to > *from && !o.forward) {
    throw CliError(
        "--to " + std::to_string(o.to) + " is ahead of checkpoint '" + printable(o.name) +
        "' (at " + std::to_string(*from) + "): moving it forward makes its consumer skip events " +
        std::to_string(*from + 1) + " to " + std::to_string(o.to) + "; pass --forward to do that");
  }
  if (!o.force && is_projection_checkpoint(store, o.name)) {
    throw CliError("'" + printable(o.name) +
                   "' is a projection's checkpoint: moving it without its read model would apply "
                   "events twice or skip them; rebuild the projection instead (or pass --force "
                   "for a projection whose target is idempotent)");
  }
  checkpoints.save(o.name, o.to);
  if (o.json) {
    print_json({{"name", json_text(o.name)}, {"from", *from}, {"to", o.to}});
  } else {
    std::cout << "checkpoint '" << printable(o.name) << "' reset from " << *from << " to " << o.to
              << " (stop its consumer first: a running one saves its own position)\n";
  }
  return kOk;
}

}  // namespace

void add_projection_commands(CLI::App& app, Action& action) {
  auto list = std::make_shared<ProjectionsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "projections",
      "Show every projection and checkpoint recorded in the store: state, lag, errors");
  add_db_argument(*cmd, list->db);
  add_json_flag(*cmd, list->json);
  cmd->callback([&action, list] { action = [list] { return run_projections(*list); }; });

  CLI::App* group = app.add_subcommand("checkpoint", "Operate on checkpoints");
  group->require_subcommand(1);
  auto reset = std::make_shared<ResetOptions>();
  cmd = group->add_subcommand(
      "reset",
      "Move a checkpoint back (to 0 by default): its consumer replays from there; moving it "
      "forward, which skips events, needs --forward");
  add_db_argument(*cmd, reset->db);
  cmd->add_option("NAME", reset->name, "The checkpoint's name")->required();
  cmd->add_option("--to", reset->to, "The position to reset to (default 0: the beginning)")
      ->transform(whole_number(0));
  cmd->add_flag("--forward", reset->forward,
                "Allow moving the checkpoint forward: its consumer then skips the events between");
  cmd->add_flag("--force", reset->force, "Also reset a projection's own checkpoint");
  add_json_flag(*cmd, reset->json);
  cmd->callback([&action, reset] { action = [reset] { return run_reset(*reset); }; });
}

}  // namespace factum::cli
