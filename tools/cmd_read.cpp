// tools/cmd_read.cpp — listing the log: `factum streams DB [--category C]`, `factum read DB
// STREAM [--from V] [--backward]` and `factum tail DB [-n N] [--follow]`. Reads page through the
// log (EventRange), so any listing runs in constant memory; tail --follow follows new commits
// of any process through a Subscription until SIGINT/SIGTERM, --limit or --timeout.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "cli.hpp"
#include "event_json.hpp"
#include "factum/projections/subscription.hpp"
#include "options.hpp"
#include "output.hpp"
#include "run_command.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

// --- streams -----------------------------------------------------------------------------------

struct StreamsOptions {
  std::string db;
  std::string category;
  bool json = false;
};

// One row per stream: its last version and position (from the events_by_stream index) and
// when its last event was recorded. ?1 is the category, or NULL for every stream.
std::string streams_sql(SqlDialect dialect) {
  const bool postgres = dialect == SqlDialect::postgres;
  return std::string(
             "SELECT x.stream_id, x.category, x.version, x.last, "
             "(SELECT recorded_at FROM events WHERE position = x.last) FROM ("
             "SELECT s.stream_id, s.category, max(e.stream_version) AS version, "
             "max(e.position) AS last "
             "FROM streams s JOIN events e ON e.stream_key = s.stream_key WHERE ") +
         // PostgreSQL cannot type a parameter that is only tested for NULL.
         (postgres ? "CAST(?1 AS TEXT)" : "?1") +
         " IS NULL OR s.category = ?1 GROUP BY s.stream_key) x ORDER BY x.stream_id" +
         // In byte order as on SQLite, whatever the database's collation.
         (postgres ? " COLLATE \"C\"" : "");
}

int run_streams(const StreamsOptions& o) {
  const EventStore store = open_read_only(o.db);
  std::optional<Table> table;
  if (!o.json) {
    table.emplace(std::vector<Column>{{"STREAM"},
                                      {"CATEGORY"},
                                      {"VERSION", Align::right},
                                      {"LAST POSITION", Align::right},
                                      {"LAST RECORDED"}});
  }
  const SqlValue category = o.category.empty() ? SqlValue(nullptr) : SqlValue(o.category);
  store.read_sql([&](Sql& sql) {
    sql.query(streams_sql(sql.dialect()), {category}, [&](const SqlRow& r) {
      const Timestamp last(std::chrono::microseconds(r.is_null(4) ? 0 : r.integer(4)));
      if (!table) {
        print_json_line({{"stream", json_text(r.text(0))},
                         {"category", json_text(r.text(1))},
                         {"version", r.integer(2)},
                         {"last_position", r.integer(3)},
                         {"last_recorded_at", format_time(last)}});
        return;
      }
      table->add({printable(r.text(0)), printable(r.text(1)), std::to_string(r.integer(2)),
                  std::to_string(r.integer(3)), format_time(last)});
    });
  });
  if (table) table->flush();
  return kOk;
}

// --- read and tail -----------------------------------------------------------------------------

std::vector<Column> event_columns(bool with_stream) {
  std::vector<Column> c{{"POSITION", Align::right, 8}};
  if (with_stream) c.push_back({"STREAM", Align::left, 12});
  c.push_back({"VERSION", Align::right});
  c.push_back({"RECORDED AT", Align::left, 27});
  c.push_back({"TYPE", Align::left, 16});
  c.push_back({"ID", Align::left, 36});
  c.push_back({"PAYLOAD"});
  return c;
}

template <class Event>
std::vector<std::string> event_cells(const Event& e, bool with_stream) {
  std::vector<std::string> cells{std::to_string(e.position)};
  if (with_stream) cells.push_back(printable(e.stream_id));
  cells.push_back(std::to_string(e.stream_version));
  cells.push_back(format_time(e.recorded_at));
  cells.push_back(printable(e.type));
  cells.push_back(e.id.to_string());
  cells.push_back(printable(preview(e.payload)));
  return cells;
}

// Prints events as a table or as JSON Lines.
class EventPrinter {
 public:
  EventPrinter(bool json, bool with_stream) : with_stream_(with_stream) {
    if (!json) table_.emplace(event_columns(with_stream));
  }
  // Prints `e` (a RecordedEvent or an EventView), or throws CliError (exit 3) when its hash
  // does not match.
  template <class Event>
  void print(const Event& e) {
    require_intact(e);
    if (table_) {
      table_->add(event_cells(e, with_stream_));
    } else {
      print_json_line(event_to_json(e));
    }
  }
  // Throws CliError when stdout failed (a full disk).
  void flush() {
    if (table_) table_->flush();
    flush_output(stdout);
  }

 private:
  bool with_stream_;
  std::optional<Table> table_;  // none with --json
};

struct ReadOptions {
  std::string db;
  std::string stream;
  StreamVersion from = 0;
  bool backward = false;
  std::uint64_t limit = 0;
  bool json = false;
};

