// tools/cmd_audit.cpp — `factum audit DB --event ID` (or --position P): one event in full, its
// hash check, what caused it, what it caused (following causation ids down, any depth), its
// correlation group and its compensations. Related events are found with read-only SQL on the
// events table (causation and correlation ids have no index: those are full scans).
#include <iostream>
#include <memory>

#include "cli.hpp"
#include "event_json.hpp"
#include "options.hpp"
#include "output.hpp"
#include "run_command.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

struct AuditOptions {
  std::string db;
  std::string event;
  Position position = 0;
  std::uint64_t limit = 100;
  bool json = false;
};

// The envelope of a related event, as the listings show it, and whether the stored event
// matches its hash.
struct Related {
  std::int64_t depth = 0;
  RecordedEvent event;  // position, stream id, version, type, id and recorded_at only
  bool hash_ok = true;
};

// A list of related events: the first `limit` of them, and how many there are.
struct RelatedList {
  std::vector<Related> shown;
  std::uint64_t total = 0;
  bool deeper = false;  // caused: events further down than kMaxDepth were left out
};

constexpr const char* kBrief =
    "e.position, s.stream_id, e.stream_version, e.type, e.event_id, e.recorded_at";

// How many levels of causation audit follows.
constexpr std::int64_t kMaxDepth = 64;

// Every event caused by ?1, directly or through others (depth 1 = direct), each once. An event
// has one causation id, so each is reached from one cause only, and the one event the walk can
// meet again is ?1 itself, when causation ids form a cycle through it (the API accepts any id):
// it is listed once, at the depth where the cycle closes, and not followed again. The walk goes
// one level past kMaxDepth, to tell whether there is more than it lists.
const std::string kCausedSql =
    std::string(
        "WITH RECURSIVE caused(id, depth) AS (SELECT ?1, 0 UNION "
        "SELECT e.event_id, c.depth + 1 FROM caused c JOIN events e ON e.causation_id = c.id "
        "WHERE c.depth <= ") +
    std::to_string(kMaxDepth) +
    " AND (c.depth = 0 OR c.id <> ?1)) "
    "SELECT c.depth, " +
    kBrief +
    " FROM caused c JOIN events e ON e.event_id = c.id LEFT JOIN "
    "streams s ON s.stream_key = e.stream_key WHERE c.depth > 0 "
    "ORDER BY e.position";
// The correlation group ?1: the events carrying it, and the event whose id it is.
const std::string kCorrelationSql = std::string("SELECT 0, ") + kBrief +
                                    " FROM events e LEFT JOIN streams s ON s.stream_key = "
                                    "e.stream_key WHERE e.correlation_id = ?1 OR e.event_id = ?1 "
                                    "ORDER BY e.position";

SqlValue id_param(const EventId& id) {
  Bytes b(16);
  std::memcpy(b.data(), id.bytes().data(), 16);
  return b;
}

Related related_row(const SqlRow& r) {
  Related x;
  x.depth = r.integer(0);
  RecordedEvent& e = x.event;
  e.position = static_cast<Position>(r.integer(1));
  e.stream_id = r.is_null(2) ? std::string("?") : r.text(2);
  e.stream_version = static_cast<StreamVersion>(r.integer(3));
  e.type = r.text(4);
  const Bytes id = r.blob(5);
  if (id.size() == 16) {
    EventId::Bytes b{};
    std::memcpy(b.data(), id.data(), 16);
    e.id = EventId(b);
  }
  e.recorded_at = Timestamp(std::chrono::microseconds(r.integer(6)));
  return x;
}

RelatedList query_related(const EventStore& store, const std::string& sql, const EventId& id,
                          std::uint64_t limit) {
  RelatedList out;
  store.read_sql([&](Sql& s) {
    s.query(sql, {id_param(id)}, [&](const SqlRow& r) {
      if (r.integer(0) > kMaxDepth) {
        out.deeper = true;
        return;
      }
      if (++out.total <= limit) out.shown.push_back(related_row(r));
    });
  });
  return out;
}

RelatedList from_events(const std::vector<RecordedEvent>& events, std::uint64_t limit) {
  RelatedList out;
  for (const RecordedEvent& e : events) {
    if (++out.total <= limit) out.shown.push_back({0, e});
  }
  return out;
}

std::optional<RecordedEvent> find_event(const EventStore& store, const AuditOptions& o) {
  if (!o.event.empty()) return store.read_event(EventId::parse(o.event));
  for (const RecordedEvent& e : store.read_all(o.position)) {
    if (e.position == o.position) return e;
    break;
  }
  return std::nullopt;
}

