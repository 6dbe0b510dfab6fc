// tools/cmd_anchor.cpp — `factum anchor DB --key KEY --to FILE [--accept-rollback REASON]`: signs
// the store's head with an Ed25519 key and appends the anchor to a file of anchors kept outside
// the store (anchor.hpp), by hand or from cron. Refuses a store that lost or rewrote what the
// file's last anchor signed, unless the loss is accepted: then the acceptance is first recorded
// as an event of the log (accept_rollback) and the new anchor covers it.
#include <memory>
#include <optional>

#include "cli.hpp"
#include "factum/eventstore/anchor.hpp"
#ifdef FACTUM_HAVE_KAFKA
#include "factum/kafka/anchor_sink.hpp"
#endif
#include "options.hpp"
#include "output.hpp"
#include "store_access.hpp"

namespace factum::cli {

bool is_kafka_location(const std::string& where) { return where.starts_with(kKafkaScheme); }

std::unique_ptr<AnchorSink> open_anchor_sink(const std::string& where) {
  if (is_server_location(where)) return std::make_unique<PostgresAnchorSink>(where);
  if (is_kafka_location(where)) {
    // kafka://HOST:PORT[,HOST:PORT...]/TOPIC
    const std::string rest = where.substr(std::string_view(kKafkaScheme).size());
    const std::size_t slash = rest.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size()) {
      throw CliError("'" + one_line(where) +
                     "' is not kafka://HOST:PORT[,HOST:PORT...]/TOPIC (the bootstrap servers, "
                     "then the anchors' topic)");
    }
#ifdef FACTUM_HAVE_KAFKA
    kafka::AnchorTopicOptions o;
    o.topic = rest.substr(slash + 1);
    o.kafka = {{"bootstrap.servers", rest.substr(0, slash)}};
    return std::make_unique<kafka::KafkaAnchorSink>(std::move(o));
#else
    throw CliError("this factum was built without the Kafka bridge (librdkafka-dev): '" +
                   one_line(where) + "' cannot be reached");
#endif
  }
  return std::make_unique<AnchorFile>(where);
}

Json accepted_rollback_json(const AcceptedRollback& r) {
  return {{"position", r.position},
          {"anchor_position", r.anchor_position},
          {"anchor", to_hex(r.anchor)},
          {"log_position", r.log.position},
          {"reason", r.reason}};
}

namespace {

struct AnchorCommandOptions {
  std::string db;
  std::string key;
  std::string to;
  std::string accept_rollback;
  bool json = false;
};

int run_anchor(const AnchorCommandOptions& o) {
  const AnchorSigningKey key = AnchorSigningKey::from_pem_file(o.key);
  const std::unique_ptr<AnchorSink> sink = open_anchor_sink(o.to);
  std::optional<AcceptedRollback> accepted;
  std::optional<EventStore> opened;
  if (o.accept_rollback.empty()) {
    opened.emplace(open_read_only(o.db));
  } else {
    opened.emplace(open_writable(o.db));
    accepted = accept_rollback(*opened, *sink, AnchorPublicKey::from_raw(key.public_key()),
                               o.accept_rollback);
  }
  const Anchor a = anchor_head(*opened, key, *sink);
  if (o.json) {
    Json j = Json::parse(a.to_json());
    if (accepted) j["accepted_rollback"] = accepted_rollback_json(*accepted);
    print_json(j);
  } else {
    if (accepted) {
      std::cout << "accepted the loss of the anchor of position " << accepted->anchor_position
                << " (event at position " << accepted->position << ")\n";
    }
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
                  "The anchor file (JSON lines; created when missing), a postgresql:// URI: "
                  "the table factum_anchors of that database, or kafka://BROKERS/TOPIC: a topic "
                  "of one partition")
      ->required();
  cmd->add_option("--accept-rollback", o->accept_rollback,
                  "When the store no longer holds the newest anchor (a restored backup), record "
                  "this reason for accepting the loss as an event of the log, then anchor")
      ->check(CLI::Validator(
          [](const std::string& s) {
            return s.empty() ? std::string("the reason must not be empty") : std::string();
          },
          "REASON"));
  add_json_flag(*cmd, o->json);
  cmd->callback([&action, o] { action = [o] { return run_anchor(*o); }; });
}

}  // namespace factum::cli
