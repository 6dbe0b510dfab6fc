// tools/cmd_kafka.cpp — `factum relay DB` and `factum ingest DB`: the Kafka bridge
// (docs/kafka.md) from a shell. relay publishes the log (or one category) to a topic from its
// durable checkpoint; ingest appends a topic's records to streams, with its offsets stored in
// the same transactions. Both follow until SIGINT/SIGTERM (then exit 0), or with --once do what
// is there when they start and exit. Progress goes to stderr (one line at most every second);
// the final status to stdout, as a line of text or one JSON document. Built only when
// factum_kafka is (librdkafka found).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "factum/kafka/ingest.hpp"
#include "factum/kafka/relay.hpp"
#include "options.hpp"
#include "output.hpp"
#include "run_command.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kIdleWait = std::chrono::milliseconds(200);
constexpr auto kProgressEvery = std::chrono::seconds(1);
constexpr auto kWatchEvery = std::chrono::milliseconds(50);
constexpr double kMaxTimeout = 3600;

// Turns SIGINT/SIGTERM into a stop request, from a thread of its own: the signal handler only
// sets the flag of interrupted_by_signal() (std::stop_source::request_stop is not
// async-signal-safe).
class SignalStop {
 public:
  SignalStop()
      : watcher_([this](const std::stop_token& self) {
          while (!self.stop_requested()) {
            if (interrupted_by_signal()) {
              source_.request_stop();
              return;
            }
            std::this_thread::sleep_for(kWatchEvery);
          }
        }) {}
  std::stop_token token() const { return source_.get_token(); }

 private:
  std::stop_source source_;
  std::jthread watcher_;  // declared last: stopped and joined first
};

// --timeout in milliseconds (at least 1).
std::chrono::milliseconds timeout_of(double seconds) {
  return std::chrono::milliseconds(std::max(1L, static_cast<long>(seconds * 1000)));
}

// Sleeps `d`, waking early on SIGINT/SIGTERM.
void idle(Clock::duration d) {
  const auto until = Clock::now() + d;
  while (!interrupted_by_signal() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Lets through one progress line a second (the first at once).
class Throttle {
 public:
  bool due() {
    const auto now = Clock::now();
    if (last_ && now - *last_ < kProgressEvery) return false;
    last_ = now;
    return true;
  }

 private:
  std::optional<Clock::time_point> last_;
};

// What both commands take.
struct BridgeOptions {
  std::string db;
  std::string brokers;
  std::string topic;
  std::string name;
  std::vector<std::string> properties;  // NAME=VALUE, librdkafka's
  double timeout = 30;
  bool once = false;
  bool json = false;
};

// The librdkafka properties: bootstrap.servers, log_level 2 (librdkafka's own connection
// messages would break the one-line error rule; -X log_level=6 brings them back), then
// --property NAME=VALUE in order.
std::map<std::string, std::string> kafka_properties(const BridgeOptions& o) {
  std::map<std::string, std::string> out{{"bootstrap.servers", o.brokers}, {"log_level", "2"}};
  for (const std::string& p : o.properties) {
    const auto eq = p.find('=');
    out[p.substr(0, eq)] = p.substr(eq + 1);
  }
  return out;
}

const CLI::Validator& property_validator() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        const auto eq = text.find('=');
        if (eq == std::string::npos || eq == 0) return "'" + text + "' is not NAME=VALUE";
        return {};
      },
      "NAME=VALUE");
  return v;
}

void add_bridge_options(CLI::App& cmd, BridgeOptions& o, const std::string& topic_help) {
  add_db_argument(cmd, o.db);
  cmd.add_option("--brokers", o.brokers, "Kafka bootstrap servers, HOST:PORT[,HOST:PORT...]")
      ->required();
  cmd.add_option("--topic", o.topic, topic_help)->required();
  cmd.add_option("--name", o.name, "Names the checkpoint or the stored offsets (required)")
      ->required();
  cmd.add_option("-X,--property", o.properties,
                 "A librdkafka property, NAME=VALUE (security.protocol=SASL_SSL, ...); repeatable")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(property_validator())
      ->type_name("NAME=VALUE");
  cmd.add_flag("--once", o.once, "Do what is there when the command starts, then exit");
  cmd.add_option("--timeout", o.timeout,
                 "Seconds to wait for the broker before a batch fails (default 30)")
      ->check(seconds(kMaxTimeout, "3600"));
  add_json_flag(cmd, o.json);
}