struct Audit {
  RecordedEvent event;
  bool hash_ok = false;
  bool related_ok = true;                    // every related event shown matches its hash
  std::optional<RecordedEvent> cause;        // the event named by causation_id, when stored
  std::optional<RecordedEvent> compensated;  // the event named by compensates, when stored
  EventId correlation;
  RelatedList caused;
  RelatedList group;
  RelatedList compensations;
};

Audit audit(const EventStore& store, RecordedEvent e, std::uint64_t limit) {
  Audit a;
  a.hash_ok = hash_matches(e);
  const Metadata& m = e.metadata;
  if (m.causation_id) a.cause = store.read_event(*m.causation_id);
  if (m.compensates) a.compensated = store.read_event(*m.compensates);
  a.correlation = m.correlation_id.value_or(e.id);
  a.caused = query_related(store, kCausedSql, e.id, limit);
  a.group = query_related(store, kCorrelationSql, a.correlation, limit);
  a.compensations = from_events(store.compensations_of(e.id), limit);
  a.event = std::move(e);
  // Every related event shown is checked as the audited one is: a listing is no place for an
  // altered event to pass unnoticed.
  for (const std::optional<RecordedEvent>* one : {&a.cause, &a.compensated}) {
    if (*one && !hash_matches(**one)) a.related_ok = false;
  }
  for (RelatedList* list : {&a.caused, &a.group, &a.compensations}) {
    for (Related& r : list->shown) {
      const std::optional<RecordedEvent> stored = store.read_event(r.event.id);
      r.hash_ok = stored && hash_matches(*stored);
      if (!r.hash_ok) a.related_ok = false;
    }
  }
  return a;
}

// --- output ------------------------------------------------------------------------------------

Json list_json(const RelatedList& list, bool with_depth) {
  Json events = Json::array();
  for (const Related& r : list.shown) {
    Json j = event_brief_json(r.event);
    if (with_depth) j["depth"] = r.depth;
    j["hash_ok"] = r.hash_ok;
    events.push_back(std::move(j));
  }
  Json j = {{"total", list.total}, {"events", std::move(events)}};
  if (with_depth) j["depth_limit_reached"] = list.deeper;
  return j;
}

Json audit_json(const Audit& a) {
  Json j = Json::object();
  j["event"] = event_to_json(a.event);
  j["hash_ok"] = a.hash_ok;
  j["related_ok"] = a.related_ok;
  auto brief = [](const std::optional<RecordedEvent>& e) {
    if (!e) return Json(nullptr);
    Json out = event_brief_json(*e);
    out["hash_ok"] = hash_matches(*e);
    return out;
  };
  j["caused_by"] = brief(a.cause);
  j["compensates"] = brief(a.compensated);
  j["caused"] = list_json(a.caused, true);
  j["correlation"] = list_json(a.group, false);
  j["correlation"]["id"] = a.correlation.to_string();
  j["compensations"] = list_json(a.compensations, false);
  return j;
}

std::string id_or_dash(const std::optional<EventId>& id) { return id ? id->to_string() : "-"; }

std::string brief_line(const RecordedEvent& e) {
  return "position " + std::to_string(e.position) + ", " + printable(e.stream_id) + " v" +
         std::to_string(e.stream_version) + ", " + printable(e.type) +
         (hash_matches(e) ? "" : ", hash DOES NOT MATCH");
}

// "15 bytes: {"owner":"Ada"}" for text, "3 bytes: 0x010203" for binary (first 32 bytes).
std::string payload_line(const Bytes& payload) {
  std::string shown = preview(payload, 60);
  if (!payload.empty() && shown.front() == '(') {
    static constexpr char kHex[] = "0123456789abcdef";
    shown = "0x";
    for (std::size_t i = 0; i < std::min<std::size_t>(payload.size(), 32); ++i) {
      const auto b = static_cast<unsigned char>(payload[i]);
      shown += kHex[b >> 4];
      shown += kHex[b & 0xf];
    }
    if (payload.size() > 32) shown += "...";
  }
  return std::to_string(payload.size()) + " bytes" +
         (payload.empty() ? "" : ": " + printable(shown));
}

