// tools/cmd_verify.cpp — `factum verify DB [--head HASH] [--anchors FILE --public-key PUB]`:
// walks the whole hash chain with EventStore::verify (constant memory, a progress bar when stderr
// is a terminal), checking the anchors of the file too (verify_anchored), and exits 0 when all is
// intact, 3 naming the first broken position or anchor and why when it is not.
#include <memory>
#include <optional>
#include <vector>

#include "cli.hpp"
#include "factum/eventstore/anchor.hpp"
#include "options.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

// Accepts a postgresql:// or postgres:// URI (a location on a server), or a kafka:// one.
CLI::Validator server_location_validator() {
  return CLI::Validator(
      [](const std::string& s) {
        return is_server_location(s) || is_kafka_location(s) ? std::string()
                                                             : std::string("not a server URI");
      },
      "URI");
}

struct VerifyCommandOptions {
  std::string db;
  std::string head;
  std::string anchors;
  std::string public_key;
  bool json = false;
};

Json result_json(const VerifyResult& r, const std::optional<Head>& head,
                 std::optional<std::size_t> anchored) {
  Json j = Json::object();
  j["ok"] = r.ok();
  j["events_checked"] = r.events_checked;
  if (anchored) j["anchors"] = *anchored;
  if (r.ok()) {
    j["head"] = {{"position", head->position}, {"hash", to_hex(head->hash)}};
  } else {
    j["problem"] = problem_name(r.problem);
    j["position"] = r.position;
    j["message"] = r.message;
  }
  return j;
}

// The rollbacks accepted in the log (accept_rollback): each loss the anchors let go.
void print_accepted(const std::vector<AcceptedRollback>& accepted) {
  for (const AcceptedRollback& a : accepted) {
    std::cout << "accepted rollback at position " << a.position << ": the log (then at position "
              << a.log.position << ") no longer held the anchor of position " << a.anchor_position
              << "; reason: " << one_line(a.reason) << '\n';
  }
}

int run_verify(const VerifyCommandOptions& o) {
  const EventStore store = open_read_only(o.db);
  VerifyOptions options;
  if (!o.head.empty()) options.expected_head = hash_from_hex(o.head);
  Progress bar("verify", max_position(store), "events");
  options.on_progress = [&bar](Position done) { bar.update(done); };
  std::optional<std::size_t> anchored;
  std::vector<AcceptedRollback> accepted;
  VerifyResult r;
  if (o.anchors.empty()) {
    r = store.verify(options);
  } else {
    const AnchorPublicKey key = AnchorPublicKey::from_pem_file(o.public_key);
    std::vector<Anchor> anchors;
    try {
      anchors = open_anchor_sink(o.anchors)->anchors();
    } catch (const AnchorError& e) {  // a line that is not an anchor: the anchors are damaged
      r.problem = VerifyResult::Problem::bad_anchor;
      r.message = e.what();
    }
    if (r.ok()) r = verify_anchored(store, anchors, key, options);
    anchored = anchors.size();
    accepted = accepted_rollbacks(store);
  }
  bar.finish();
  // The head is read after the walk: an append made meanwhile only moves it further.
  const std::optional<Head> head = r.ok() ? std::optional<Head>(store.head()) : std::nullopt;
  if (o.json) {
    Json j = result_json(r, head, anchored);
    if (anchored) {
      j["accepted_rollbacks"] = Json::array();
      for (const AcceptedRollback& a : accepted)
        j["accepted_rollbacks"].push_back(accepted_rollback_json(a));
    }
    print_json(j);
  } else if (r.ok()) {
    std::cout << "ok: " << r.events_checked << " events, the hash chain is intact; head "
              << head->position << " " << to_hex(head->hash)
              << (options.expected_head ? " (the expected head hash is in the chain)" : "");
    if (anchored) std::cout << "; " << *anchored << " anchors hold";
    std::cout << '\n';
    print_accepted(accepted);
  } else if (r.problem == VerifyResult::Problem::bad_anchor) {
    std::cout << "bad anchors (bad_anchor): " << one_line(r.message) << '\n';
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
  CLI::Option* anchors =
      cmd->add_option("--anchors", o->anchors,
                      "Also check the anchors of this file, of the table factum_anchors at "
                      "this postgresql:// URI, or of the topic at kafka://BROKERS/TOPIC (factum "
                      "anchor): their signatures, their chain, and that the log still holds "
                      "each anchored head")
          ->check(CLI::ExistingFile | server_location_validator());
  cmd->add_option("--public-key", o->public_key,
                  "The Ed25519 public key (PEM) that checks the anchors' signatures")
      ->needs(anchors);
  anchors->needs("--public-key");
  add_json_flag(*cmd, o->json);
  cmd->callback([&action, o] { action = [o] { return run_verify(*o); }; });
}

}  // namespace factum::cli
