// tools/cmd_anchor.cpp — `factum anchor DB --key KEY --to FILE`: signs the store's head with an
// Ed25519 key and appends the anchor to a file of anchors kept outside the store (anchor.hpp),
// by hand or from cron. Refuses a store that lost or rewrote what the file's last anchor signed.
#include <memory>

#include "cli.hpp"
#include "factum/eventstore/anchor.hpp"
#include "options.hpp"
#include "output.hpp"
#include "store_access.hpp"

namespace factum::cli {

std::unique_ptr<AnchorSink> open_anchor_sink(const std::string& where) {
  if (is_server_location(where)) return std::make_unique<PostgresAnchorSink>(where);
  return std::make_unique<AnchorFile>(where);
}

namespace {

struct AnchorCommandOptions {
  std::string db;
  std::string key;
  std::string to;
  bool json = false;
};

int run_anchor(const AnchorCommandOptions& o) {
  const AnchorSigningKey key = AnchorSigningKey::from_pem_file(o.key);
  const EventStore store = open_read_only(o.db);
  const std::unique_ptr<AnchorSink> sink = open_anchor_sink(o.to);
  const Anchor a = anchor_head(store, key, *sink);
  if (o.json) {
    print_json(Json::parse(a.to_json()));
  } else {
    std::cout << "anchored position " << a.position << " head " << to_hex(a.head) << " to "
              << one_line(shown_location(o.to)) << '\n';
  }
  return kOk;
}

}  // namespace

void add_anchor_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<AnchorCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "anchor", "Sign the store's head with an Ed25519 key and append it to a file of anchors");
  add_db_argument(*cmd, o->db);
  cmd->add_option("--key", o->key,
                  "The Ed25519 private key (PEM, from: openssl genpkey -algorithm ed25519)")
      ->required();
  cmd->add_option("--to", o->to,
                  "The anchor file (JSON lines; created when missing), or a postgresql:// URI: "
                  "the table factum_anchors of that database")
      ->required();
  add_json_flag(*cmd, o->json);
  cmd->callback([&action, o] { action = [o] { return run_anchor(*o); }; });
}

}  // namespace factum::cli