void print_event(const Audit& a) {
  const RecordedEvent& e = a.event;
  const Metadata& m = e.metadata;
  std::string values;
  for (const auto& [k, v] : m.values)
    values += (values.empty() ? "" : ", ") + printable(k) + "=" + printable(v);
  std::cout << "event " << e.id.to_string() << '\n';
  print_fields(
      {{"position", std::to_string(e.position)},
       {"stream", printable(e.stream_id) + " (version " + std::to_string(e.stream_version) + ")"},
       {"type", printable(e.type) + " (schema " + std::to_string(e.schema_version) + ")"},
       {"recorded at", format_time(e.recorded_at)},
       {"actor", m.actor.empty() ? "-" : printable(m.actor)},
       {"correlation id", id_or_dash(m.correlation_id)},
       {"causation id",
        id_or_dash(m.causation_id) + (a.cause ? " (" + brief_line(*a.cause) + ")" : "")},
       {"compensates",
        id_or_dash(m.compensates) + (a.compensated ? " (" + brief_line(*a.compensated) + ")" : "")},
       {"values", values.empty() ? "-" : values},
       {"payload", payload_line(e.payload)},
       {"hash",
        to_hex(e.hash) + (a.hash_ok ? " (matches)" : " (DOES NOT MATCH: run factum verify)")}},
      "  ");
}

void print_list(const std::string& title, const RelatedList& list, bool with_depth) {
  std::cout << '\n'
            << title << ": " << list.total << (list.total == 1 ? " event" : " events") << '\n';
  if (list.total == 0) return;
  std::vector<Column> columns;
  if (with_depth) columns.push_back({"DEPTH", Align::right});
  for (Column c : std::vector<Column>{{"POSITION", Align::right},
                                      {"STREAM"},
                                      {"VERSION", Align::right},
                                      {"TYPE"},
                                      {"ID"},
                                      {"RECORDED AT"},
                                      {"HASH"}}) {
    columns.push_back(std::move(c));
  }
  {
    Table t(columns);
    for (const Related& r : list.shown) {
      std::vector<std::string> cells;
      if (with_depth) cells.push_back(std::to_string(r.depth));
      const RecordedEvent& e = r.event;
      for (std::string c :
           {std::to_string(e.position), printable(e.stream_id), std::to_string(e.stream_version),
            printable(e.type), e.id.to_string(), format_time(e.recorded_at),
            std::string(r.hash_ok ? "ok" : "DOES NOT MATCH")}) {
        cells.push_back(std::move(c));
      }
      t.add(std::move(cells));
    }
  }
  if (list.total > list.shown.size()) {
    std::cout << "... and " << list.total - list.shown.size() << " more (raise --limit)\n";
  }
  if (list.deeper) {
    std::cout << "... the walk stopped at depth " << kMaxDepth
              << ": events caused further down are not listed\n";
  }
}

int run_audit(const AuditOptions& o) {
  const EventStore store = open_read_only(o.db);
  std::optional<RecordedEvent> e = find_event(store, o);
  if (!e) {
    throw CliError((o.event.empty() ? "no event at position " + std::to_string(o.position)
                                    : "event " + o.event + " not found") +
                   " in '" + shown_location(o.db) + "'");
  }
  const Audit a = audit(store, std::move(*e), o.limit);
  if (o.json) {
    print_json(audit_json(a));
  } else {
    print_event(a);
    print_list("caused", a.caused, true);
    print_list("correlation group " + a.correlation.to_string(), a.group, false);
    print_list("compensated by", a.compensations, false);
  }
  if (!a.related_ok) {
    print_error("an event related to " + a.event.id.to_string() +
                " does not match its hash (run factum verify)");
  }
  return a.hash_ok && a.related_ok ? kOk : kDamaged;
}

}  // namespace

void add_audit_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<AuditOptions>();
  CLI::App* cmd = app.add_subcommand(
      "audit",
      "Show one event, what caused it, what it caused, its correlation group and its "
      "compensations");
  add_db_argument(*cmd, o->db);
  CLI::Option* id =
      cmd->add_option("--event,-e", o->event, "The event's id")->check(event_id_validator());
  CLI::Option* pos = cmd->add_option("--position,-p", o->position, "The event at this position")
                         ->transform(whole_number(1));
  id->excludes(pos);
  cmd->add_option("--limit", o->limit, "List at most N events per section (default 100)")
      ->transform(whole_number(0));
  add_json_flag(*cmd, o->json);
  cmd->callback([&action, o, id, pos] {
    if (id->count() == 0 && pos->count() == 0) throw CLI::RequiredError("--event or --position");
    action = [o] { return run_audit(*o); };
  });
}

}  // namespace factum::cli
