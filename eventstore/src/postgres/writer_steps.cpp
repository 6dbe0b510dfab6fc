// Appends run statement by statement inside the group's transaction: retries (their stored
// events compared with the batch), appends with on_appending slots (and what the slots see),
// and every append of a group run again after the server refused one of them.
#include <cstring>
#include <iterator>
#include <string>

#include "postgres/rows.hpp"
#include "postgres/writer.hpp"

namespace factum::detail::pg {
namespace {

bool same_optional_id(const PgResult& r, int row, int col, const std::optional<EventId>& want) {
  if (r.null(row, col)) return !want;
  const auto b = r.bytes(row, col);
  return want && b.size() == 16 && std::memcmp(b.data(), want->bytes().data(), 16) == 0;
}

bool same_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

}  // namespace

Tail PgWriter::lock_head(PgConn& c) {
  return head_row(Params().run(c, pg::kLockHead.c_str(), "locking the log's head"));
}

void PgWriter::apply(PgConn& c, Pending& p, Tail& tail, std::int64_t now) {
  p.results.clear();
  p.results.reserve(p.appends.size());
  const Position start = tail.position;
  for (const AppendView& a : p.appends) {
    if (p.hook == nullptr) {
      p.results.push_back(apply_one(c, a, tail, now, p.sink->events));
    } else {
      std::vector<RecordedEvent> events;
      p.results.push_back(apply_one(c, a, tail, now, &events));
      run_hook(c, p, events);
    }
  }
  if (tail.position > start) {
    p.sink->first_written = start + 1;
    p.sink->last_written = tail.position;
  }
}

// The end of a step's INSERT (pg::insert_events_sql, by key): a stored id leaves no row.
constexpr const char* kUnlessStored = " ON CONFLICT (event_id) DO NOTHING RETURNING position";

AppendResult PgWriter::apply_one(PgConn& c, const AppendView& a, Tail& tail, std::int64_t now,
                                 std::vector<RecordedEvent>* committed) {
  std::optional<std::int64_t> key;
  StreamVersion current = 0;
  {
    PgResult r =
        Params().text(a.stream).run(c, pg::kStreamKeyAndVersion.c_str(), "looking up a stream");
    if (r.rows() == 1) {
      key = r.int64_or(0, 0, 0);
      current = static_cast<StreamVersion>(r.int64_or(0, 1, 0));
    }
  }
  if (auto retry = find_retry(c, a, key)) return *retry;
  if (!a.expected.matches(current)) {
    for (const EventData& e : a.events.subspan(1)) {
      if (stored_in(c, e.id)) throw_duplicate(c, e.id, a.stream);
    }
    throw ConcurrencyError(std::string(a.stream), a.expected.to_string(), current);
  }
  if (!key) {
    PgResult r = Params()
                     .text(a.stream)
                     .text(category_of(a.stream))
                     .run(c,
                          "INSERT INTO streams (stream_id, category) VALUES ($1, $2) "
                          "RETURNING stream_key",
                          "creating a stream");
    key = r.int64_or(0, 0, 0);
  }
  AppendResult result;
  result.first_position = tail.position + 1;
  StreamVersion version = current;
  if (committed != nullptr && committed->empty()) committed->reserve(a.events.size());
  for (const EventData& e : a.events) {
    check_compensates(c, e, *key, a.stream);
    const EventFields f = event_fields(a.stream, e, tail.position + 1, ++version, now);
    const Hash hash = hasher_(tail.hash, f);
    Params params;
    params.i64(*key)
        .i64(static_cast<std::int64_t>(f.position))
        .i64(static_cast<std::int64_t>(f.stream_version));
    add_columns(params, e, now, hash);
    const bool previous = c.stored_previous();
    if (previous) add_hash(params, tail.hash);
    // An id stored in another stream does not raise (which would abort the transaction):
    // the insert returns no row, and the duplicate is reported.
    static const std::string kInsert[2] = {pg::insert_events_sql(1, true, false) + kUnlessStored,
                                           pg::insert_events_sql(1, true, true) + kUnlessStored};
    PgResult r = params.run(c, kInsert[previous ? 1 : 0].c_str(), "appending an event");
    if (r.rows() != 1) throw_duplicate(c, e.id, a.stream);
    if (committed != nullptr) committed->push_back(recorded_of(f, hash, tail.hash));
    tail = {f.position, hash};
  }
  result.stream_version = version;
  result.last_position = tail.position;
  return result;
}

std::optional<AppendResult> PgWriter::find_retry(PgConn& c, const AppendView& a,
                                                 std::optional<std::int64_t> key) {
  const EventData& first = a.events.front();
  PgResult r = Params().id(first.id).run(c, pg::kEventOfId.c_str(), "looking up an event id");
  if (r.rows() == 0) return std::nullopt;
  if (!key || r.int64_or(0, 1, 0) != *key) {
    throw DuplicateEventError(first.id.to_string(), std::string(a.stream),
                              "is stored already in stream '" + std::string(r.text(0, 3)) + "'");
  }
  const auto first_position = static_cast<Position>(r.int64_or(0, 0, 0));
  const auto first_version = static_cast<StreamVersion>(r.int64_or(0, 2, 0));
  PgResult rows =
      Params()
          .i64(*key)
          .i64(static_cast<std::int64_t>(first_version))
          .i64(static_cast<std::int64_t>(a.events.size()))
          .run(c,
               "SELECT event_id, position, type, schema_version, payload, correlation_id, "
               "causation_id, compensates, actor, extra FROM events WHERE stream_key = $1 "
               "AND stream_version >= $2 ORDER BY stream_version LIMIT $3",
               "checking a retried batch");
  AppendResult result{first_version, first_position, first_position};
  std::size_t matched = 0;
  std::string extra;
  for (int i = 0; i < rows.rows() && matched < a.events.size(); ++i) {
    const EventData& want = a.events[matched];
    const auto id = rows.bytes(i, 0);
    if (id.size() != 16 || std::memcmp(id.data(), want.id.bytes().data(), 16) != 0) break;
    const Metadata& m = want.metadata;
    extra = m.values.empty() ? std::string() : encode_values(m.values);
    const auto extra_bytes =
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(extra.data()), extra.size());
    const bool same =
        rows.text(i, 2) == want.type &&
        rows.int64_or(i, 3, -1) == std::int64_t{want.schema_version} &&
        same_bytes(rows.bytes(i, 4), want.payload) &&
        same_optional_id(rows, i, 5, m.correlation_id) &&
        same_optional_id(rows, i, 6, m.causation_id) &&
        same_optional_id(rows, i, 7, m.compensates) && rows.text(i, 8) == m.actor &&
        (m.values.empty() ? rows.null(i, 9) : same_bytes(rows.bytes(i, 9), extra_bytes));
    if (!same) {
      throw DuplicateEventError(want.id.to_string(), std::string(a.stream),
                                "is stored already with other content (type, schema version, "
                                "payload or metadata differ): a retry must repeat the same "
                                "events, and a new event needs a new id");
    }
    result.stream_version = first_version + matched;
    result.last_position = static_cast<Position>(rows.int64_or(i, 1, 0));
    ++matched;
  }
  if (matched != a.events.size()) {
    throw DuplicateEventError(first.id.to_string(), std::string(a.stream),
                              "is stored already, but the batch only partly matches the events "
                              "stored with it (a retry must repeat the whole batch)");
  }
  return result;
}