// --- relay ------------------------------------------------------------------------------------

struct RelayCommand : BridgeOptions {
  std::string category;
  std::size_t max_in_flight = 20000;
  std::string transactional_id;  // "": no transactions
};

void print_relay_progress(const RelayCommand& o, const kafka::RelayStatus& s) {
  std::cerr << "relay '" << printable(o.name) << "': published " << s.published << ", checkpoint "
            << s.checkpoint << ", lag " << s.lag << std::endl;
}

// Until `done`: asks the worker to stop on SIGINT/SIGTERM, prints progress when something was
// published (at most once a second) and, without --once, each new failure of a batch (run
// retries it; with --once the failure ends the command and is reported then).
void watch_relay(const RelayCommand& o, const kafka::Relay& relay, std::jthread& worker,
                 const std::atomic<bool>& done) {
  Throttle throttle;
  std::uint64_t shown = 0;
  std::string error;
  while (!done.load()) {
    std::this_thread::sleep_for(kWatchEvery);
    if (interrupted_by_signal()) worker.request_stop();
    const kafka::RelayStatus s = relay.status();
    if (s.published != shown && throttle.due()) {
      shown = s.published;
      print_relay_progress(o, s);
    }
    if (!o.once && s.last_error != error && !s.last_error.empty()) print_error(s.last_error);
    error = s.last_error;
  }
  // The last line shows where it ended, even when the throttle held it back.
  const kafka::RelayStatus s = relay.status();
  if (s.published != shown) print_relay_progress(o, s);
}

void print_relay_status(const RelayCommand& o, const kafka::RelayStatus& s) {
  if (o.json) {
    print_json({{"name", json_text(o.name)},
                {"topic", json_text(o.topic)},
                {"category", o.category.empty() ? Json(nullptr) : json_text(o.category)},
                {"published", s.published},
                {"checkpoint", s.checkpoint},
                {"head", s.head},
                {"lag", s.lag}});
    return;
  }
  std::cout << "relay '" << printable(o.name) << "' published " << s.published
            << " events to topic '" << printable(o.topic) << "'; checkpoint " << s.checkpoint
            << ", head " << s.head << ", lag " << s.lag << '\n';
}

// Publishes on a worker thread (publish_available with --once, run otherwise) while this
// thread turns SIGINT/SIGTERM into a stop request and prints progress and failed batches.
int run_relay(const RelayCommand& o) {
  EventStore store = open_writable(o.db);
  kafka::RelayOptions options;
  options.name = o.name;
  options.topic = o.topic;
  options.category = o.category;
  options.transactional_id = o.transactional_id;
  options.delivery_timeout = timeout_of(o.timeout);
  options.max_in_flight = o.max_in_flight;
  options.transaction_timeout = options.delivery_timeout;
  options.kafka = kafka_properties(o);
  // The broker aborts a transaction open longer than transaction.timeout.ms (default 60 s): it
  // must outlast a batch's wait for its reports.
  if (!o.transactional_id.empty()) {
    options.kafka.try_emplace(
        "transaction.timeout.ms",
        std::to_string(std::max<long>(options.delivery_timeout.count(), 60000L)));
  }
  kafka::Relay relay(store, options);
  install_interrupt_handlers();
  std::exception_ptr failure;
  std::atomic<bool> done{false};
  // Its destructor asks it to stop and joins it, should this thread throw meanwhile.
  std::jthread worker([&](std::stop_token stop) {
    try {
      if (o.once) {
        relay.publish_available(stop);
      } else {
        relay.run(stop);
      }
    } catch (...) {
      failure = std::current_exception();
    }
    done.store(true);
  });
  watch_relay(o, relay, worker, done);
  worker.join();
  if (failure) std::rethrow_exception(failure);
  print_relay_status(o, relay.status());
  return o.once && interrupted_by_signal() ? kInterrupted : kOk;
}

