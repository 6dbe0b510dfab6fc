// tools/cmd_verify.cpp — `factum verify DB [--head HASH]`: walks the whole hash chain with
// EventStore::verify (constant memory, a progress bar when stderr is a terminal) and exits 0
// when it is intact, 3 naming the first broken position and why when it is not.
#include <memory>

#include "cli.hpp"
#include "options.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

struct VerifyCommandOptions {
  std::string db;
  std::string head;
  bool json = false;
};

std::string_view problem_name(VerifyResult::Problem p) {
  switch (p) {
    case VerifyResult::Problem::none:
      return "none";
    case VerifyResult::Problem::hash_mismatch:
      return "hash_mismatch";
    case VerifyResult::Problem::position_gap:
      return "position_gap";
    case VerifyResult::Problem::malformed_row:
      return "malformed_row";
    case VerifyResult::Problem::truncated:
      return "truncated";
    case VerifyResult::Problem::head_mismatch:
      return "head_mismatch";
    case VerifyResult::Problem::unchained_row:
      return "unchained_row";
  }
  return "unknown";
}

Json result_json(const VerifyResult& r, const std::optional<Head>& head) {
  Json j = Json::object();
  j["ok"] = r.ok();
  j["events_checked"] = r.events_checked;
  if (r.ok()) {
    j["head"] = {{"position", head->position}, {"hash", to_hex(head->hash)}};
  } else {
    j["problem"] = problem_name(r.problem);
    j["position"] = r.position;
    j["message"] = r.message;
  }
  return j;
}

int run_verify(const VerifyCommandOptions& o) {
  const EventStore store = open_read_only(o.db);
  VerifyOptions options;
  if (!o.head.empty()) options.expected_head = hash_from_hex(o.head);
  Progress bar("verify", max_position(store), "events");
  options.on_progress = [&bar](Position done) { bar.update(done); };
  const VerifyResult r = store.verify(options);
  bar.finish();
  // The head is read after the walk: an append made meanwhile only moves it further.
  const std::optional<Head> head = r.ok() ? std::optional<Head>(store.head()) : std::nullopt;
  if (o.json) {
    print_json(result_json(r, head));
  } else if (r.ok()) {
    std::cout << "ok: " << r.events_checked << " events, the hash chain is intact; head "
              << head->position << " " << to_hex(head->hash)
              << (options.expected_head ? " (the expected head hash is in the chain)" : "") << '\n';
  } else {
    std::cout << "damaged at position " << r.position << " (" << problem_name(r.problem)
              << "): " << one_line(r.message) << " (" << r.events_checked << " events checked)\n";
  }
  return r.ok() ? kOk : kDamaged;
}

}  // namespace

void add_verify_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<VerifyCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check the hash chain of the whole log; exit 3 naming the first broken position");
  add_db_argument(*cmd, o->db);
  cmd->add_option("--head", o->head,
                  "Also fail unless this hash (saved from an earlier head) is in the chain: "
                  "catches a log whose newest events were cut off")
      ->check(hash_validator());
  add_json_flag(*cmd, o->json);
  cmd->callback([&action, o] { action = [o] { return run_verify(*o); }; });
}

}  // namespace factum::cli
