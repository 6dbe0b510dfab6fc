// One append inside the SQLite writer's transaction (Writer::apply_one): the stream's key and
// last version (looked up, or remembered from the last clean commit), the expected-version
// check, the look-ups of event ids that tell a retried batch from a duplicate, the compensation
// check, and the inserts. The transaction around it is in writer.cpp.
#include "sqlite/writer.hpp"

#include <cstring>
#include <string>

#include "sqlite/rows.hpp"

namespace factum::detail {
namespace {

void bind_optional_id(Statement& s, int index, const std::optional<EventId>& id) {
  if (id) {
    s.bind_blob(index, id->bytes().data(), id->bytes().size());
  } else {
    s.bind_null(index);
  }
}

template <typename A, typename B>
bool same_bytes(const A& stored, const B& want) {
  return stored.size() == want.size() &&
         (want.size() == 0 || std::memcmp(stored.data(), want.data(), want.size()) == 0);
}

bool same_optional_id(const Statement& s, int col, const std::optional<EventId>& want) {
  if (s.column_type(col) == SQLITE_NULL) return !want;
  return want && same_bytes(s.column_blob(col), want->bytes());
}

// True when the stored event at the current row of `s` (columns: event_id, position, type,
// schema_version, payload, correlation_id, causation_id, compensates, actor, extra) has the
// content of `want`: the test that tells a retried event from another event with the same id.
bool same_content(const Statement& s, const EventData& want) {
  const Metadata& m = want.metadata;
  if (s.column_text(2) != want.type || s.column_int(3) != std::int64_t{want.schema_version} ||
      !same_bytes(s.column_blob(4), want.payload) || !same_optional_id(s, 5, m.correlation_id) ||
      !same_optional_id(s, 6, m.causation_id) || !same_optional_id(s, 7, m.compensates) ||
      s.column_text(8) != m.actor) {
    return false;
  }
  if (m.values.empty()) return s.column_type(9) == SQLITE_NULL;
  const std::string extra = encode_values(m.values);
  return same_bytes(s.column_blob(9), extra);
}

}  // namespace

Writer::Queries::Queries(Database& db)
    : find_stream(db, "SELECT stream_key FROM streams WHERE stream_id = ?1"),
      insert_stream(db, "INSERT INTO streams (stream_id, category) VALUES (?1, ?2)"),
      last_version(db,
                   "SELECT stream_version FROM events WHERE stream_key = ?1 "
                   "ORDER BY stream_version DESC LIMIT 1"),
      by_id(db,
            "SELECT e.position, e.stream_key, e.stream_version, s.stream_id FROM events e "
            "LEFT JOIN streams s ON s.stream_key = e.stream_key WHERE e.event_id = ?1"),
      ids_from(db,
               "SELECT event_id, position, type, schema_version, payload, correlation_id, "
               "causation_id, compensates, actor, extra FROM events WHERE stream_key = ?1 "
               "AND stream_version >= ?2 ORDER BY stream_version LIMIT ?3"),
      tail(db, kHeadSql),
      log_range(db, select_events("FROM events e LEFT JOIN streams s ON s.stream_key = "
                                  "e.stream_key WHERE e.position >= ?1 AND e.position < ?2 "
                                  "ORDER BY e.position LIMIT ?3")
                        .c_str()),
      insert_event(db,
                   "INSERT INTO events (position, stream_key, stream_version, event_id, type, "
                   "schema_version, payload, correlation_id, causation_id, compensates, actor, "
                   "extra, recorded_at, hash) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)") {}

// A retry is looked for (find_retry) when the expected version does not match, or when the
// first event's insert is refused: a batch that can be written costs no look-up by id (the
// unique index and the insert guard check the ids as the rows go in).
AppendResult Writer::apply_one(const AppendView& a, Tail& tail, std::int64_t now,
                               std::vector<RecordedEvent>* committed) {
  std::optional<std::int64_t> key;
  StreamVersion current = 0;
  const auto known = remembering_ ? remembered_.streams.find(a.stream) : remembered_.streams.end();
  if (known != remembered_.streams.end()) {
    key = known->second.key;
    current = known->second.version;
  } else {
    key = find_stream(a.stream);
    current = key ? last_version(*key) : 0;
  }
  if (!a.expected.matches(current)) {
    if (auto retry = find_retry(a, key)) return *retry;
    // A batch that partly overlaps stored events is a duplicate, whatever its version.
    for (const EventData& e : a.events.subspan(1)) {
      if (is_stored(e.id)) throw_duplicate(e.id, a.stream);
    }
    throw ConcurrencyError(std::string(a.stream), a.expected.to_string(), current);
  }
  if (!key) {
    // A new stream cannot hold a retry, but its first id may be stored elsewhere: found before
    // the stream row is written, such a duplicate fails alone instead of making its group
    // start over under savepoints.
    if (auto retry = find_retry(a, key)) return *retry;
    key = insert_stream(a.stream);
  }
  AppendResult result;
  result.first_position = tail.position + 1;
  StreamVersion version = current;
  if (committed != nullptr && committed->empty()) committed->reserve(a.events.size());
  for (const EventData& e : a.events) {
    if (!compensates_in_stream(e, *key)) {
      // A retried batch is told apart before its content is judged, as when the version does
      // not match: a stored compensation appended again elsewhere is a duplicate.
      if (&e == &a.events.front()) {
        if (auto retry = find_retry(a, key)) return *retry;
      }
      throw_bad_compensation(e, a.stream);
    }
    const EventFields f = event_fields(a.stream, e, tail.position + 1, ++version, now);
    const Hash hash = hasher_(tail.hash, f);
    if (!insert_event(*key, f, hash)) {
      // The first event's id may be stored: a retry (nothing of this append is written yet).
      if (&e == &a.events.front()) {
        if (auto retry = find_retry(a, key)) return *retry;
      }
      refused(f);
    }
    if (committed != nullptr) committed->push_back(recorded_of(f, hash, tail.hash));
    tail = {f.position, hash};
  }
  if (remembering_) remember(a.stream, *key, version);
  result.stream_version = version;
  result.last_position = tail.position;
  return result;
}

void Writer::remember(std::string_view stream, std::int64_t key, StreamVersion version) {
  auto it = remembered_.streams.find(stream);
  if (it != remembered_.streams.end()) {
    it->second = {key, version};
    return;
  }
  if (remembered_.streams.size() >= Remembered::kMaxStreams) remembered_.streams.clear();
  remembered_.streams.emplace(std::string(stream), Remembered::StreamState{key, version});
}

// The file's data version: changes with every commit to it, by any connection (this one's
// included), and is read when a transaction begins.
std::optional<unsigned> Writer::data_version() {
  unsigned version = 0;
  if (sqlite3_file_control(db_.get(), "main", SQLITE_FCNTL_DATA_VERSION, &version) != SQLITE_OK) {
    return std::nullopt;  // not known: nothing is remembered
  }
  return version;
}

Writer::Tail Writer::read_tail() {
  const Head head = read_head(q_->tail);
  return {head.position, head.hash};
}

std::optional<std::int64_t> Writer::find_stream(std::string_view stream) {
  StatementScope scope(q_->find_stream);
  q_->find_stream.bind(1, stream);
  if (!q_->find_stream.step("looking up a stream")) return std::nullopt;
  return q_->find_stream.column_int(0);
}

StreamVersion Writer::last_version(std::int64_t stream_key) {
  StatementScope scope(q_->last_version);
  q_->last_version.bind(1, stream_key);
  return q_->last_version.step("reading a stream's version")
             ? static_cast<StreamVersion>(q_->last_version.column_int(0))
             : 0;
}

std::int64_t Writer::insert_stream(std::string_view stream) {
  StatementScope scope(q_->insert_stream);
  q_->insert_stream.bind(1, stream);
  q_->insert_stream.bind(2, category_of(stream));
  q_->insert_stream.step("creating a stream");
  return sqlite3_last_insert_rowid(db_.get());
}

// A batch whose first id is stored already is either a retry (all ids stored contiguously,
// in order, in this stream: return the first try's result) or a duplicate (throw).
std::optional<AppendResult> Writer::find_retry(const AppendView& a,
                                               std::optional<std::int64_t> key) {
  const EventData& first = a.events.front();
  Position first_position = 0;
  StreamVersion first_version = 0;
  {
    StatementScope scope(q_->by_id);
    q_->by_id.bind_blob(1, first.id.bytes().data(), first.id.bytes().size());
    if (!q_->by_id.step("looking up an event id")) return std::nullopt;
    if (!key || q_->by_id.column_int(1) != *key) {
      throw DuplicateEventError(
          first.id.to_string(), std::string(a.stream),
          "is stored already in stream '" + std::string(q_->by_id.column_text(3)) + "'");
    }
    first_position = static_cast<Position>(q_->by_id.column_int(0));
    first_version = static_cast<StreamVersion>(q_->by_id.column_int(2));
  }
  StatementScope scope(q_->ids_from);
  q_->ids_from.bind(1, *key);
  q_->ids_from.bind(2, static_cast<std::int64_t>(first_version));
  q_->ids_from.bind(3, static_cast<std::int64_t>(a.events.size()));
  AppendResult result{first_version, first_position, first_position};
  std::size_t matched = 0;
  while (matched < a.events.size() && q_->ids_from.step("checking a retried batch")) {
    const auto id = q_->ids_from.column_blob(0);
    const EventData& want = a.events[matched];
    if (!same_bytes(id, want.id.bytes())) break;
    if (!same_content(q_->ids_from, want)) {
      throw DuplicateEventError(want.id.to_string(), std::string(a.stream),
                                "is stored already with other content (type, schema version, "
                                "payload or metadata differ): a retry must repeat the same "
                                "events, and a new event needs a new id");
    }
    result.stream_version = first_version + matched;
    result.last_position = static_cast<Position>(q_->ids_from.column_int(1));
    ++matched;
  }
  if (matched != a.events.size()) {
    throw DuplicateEventError(first.id.to_string(), std::string(a.stream),
                              "is stored already, but the batch only partly matches the events "
                              "stored with it (a retry must repeat the whole batch)");
  }
  return result;
}

// True when `e` compensates nothing, or an event of the stream with key `key`.
bool Writer::compensates_in_stream(const EventData& e, std::int64_t key) {
  if (!e.metadata.compensates) return true;
  StatementScope scope(q_->by_id);
  const auto& target = e.metadata.compensates->bytes();
  q_->by_id.bind_blob(1, target.data(), target.size());
  return q_->by_id.step("looking up a compensated event") && q_->by_id.column_int(1) == key;
}

void Writer::throw_bad_compensation(const EventData& e, std::string_view stream) {
  throw InvalidArgument("factum: event " + e.id.to_string() + " of stream '" + std::string(stream) +
                        "' compensates " + e.metadata.compensates->to_string() +
                        ", which is not an event of that stream");
}

bool Writer::insert_event(std::int64_t key, const EventFields& f, const Hash& hash) {
  const Metadata& m = *f.metadata;
  StatementScope scope(q_->insert_event);
  Statement& s = q_->insert_event;
  s.bind(1, static_cast<std::int64_t>(f.position));
  s.bind(2, key);
  s.bind(3, static_cast<std::int64_t>(f.stream_version));
  s.bind_blob(4, f.id->bytes().data(), f.id->bytes().size());
  s.bind(5, f.type);
  s.bind(6, static_cast<std::int64_t>(f.schema_version));
  s.bind_blob(7, f.payload);
  bind_optional_id(s, 8, m.correlation_id);
  bind_optional_id(s, 9, m.causation_id);
  bind_optional_id(s, 10, m.compensates);
  if (m.actor.empty()) {
    s.bind_null(11);
  } else {
    s.bind(11, std::string_view(m.actor));
  }
  std::string extra;
  if (m.values.empty()) {
    s.bind_null(12);
  } else {
    extra = encode_values(m.values);
    s.bind_blob(12, extra.data(), extra.size());
  }
  s.bind(13, f.recorded_at_us);
  s.bind_blob(14, hash.data(), hash.size());
  const int rc = s.step_rc();
  if (rc == SQLITE_DONE) return true;
  // A stored id fails the unique index or, first, the insert guard (events_are_appended).
  if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_TRIGGER) {
    refused_rc_ = rc;
    refused_detail_ = sqlite3_errmsg(db_.get());
    s.reset();
    return false;
  }
  throw_sqlite(db_.get(), rc, "appending an event", db_.file());
}

// After insert_event refused `f`: a DuplicateEventError when its id is stored, else the
// constraint's error.
void Writer::refused(const EventFields& f) {
  if (is_stored(*f.id)) throw_duplicate(*f.id, f.stream_id);
  throw_sqlite(refused_rc_, refused_detail_, "appending an event", db_.file());
}

bool Writer::is_stored(const EventId& id) {
  StatementScope scope(q_->by_id);
  q_->by_id.bind_blob(1, id.bytes().data(), id.bytes().size());
  return q_->by_id.step("looking up an event id");
}

void Writer::throw_duplicate(const EventId& id, std::string_view stream) {
  StatementScope scope(q_->by_id);
  q_->by_id.bind_blob(1, id.bytes().data(), id.bytes().size());
  const std::string where = q_->by_id.step("looking up an event id")
                                ? " in stream '" + std::string(q_->by_id.column_text(3)) + "'"
                                : "";
  throw DuplicateEventError(id.to_string(), std::string(stream), "is stored already" + where);
}

}  // namespace factum::detail