// --- ingest -----------------------------------------------------------------------------------

struct IngestCommand : BridgeOptions {
  std::string prefix;
  bool group = false;         // --group: IngestOptions::consumer_group
  std::uint64_t records = 0;  // handled by this run
  std::uint64_t shown = 0;    // records when the last progress line was printed
  std::string last_error;     // the failure printed last (each new one is printed once)
};

using Offsets = std::map<std::int32_t, std::int64_t>;

// Records between the stored offsets and `ends` (a partition without a stored offset counts
// from 0).
std::uint64_t lag_of(const Offsets& stored, const Offsets& ends) {
  std::uint64_t lag = 0;
  for (const auto& [partition, end] : ends) {
    const auto it = stored.find(partition);
    const std::int64_t at = it == stored.end() ? 0 : it->second;
    lag += static_cast<std::uint64_t>(std::max<std::int64_t>(0, end - at));
  }
  return lag;
}

void print_ingest_progress(const IngestCommand& o, std::uint64_t lag) {
  std::cerr << "ingest '" << printable(o.name) << "': appended " << o.records << ", lag " << lag
            << std::endl;
}

void print_ingest_status(const IngestCommand& o, const Offsets& stored, std::uint64_t lag) {
  if (o.json) {
    Json offsets = Json::object();
    for (const auto& [partition, next] : stored) offsets[std::to_string(partition)] = next;
    print_json({{"name", json_text(o.name)},
                {"topic", json_text(o.topic)},
                {"records", o.records},
                {"offsets", std::move(offsets)},
                {"lag", lag}});
    return;
  }
  std::cout << "ingest '" << printable(o.name) << "' handled " << o.records << " records of topic '"
            << printable(o.topic) << "'; lag " << lag << '\n';
}

// One poll; without --once a failure is printed (when it differs from the one before) and the
// poll tried again after a pause.
std::size_t ingest_batch(IngestCommand& o, kafka::Ingest& ingest) {
  try {
    const std::size_t n = ingest.poll_once();
    o.last_error.clear();
    return n;
  } catch (const Error& e) {
    if (o.once) throw;
    if (o.last_error != e.what()) print_error(e.what());
    o.last_error = e.what();
    idle(kIdleWait);
    return 0;
  }
}

kafka::IngestOptions ingest_options(const IngestCommand& o) {
  kafka::IngestOptions options;
  options.name = o.name;
  options.topic = o.topic;
  options.kafka = kafka_properties(o);
  options.consumer_group = o.group;
  options.broker_timeout = timeout_of(o.timeout);
  const std::string prefix = o.prefix.empty() ? o.topic + "-" : o.prefix;
  options.stream_for_key = [prefix](std::string_view key) { return prefix + std::string(key); };
  return options;
}

// Calls `wait` (a wait for the cluster that ends early on `stop`); false when SIGINT/SIGTERM
// ended it, its KafkaError rethrown otherwise.
template <class F>
bool unless_stopped(F&& wait) {
  try {
    wait();
    return true;
  } catch (const kafka::KafkaError&) {
    if (interrupted_by_signal()) return false;
    throw;
  }
}

// What the lag is measured against: the ends read at the start with --once, else the ends the
// consumer last heard of (never a wait for a broker that may be gone).
Offsets ends_for_lag(const IngestCommand& o, const kafka::Ingest& ingest, const Offsets& ends) {
  return o.once ? ends : ingest.known_end_offsets();
}

