// tools/cmd_read.cpp — listing the log: `factum streams DB [--category C]`, `factum read DB
// STREAM [--from V] [--backward]` (or `read DB --query Q`: the events a query matches),
// `factum tags DB` and `factum tail DB [-n N] [--follow]`. Reads page through the
// log (EventRange), so any listing runs in constant memory; tail --follow follows new commits
// of any process through a Subscription until SIGINT/SIGTERM, --limit or --timeout.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "cli.hpp"
#include "event_json.hpp"
#include "factum/eventstore/personal.hpp"
#include "factum/eventstore/query.hpp"
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

// --- tags --------------------------------------------------------------------------------------

struct TagsOptions {
  std::string db;
  std::string prefix;
  bool json = false;
};

// One row per tag of the index (tags.hpp): how many events carry it, the first and the last.
int run_tags(const TagsOptions& o) {
  const EventStore store = open_read_only(o.db);
  std::optional<Table> table;
  if (!o.json)
    table.emplace(std::vector<Column>{
        {"TAG"}, {"EVENTS", Align::right}, {"FIRST", Align::right}, {"LAST", Align::right}});
  store.read_sql([&](Sql& sql) {
    if (sql.object_type("factum_event_tags") != "table") return;  // never tagged
    const bool postgres = sql.dialect() == SqlDialect::postgres;
    // In byte order on both backends; a prefix as a range of the primary key.
    sql.query(std::string("SELECT tag, count(*), min(position), max(position) FROM "
                          "factum_event_tags WHERE substr(tag, 1, length(CAST(?1 AS TEXT))) = "
                          "CAST(?1 AS TEXT) GROUP BY tag "
                          "ORDER BY tag") +
                  (postgres ? " COLLATE \"C\"" : ""),
              {o.prefix}, [&](const SqlRow& r) {
                if (table) {
                  table->add({r.text(0), std::to_string(r.integer(1)), std::to_string(r.integer(2)),
                              std::to_string(r.integer(3))});
                  return;
                }
                print_json_line({{"tag", json_text(r.text(0))},
                                 {"events", r.integer(1)},
                                 {"first_position", r.integer(2)},
                                 {"last_position", r.integer(3)}});
              });
  });
  if (table) table->flush();
  flush_output(stdout);
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

// The subject ids an event's personal values belong to (its kSubjectsMetadataKey), or none
// (also when the value is not a list of subject ids: then the payload is shown as it is).
std::vector<std::string> subjects_in(const Metadata& m) {
  try {
    return detail::subjects_of(m);
  } catch (const InvalidArgument&) {
    return {};
  }
}
std::vector<std::string> subjects_in(const RecordedEvent& e) { return subjects_in(e.metadata); }
std::vector<std::string> subjects_in(const EventView& e) {
  const std::optional<std::string_view> v = e.metadata_value(detail::kSubjectsMetadataKey);
  if (!v) return {};
  Metadata m;
  m.values.emplace(detail::kSubjectsMetadataKey, std::string(*v));
  return subjects_in(m);
}

// Which subjects the store forgot: read once, when the first event with personal values is
// printed, and kept current by the factum.SubjectForgotten facts printed after (tail --follow).
class ForgottenSubjects {
 public:
  explicit ForgottenSubjects(const EventStore& store) : store_(store) {}
  bool contains(const std::string& subject) {
    if (!loaded_) {
      for (const SubjectInfo& s : list_subjects(store_)) {
        if (s.state == SubjectInfo::State::forgotten) forgotten_.insert(s.subject);
      }
      loaded_ = true;
    }
    return forgotten_.count(subject) == 1;
  }
  void saw(const RecordedEvent& e) {
    if (auto subject = forgotten_subject(e)) forgotten_.insert(std::move(*subject));
  }
  void saw(const EventView&) {}  // views are of one stream's events (read), never forgets

 private:
  const EventStore& store_;
  bool loaded_ = false;
  std::set<std::string> forgotten_;
};

// Prints events as a table or as JSON Lines. An event with personal values (personal.hpp) shows
// them by subject instead of its payload's bytes (ciphertext): "user:7=<erased>" once the
// subject was forgotten, "user:8=<encrypted>" while its key is kept; --json adds "personal".
class EventPrinter {
 public:
  EventPrinter(const EventStore& store, bool json, bool with_stream)
      : with_stream_(with_stream), forgotten_(store) {
    if (!json) table_.emplace(event_columns(with_stream));
  }
  // Prints `e` (a RecordedEvent or an EventView), or throws CliError (exit 3) when its hash
  // does not match.
  template <class Event>
  void print(const Event& e) {
    require_intact(e);
    forgotten_.saw(e);
    const std::vector<std::string> subjects = subjects_in(e);
    if (table_) {
      std::vector<std::string> cells = event_cells(e);
      if (!subjects.empty()) {
        std::string shown;
        for (const std::string& s : subjects) {
          if (!shown.empty()) shown += ' ';
          shown += s + (forgotten_.contains(s) ? "=<erased>" : "=<encrypted>");
        }
        cells.back() = shown;  // subject ids are plain ASCII: nothing to escape
      }
      table_->add(std::move(cells));
    } else {
      Json j = event_to_json(e);
      if (!subjects.empty()) {
        Json personal = Json::array();
        for (const std::string& s : subjects) {
          personal.push_back(
              {{"subject", s}, {"state", forgotten_.contains(s) ? "erased" : "encrypted"}});
        }
        j["personal"] = std::move(personal);
      }
      print_json_line(j);
    }
  }
  // Throws CliError when stdout failed (a full disk).
  void flush() {
    if (table_) table_->flush();
    flush_output(stdout);
  }

 private:
  template <class Event>
  std::vector<std::string> event_cells(const Event& e) const {
    std::vector<std::string> cells{std::to_string(e.position)};
    if (with_stream_) cells.push_back(printable(e.stream_id));
    cells.push_back(std::to_string(e.stream_version));
    cells.push_back(format_time(e.recorded_at));
    cells.push_back(printable(e.type));
    cells.push_back(e.id.to_string());
    cells.push_back(printable(preview(e.payload)));
    return cells;
  }

  bool with_stream_;
  ForgottenSubjects forgotten_;
  std::optional<Table> table_;  // none with --json
};

struct ReadOptions {
  std::string db;
  std::string stream;
  std::string query;  // --query: the events a query matches instead of a stream's
  StreamVersion from = 0;
  bool backward = false;
  std::uint64_t limit = 0;
  bool json = false;
};

// --query's text: items separated by '|', each of terms `type=T` (any of them) and `tag=X` (all
// of them) separated by spaces, e.g. 'type=feed.UserJoined tag=handle:alice | tag=vip'.
// Throws CliError (exit 2) naming what it cannot read.
Query parse_query(const std::string& text) {
  Query q;
  std::size_t start = 0;
  for (;;) {
    const std::size_t bar = text.find('|', start);
    const std::string part = text.substr(start, bar == std::string::npos ? bar : bar - start);
    QueryItem item;
    std::size_t at = 0;
    while (at < part.size()) {
      const std::size_t begin = part.find_first_not_of(' ', at);
      if (begin == std::string::npos) break;
      std::size_t end = part.find(' ', begin);
      if (end == std::string::npos) end = part.size();
      const std::string term = part.substr(begin, end - begin);
      if (term.rfind("type=", 0) == 0 && term.size() > 5) {
        item.types.push_back(term.substr(5));
      } else if (term.rfind("tag=", 0) == 0 && term.size() > 4) {
        item.tags.push_back(term.substr(4));
      } else {
        throw CliError("--query: '" + printable(term) +
                           "' is not type=TYPE or tag=TAG (items are separated by '|')",
                       kUsage);
      }
      at = end;
    }
    if (item.types.empty() && item.tags.empty()) {
      throw CliError("--query: an item has no type= or tag= term", kUsage);
    }
    q.items.push_back(std::move(item));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  try {
    validate_query(q);
  } catch (const InvalidArgument& e) {
    throw CliError(std::string("--query: ") + e.what(), kUsage);
  }
  return q;
}

// `read DB --query Q`: the events the query matches, in log order, after --from (a position).
int run_read_query(const ReadOptions& o) {
  const Query query = parse_query(o.query);
  if (o.backward) throw CliError("--backward does not go with --query", kUsage);
  const EventStore store = open_read_only(o.db);
  EventPrinter printer(store, o.json, true);
  std::uint64_t printed = 0;
  visit_query(store, query, o.from == 0 ? 0 : o.from - 1, [&](const RecordedEvent& e) {
    if (o.limit != 0 && printed == o.limit) return false;
    printer.print(e);
    ++printed;
    return true;
  });
  printer.flush();
  return kOk;
}

int run_read(const ReadOptions& o) {
  if (!o.query.empty()) {
    if (!o.stream.empty()) throw CliError("give a STREAM or --query, not both", kUsage);
    return run_read_query(o);
  }
  if (o.stream.empty()) throw CliError("read needs a STREAM (or --query)", kUsage);
  const EventStore store = open_read_only(o.db);
  if (store.stream_version(o.stream) == 0) {
    throw CliError("stream '" + printable(o.stream) + "' not found in '" + shown_location(o.db) +
                   "'");
  }
  EventPrinter printer(store, o.json, false);
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
  EventPrinter printer(store, o.json, true);
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
  cmd = app.add_subcommand("read", "Print the events of one stream, or those a query matches");
  add_db_argument(*cmd, read->db);
  cmd->add_option("STREAM", read->stream, "The stream id, e.g. account-42");
  cmd->add_option("--query,-q", read->query,
                  "Instead of a stream: the events matching 'type=T tag=X | tag=Y' (items "
                  "separated by '|'; an item matches an event of one of its types carrying all "
                  "its tags), in log order (docs/dcb.md)");
  cmd->add_option("--from", read->from,
                  "Start at this stream version (default: the first; with --backward, the last); "
                  "with --query, at this position")
      ->transform(whole_number(1));
  cmd->add_flag("--backward,-b", read->backward, "Newest first");
  cmd->add_option("--limit,-n", read->limit, "Print at most N events")->transform(whole_number(1));
  add_json_flag(*cmd, read->json);
  cmd->callback([&action, read] { action = [read] { return run_read(*read); }; });

  auto tags = std::make_shared<TagsOptions>();
  cmd = app.add_subcommand("tags", "List the tags of the events (docs/dcb.md), with their counts");
  add_db_argument(*cmd, tags->db);
  cmd->add_option("--prefix", tags->prefix, "Only the tags that start with this text");
  add_json_flag(*cmd, tags->json);
  cmd->callback([&action, tags] { action = [tags] { return run_tags(*tags); }; });

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