std::optional<std::string> PgWriter::stored_in(PgConn& c, const EventId& id) {
  PgResult r = Params().id(id).run(c, pg::kStreamOfId.c_str(), "looking up an event id");
  if (r.rows() == 0) return std::nullopt;
  return std::string(r.text(0, 0));
}

[[noreturn]] void PgWriter::throw_duplicate(PgConn& c, const EventId& id, std::string_view stream) {
  const auto where = stored_in(c, id);
  throw DuplicateEventError(id.to_string(), std::string(stream),
                            "is stored already" + (where ? " in stream '" + *where + "'" : ""));
}

void PgWriter::check_compensates(PgConn& c, const EventData& e, std::int64_t key,
                                 std::string_view stream) {
  if (!e.metadata.compensates) return;
  PgResult r = Params()
                   .id(*e.metadata.compensates)
                   .run(c, "SELECT stream_key FROM events WHERE event_id = $1",
                        "looking up a compensated event");
  if (r.rows() == 1 && r.int64_or(0, 0, 0) == key) return;
  throw InvalidArgument("factum: event " + e.id.to_string() + " of stream '" + std::string(stream) +
                        "' compensates " + e.metadata.compensates->to_string() +
                        ", which is not an event of that stream");
}

// What an on_appending slot sees: the writer's connection, mid-transaction.
class PgWriter::HookTransaction final : public AppendTransaction {
 public:
  HookTransaction(PgConn& conn, Pending& pending, std::span<const RecordedEvent> events)
      : conn_(conn), pending_(pending), events_(events), sql_(conn) {}
  std::span<const RecordedEvent> events() const override { return events_; }
  Sql& sql() override { return sql_; }
  std::vector<RecordedEvent> read_log(Position from, std::size_t limit) override {
    std::vector<RecordedEvent> out;
    const Position before = events_.front().position;
    if (from >= before || limit == 0) return out;
    // Planned as factum's own statements are (the slot's SQL runs under the server's defaults).
    conn_.exec(pg::kFactumPlanner, "reading the log inside an append");
    PgResult r = Params()
                     .i64(static_cast<std::int64_t>(from))
                     .i64(static_cast<std::int64_t>(before))
                     .i64(static_cast<std::int64_t>(std::min<std::size_t>(limit, 1U << 30)))
                     .run(conn_, pg::row_reads(conn_.stored_previous()).log_range.c_str(),
                          "reading the log inside an append");
    conn_.exec(pg::kCallerPlanner, "reading the log inside an append");
    read_events(r, out);
    return out;
  }
  void on_outcome(std::function<void(AppendOutcome)> notice) override {
    pending_.notices.push_back(std::move(notice));
  }

 private:
  PgConn& conn_;
  Pending& pending_;
  std::span<const RecordedEvent> events_;
  PgSql sql_;
};

void PgWriter::run_hook(PgConn& c, Pending& p, std::vector<RecordedEvent>& events) {
  if (events.empty()) return;  // a retry: nothing written
  HookTransaction tx(c, p, events);
  // The slots' SQL is planned as the server would by default; the rest of the group's
  // statements as factum's (postgres/statements.hpp). When a slot throws, the savepoint around
  // its append (or the group's rollback) undoes the setting with the rest.
  c.exec(pg::kCallerPlanner, "running on_appending slots");
  (*p.hook)(tx);
  c.exec(pg::kFactumPlanner, "running on_appending slots");
  if (p.sink->events != nullptr) {
    std::move(events.begin(), events.end(), std::back_inserter(*p.sink->events));
  }
}

}  // namespace factum::detail::pg