// Polls until SIGINT/SIGTERM or, with --once, until the stored offsets reach `ends`; with --once,
// --timeout without a record while behind is an error.
void ingest_until_done(IngestCommand& o, kafka::Ingest& ingest, const Offsets& ends) {
  const auto timeout = timeout_of(o.timeout);
  auto last_record = Clock::now();
  Throttle throttle;
  while (!interrupted_by_signal()) {
    if (o.once && lag_of(ingest.offsets(), ends) == 0) break;
    const std::size_t n = ingest_batch(o, ingest);
    o.records += n;
    if (n > 0) last_record = Clock::now();
    if (n > 0 && throttle.due()) {
      o.shown = o.records;
      print_ingest_progress(o, lag_of(ingest.offsets(), ends_for_lag(o, ingest, ends)));
    }
    if (o.once && n == 0 && Clock::now() - last_record > timeout) {
      throw CliError("ingest '" + printable(o.name) + "': no record came from topic '" +
                     printable(o.topic) + "' for " + std::to_string(static_cast<long>(o.timeout)) +
                     " s, " + std::to_string(lag_of(ingest.offsets(), ends)) + " records behind");
    }
  }
}

// Every wait for the cluster (the start, the partitions' ends with --once) ends within --timeout
// in all and early on SIGINT/SIGTERM, which then ends the command: exit 0, or 130 with --once,
// and no status (nothing was read).
int run_ingest(IngestCommand& o) {
  EventStore store = open_writable(o.db);
  install_interrupt_handlers();
  const SignalStop stop;
  const auto started = Clock::now();
  const auto left = [&] {
    const auto spent =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    return std::max(std::chrono::milliseconds(1), timeout_of(o.timeout) - spent);
  };
  const int stopped = o.once ? kInterrupted : kOk;
  std::optional<kafka::Ingest> ingest;
  if (!unless_stopped([&] { ingest.emplace(store, ingest_options(o), stop.token()); }))
    return stopped;
  Offsets ends;
  if (o.once && !unless_stopped([&] { ends = ingest->end_offsets(left(), stop.token()); })) {
    return stopped;
  }
  ingest_until_done(o, *ingest, ends);
  const Offsets stored = ingest->offsets();
  const std::uint64_t lag = lag_of(stored, ends_for_lag(o, *ingest, ends));
  // The last progress line shows where it ended, even when the throttle held it back.
  if (o.records != o.shown) print_ingest_progress(o, lag);
  print_ingest_status(o, stored, lag);
  return o.once && interrupted_by_signal() ? kInterrupted : kOk;
}

}  // namespace

void add_kafka_commands(CLI::App& app, Action& action) {
  auto relay = std::make_shared<RelayCommand>();
  CLI::App* cmd = app.add_subcommand(
      "relay",
      "Publish the log (or one category) to a Kafka topic from a durable checkpoint "
      "(docs/kafka.md)");
  add_bridge_options(*cmd, *relay, "The topic to publish to");
  cmd->add_option("--category", relay->category, "Publish only this category (default: all)");
  cmd->add_option("--max-in-flight", relay->max_in_flight,
                  "At most this many events handed to Kafka after the checkpoint: the most a "
                  "crash publishes twice (default 20000)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}));
  cmd->add_option("--transactional-id", relay->transactional_id,
                  "Publish each batch in one Kafka transaction with this transactional.id "
                  "(read_committed consumers see a batch all or nothing)");
  cmd->callback([&action, relay] { action = [relay] { return run_relay(*relay); }; });

  auto ingest = std::make_shared<IngestCommand>();
  cmd = app.add_subcommand(
      "ingest",
      "Append a Kafka topic's records to streams, offsets stored with the events "
      "(docs/kafka.md)");
  add_bridge_options(*cmd, *ingest, "The topic to read");
  cmd->add_option("--stream-prefix", ingest->prefix,
                  "A record goes to the stream PREFIX + key (default: the topic and a dash)");
  cmd->add_flag("--group", ingest->group,
                "Share the topic's partitions with the other ingests of this name on this store "
                "(a Kafka consumer group)");
  cmd->callback([&action, ingest] { action = [ingest] { return run_ingest(*ingest); }; });
}

}  // namespace factum::cli