int run_read(const ReadOptions& o) {
  const EventStore store = open_read_only(o.db);
  if (store.stream_version(o.stream) == 0) {
    throw CliError("stream '" + printable(o.stream) + "' not found in '" + shown_location(o.db) +
                   "'");
  }
  EventPrinter printer(o.json, false);
  std::uint64_t printed = 0;
  if (o.backward) {
    for (const RecordedEvent& e : store.read_stream_backward(o.stream, o.from)) {
      if (o.limit != 0 && printed == o.limit) break;
      printer.print(e);
      ++printed;
    }
  } else {  // views: each event is printed straight from the row
    store.visit_stream(o.stream, std::max<StreamVersion>(1, o.from), [&](const EventView& e) {
      if (o.limit != 0 && printed == o.limit) return false;
      printer.print(e);
      ++printed;
      return true;
    });
  }
  printer.flush();
  return kOk;
}

struct TailOptions {
  std::string db;
  std::uint64_t lines = 10;
  bool follow = false;
  std::uint64_t limit = 0;
  double timeout = 0;
  std::uint64_t interval_ms = 200;
  bool json = false;
};

constexpr double kMaxTimeoutSeconds = 365.0 * 24 * 3600;

// Follows the log after `from` until a signal, `limit` printed events or `timeout` seconds.
void follow(EventStore& store, const TailOptions& o, Position from, EventPrinter& printer) {
  std::mutex mu;
  std::uint64_t printed = 0;
  std::atomic<bool> done{false};
  SubscriptionOptions options;
  options.from = from;
  options.poll_interval = std::chrono::milliseconds(std::max<std::uint64_t>(1, o.interval_ms));
  Subscription sub =
      Subscription::batched(store, options, [&](std::span<const RecordedEvent> batch) {
        std::lock_guard lock(mu);
        for (const RecordedEvent& e : batch) {
          if (done) return;
          printer.print(e);
          if (o.limit != 0 && ++printed >= o.limit) done = true;
        }
        printer.flush();
      });
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(o.timeout));
  while (!done && !interrupted_by_signal() && sub.state() != Subscription::State::failed &&
         (o.timeout <= 0 || std::chrono::steady_clock::now() < deadline)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  sub.stop();
  std::lock_guard lock(mu);
  printer.flush();
  if (const std::exception_ptr error = sub.error()) std::rethrow_exception(error);
}

int run_tail(const TailOptions& o) {
  // Before the first line is printed: a signal sent by whoever saw that line must find the
  // handler (installing it after the last line raced with the signal, which then killed us).
  if (o.follow) install_interrupt_handlers();
  EventStore store = open_read_only(o.db);
  const Position head = store.head_position();
  EventPrinter printer(o.json, true);
  if (o.lines > 0 && head > 0) {
    const Position from = head > o.lines ? head - o.lines + 1 : 1;
    for (const RecordedEvent& e : store.read_all(from)) {
      if (e.position > head) break;
      printer.print(e);
    }
  }
  printer.flush();
  if (o.follow) follow(store, o, head, printer);
  return kOk;
}

}  // namespace

void add_read_commands(CLI::App& app, Action& action) {
  auto streams = std::make_shared<StreamsOptions>();
  CLI::App* cmd = app.add_subcommand("streams", "List the streams with their last version");
  add_db_argument(*cmd, streams->db);
  cmd->add_option("--category,-c", streams->category, "Only the streams of this category");
  add_json_flag(*cmd, streams->json);
  cmd->callback([&action, streams] { action = [streams] { return run_streams(*streams); }; });

  auto read = std::make_shared<ReadOptions>();
  cmd = app.add_subcommand("read", "Print the events of one stream");
  add_db_argument(*cmd, read->db);
  cmd->add_option("STREAM", read->stream, "The stream id, e.g. account-42")->required();
  cmd->add_option("--from", read->from,
                  "Start at this stream version (default: the first; with --backward, the last)")
      ->transform(whole_number(1));
  cmd->add_flag("--backward,-b", read->backward, "Newest first");
  cmd->add_option("--limit,-n", read->limit, "Print at most N events")->transform(whole_number(1));
  add_json_flag(*cmd, read->json);
  cmd->callback([&action, read] { action = [read] { return run_read(*read); }; });

  auto tail = std::make_shared<TailOptions>();
  cmd = app.add_subcommand("tail", "Print the newest events of the log, and follow new ones");
  add_db_argument(*cmd, tail->db);
  cmd->add_option("--lines,-n", tail->lines, "Print the last N events first (default 10)")
      ->transform(whole_number(0));
  cmd->add_flag("--follow,-f", tail->follow,
                "Keep printing events as they are appended, by any process, until "
                "interrupted (SIGINT/SIGTERM)");
  cmd->add_option("--limit", tail->limit, "With --follow: stop after N new events")
      ->transform(whole_number(1));
  cmd->add_option("--timeout", tail->timeout,
                  "With --follow: stop after this many seconds (at most a year, 31536000; 0, the "
                  "default: no limit)")
      ->check(seconds(kMaxTimeoutSeconds, "31536000"));
  cmd->add_option("--interval", tail->interval_ms,
                  "With --follow: how often to look for new commits, in ms (1 to 60000, default "
                  "200)")
      ->transform(whole_number(1, 60000));
  add_json_flag(*cmd, tail->json);
  cmd->callback([&action, tail] { action = [tail] { return run_tail(*tail); }; });
}

}  // namespace factum::cli
