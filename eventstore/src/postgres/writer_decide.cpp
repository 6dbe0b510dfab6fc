// Groups decided from one look-up of the log: in one round trip when the writer remembers
// every stream of the group (speculate), else in two (begin_group, then the inserts).
#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <string>
#include <variant>

#include "keyring.hpp"
#include "postgres/rows.hpp"
#include "postgres/writer.hpp"
#include "query_index.hpp"
#include "tags_index.hpp"

namespace factum::detail::pg {

bool PgWriter::tag_table_needed(std::span<Pending* const> group) {
  return std::any_of(group.begin(), group.end(),
                     [](const Pending* p) { return p->checks != nullptr && p->checks->tag_table; });
}

std::string PgWriter::subjects_needed(std::span<Pending* const> group) {
  std::set<std::string> subjects;
  for (const Pending* p : group) {
    if (p->checks == nullptr || !p->checks->keys) continue;
    for (const AppendView& a : p->appends) {
      for (const EventData& e : a.events) {
        if (!e.metadata.values.contains(kSubjectsMetadataKey)) continue;
        try {
          for (std::string& s : subjects_of(e.metadata)) subjects.insert(std::move(s));
        } catch (const InvalidArgument&) {
          // Malformed: decide refuses that append alone.
        }
      }
    }
  }
  std::string out;
  for (const std::string& s : subjects) {
    if (!out.empty()) out.push_back('\n');  // subject ids hold no control characters
    out += s;
  }
  return out;
}

std::size_t PgWriter::send_condition(Pipeline& q, const AppendCondition& condition, Position before,
                                     bool guards) {
  const std::vector<ConditionStatement> statements = condition_statements(condition, before);
  for (const ConditionStatement& s : statements) {
    const std::string sql = pg::condition_sql(s.sql, guards);
    Params params;
    for (const SqlValue& v : s.params) {
      if (const auto* n = std::get_if<std::int64_t>(&v)) {
        params.i64(*n);
      } else {
        params.own(std::get<std::string>(v));  // tags and types: the only other values
      }
    }
    q.send(sql, params);
  }
  return statements.size();
}

void PgWriter::remember(const Pending& p, Versions& out) {
  for (std::size_t i = 0; i < p.appends.size() && i < p.results.size(); ++i) {
    out.emplace_back(p.appends[i].stream, p.results[i].stream_version);
  }
}

std::string PgWriter::run_one_trip(PgConn& c, Pipeline& q, std::vector<PgResult>& r,
                                   PgResult& failed, bool& committing) {
  committing = true;
  try {
    r = q.run("committing appends", &failed);
  } catch (const StorageError&) {
    if (c.ok()) throw;
    throw unknown_outcome();
  }
  if (failed.get() == nullptr) return "";
  const char* state = libpq().PQresultErrorField(failed.get(), PG_DIAG_SQLSTATE);
  std::string code = state != nullptr ? state : "";
  c.rollback();
  return code;
}

bool PgWriter::speculate(PgConn& c, std::span<Pending* const> group, std::int64_t now,
                         bool& committing) {
  if (!cache_.valid || contended_) return false;
  Known known;
  for (const Pending* p : group) {
    if (!native(*p)) return false;
    for (const AppendView& a : p->appends) {
      const auto it = cache_.streams.find(a.stream);
      // Its key known (not a stream made by a group flushed before a step-by-step append).
      if (it == cache_.streams.end() || it->second.key <= 0 ||
          !a.expected.matches(it->second.version) ||
          !known.streams.emplace(it->first, it->second).second) {
        return false;
      }
      for (const EventData& e : a.events) {
        if (e.metadata.compensates) return false;
      }
    }
  }
  std::string subjects = subjects_needed(group);
  if (!subjects.empty() && !key_table_) return false;  // the careful way makes the table
  Versions decided;
  Tail tail = cache_.tail;
  Batch batch(c.stored_previous());
  try {
    for (Pending* p : group) {
      decide(*p, known, batch, tail, now);
      remember(*p, decided);
    }
  } catch (...) {
    for (Pending* p : group) reset(*p);
    return false;  // the careful way reports it
  }
  // No BEGIN and COMMIT: the statements before a pipeline's sync run in one implicit
  // transaction, committed at the sync, rolled back whole when one of them fails.
  Pipeline q(c);
  Params guard;
  guard.i64(cache_.commits)
      .i64(static_cast<std::int64_t>(tail.position))
      .bytes(tail.hash.data(), tail.hash.size())
      .text(channel_)
      .i64(cache_.store)
      .i64(static_cast<std::int64_t>(cache_.tail.position))
      .bytes(cache_.tail.hash.data(), cache_.tail.hash.size());
  // The cached head too: a store whose history went another way (a promoted replica that lost
  // commits, a restore) fails here even where its commit count and table OID agree.
  q.send(
      "WITH u AS (UPDATE factum_store SET position = $2, hash = $3, commits = commits + 1 "
      "WHERE id = 1 AND commits = $1 AND tableoid::bigint = $5 AND position = $6 AND hash = $7 "
      "RETURNING commits) "
      "SELECT 1 / count(*), pg_notify($4, max(commits)::text), max(commits), " +
          std::string(pg::kCommitLockWait) + " FROM u",
      guard);
  // After the guard, which holds the head row's lock: the log is the cached one.
  const bool tag_table = tag_table_needed(group);
  if (tag_table && !tag_table_) q.send(tag_table_ddl(SqlDialect::postgres), Params());
  for (const Pending* p : group) {
    if (const AppendCondition* condition = condition_of(*p)) {
      send_condition(q, *condition, cache_.tail.position + 1, true);
    }
  }
  if (!subjects.empty()) {
    // A subject without a live key (forgotten, or unknown) fails it: 22003, as a condition's.
    Params keys;
    keys.own(std::move(subjects));
    q.send(pg::kMissingKeysGuard, keys);
  }
  batch.send(q);
  PgResult failed;
  std::vector<PgResult> r;
  const std::string code = run_one_trip(c, q, r, failed, committing);
  if (failed.get() != nullptr) {
    for (Pending* p : group) reset(*p);
    // A condition's guard found events (22003), or the tag table is gone (42P01, dropped behind
    // the store's back): the careful way reports the events found, or makes the table. The
    // cache is still exact: the guard before them found it so.
    if (code == "42P01") tag_table_ = key_table_ = false;
    if (code == "22003" || code == "42P01") return false;
    cache_.valid = false;
    if (code == "22012") contended_ = true;  // another writer committed since this one
    if (code == "22012" || code == "23505") return false;  // stale cache, stored id
    c.fail(failed.get(), "appending events");
  }
  if (tag_table) tag_table_ = true;
  std::int64_t commits = 0;
  if (r.empty() || r[0].rows() != 1 || !r[0].int64(0, 2, commits)) {
    cache_.valid = false;  // committed, but the head's answer is malformed
    return true;
  }
  cache_.commits = commits;
  cache_.tail = tail;
  for (const auto& [stream, version] : decided) {
    cache_.streams.find(stream)->second.version = version;
    learn(stream);
  }
  return true;
}

bool PgWriter::chain_on_server(PgConn& c, std::span<Pending* const> group, std::int64_t now,
                               bool& committing) {
  if (!contended_ || store_ == 0) return false;
  // Each append plain (no slots, no checks), to a stored stream whose key is known, each stream
  // once, no compensation (its target is checked by a look-up), few rows and bytes.
  std::size_t rows = 0;
  std::size_t bytes = 0;  // of payloads: each is sent twice (its column, and the hash's input)
  std::set<std::string_view> streams;
  for (const Pending* p : group) {
    if (p->hook != nullptr || p->checks != nullptr) return false;
    for (const AppendView& a : p->appends) {
      const auto it = seen_.find(a.stream);
      if (it == seen_.end() || it->second.key <= 0 ||
          a.expected.kind() == ExpectedVersion::Kind::no_stream ||
          a.expected.version() >
              static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
          !streams.insert(a.stream).second) {
        return false;
      }
      for (const EventData& e : a.events) {
        bytes += e.payload.size();
        if (e.metadata.compensates || ++rows > kMaxChainedRows || bytes > kMaxChainedBytes) {
          return false;
        }
      }
    }
  }
  if (rows == 0) return false;
  Pipeline q(c);
  q.send(pg::kLockHead, Params());
  Params inserted;
  inserted.i64(store_).text(channel_);
  for (const Pending* p : group) {
    for (const AppendView& a : p->appends) {
      const std::int64_t key = seen_.find(a.stream)->second.key;
      std::int64_t off = 0;
      for (const EventData& e : a.events) {
        inserted.i64(key).i64(++off);
        if (off > 1) {
          inserted.null(kInt8Oid).null(kTextOid);
        } else {
          switch (a.expected.kind()) {
            case ExpectedVersion::Kind::exact:
              inserted.i64(static_cast<std::int64_t>(a.expected.version()));
              break;
            case ExpectedVersion::Kind::stream_exists:
              inserted.i64(-1);  // an event stored
              break;
            default:
              inserted.null(kInt8Oid);  // any
          }
          inserted.text(a.stream);
        }
        add_columns(inserted, e, now);
        // The hash's input around the position and version (the server's).
        ChainHasher::AroundVersion input =
            hasher_.input_around_version(event_fields(a.stream, e, 0, 0, now));
        inserted.own_bytes(std::move(input.before)).own_bytes(std::move(input.after));
      }
    }
  }
  q.send(pg::chained_insert_sql(rows, c.stored_previous()), inserted);
  PgResult failed;
  std::vector<PgResult> r;
  const std::string code = run_one_trip(c, q, r, failed, committing);
  if (failed.get() != nullptr) {
    // Another table or a head row not sound (22012), a key that names another stream or an
    // expected version not met (22003), a stored id (23505): nothing is stored, and the careful
    // way decides (and reports) the group.
    if (code == "22003") {
      for (std::string_view stream : streams) seen_.erase(seen_.find(stream));
    }
    if (code == "22012") store_ = 0;
    if (code == "22012" || code == "22003" || code == "23505") return false;
    c.fail(failed.get(), "appending events");
  }
  // Committed: the head the group followed, each append's stream version before it, then the
  // chain as the server computed it.
  if (r.size() != 2) bad_head();
  const Tail start = head_row(r[0]);
  std::int64_t commits = 0;
  std::int64_t last = 0;
  if (r[1].rows() != 1 || !r[1].int64(0, 1, last) || !r[1].int64(0, 3, commits) ||
      r[1].null(0, 5)) {
    bad_head();
  }
  // Each append's stream version before it, ","-separated in the group's order.
  std::string_view bases = r[1].text(0, 5);
  bool more = true;  // bases not all read
  const auto next_base = [&] {
    StreamVersion v = 0;
    const char* const end = bases.data() + bases.size();
    const auto [stop, error] = std::from_chars(bases.data(), end, v);
    if (!more || error != std::errc() || (stop != end && *stop != ',')) bad_head();
    more = stop != end;
    bases.remove_prefix(static_cast<std::size_t>(stop - bases.data()) + (more ? 1 : 0));
    return v;
  };
  Tail tail = start;
  for (Pending* p : group) {
    const Tail first = tail;
    std::vector<RecordedEvent>* events = p->sink->events;
    for (const AppendView& a : p->appends) {
      StreamVersion version = next_base();
      AppendResult result;
      result.first_position = tail.position + 1;
      for (const EventData& e : a.events) {
        const EventFields f = event_fields(a.stream, e, tail.position + 1, ++version, now);
        const Hash hash = hasher_(tail.hash, f);
        if (events != nullptr) events->push_back(recorded_of(f, hash, tail.hash));
        tail = {f.position, hash};
      }
      seen_.find(a.stream)->second.version = version;
      result.stream_version = version;
      result.last_position = tail.position;
      p->results.push_back(result);
    }
    if (tail.position > first.position) {
      p->sink->first_written = first.position + 1;
      p->sink->last_written = tail.position;
    }
  }
  if (more || static_cast<Position>(last) != tail.position ||
      hash_of(r[1].bytes(0, 2), tail.position) != tail.hash) {
    // Committed, but not as this writer computes the chain: verify() will say where.
    cache_.valid = false;
    throw StorageError(StorageError::Kind::corrupt,
                       "factum: the server of '" + target_->shown +
                           "' chained the appended events otherwise than factum computes them "
                           "(the head it reports is not the appended events' last)");
  }
  // Alone again when no other writer committed since this one's last commit: then the
  // cache is exact, and the next group may speculate.
  const bool alone = cache_.valid && cache_.commits + 1 == commits &&
                     cache_.tail.position == start.position && cache_.tail.hash == start.hash &&
                     cache_.store == store_;
  contended_ = !alone;
  if (!alone) cache_.streams.clear();
  cache_.valid = true;
  cache_.commits = commits;
  cache_.store = store_;
  cache_.tail = tail;
  for (std::string_view stream : streams)
    cache_.streams[std::string(stream)] = seen_.find(stream)->second;
  return true;
}

Tail PgWriter::begin_group(PgConn& c, std::span<Pending* const> group, Known& known,
                           std::int64_t& commits) {
  std::string streams;
  std::string ids;
  static constexpr char kHex[] = "0123456789abcdef";
  const auto add_id = [&](const EventId& id) {
    if (!ids.empty()) ids.push_back(',');
    for (std::uint8_t byte : id.bytes()) {
      ids.push_back(kHex[byte >> 4]);
      ids.push_back(kHex[byte & 0xf]);
    }
  };
  for (const Pending* p : group) {
    for (const AppendView& a : p->appends) {
      if (!streams.empty()) streams.push_back('\n');  // stream ids hold no control characters
      streams += a.stream;
      for (const EventData& e : a.events) {
        add_id(e.id);
        if (e.metadata.compensates) add_id(*e.metadata.compensates);
      }
    }
  }
  Pipeline first(c);
  first.send("BEGIN", Params());
  first.send(pg::kLockHead, Params());
  Params stream_params;
  stream_params.own(std::move(streams));
  first.send(pg::kStreamsNamed, stream_params);
  Params id_params;
  id_params.own(std::move(ids));
  first.send(pg::kIdsStored, id_params);
  std::size_t sent = 4;  // BEGIN, the lock, the streams, the ids
  known.tag_table = tag_table_needed(group);
  if (known.tag_table) {
    first.send(tag_table_ddl(SqlDialect::postgres), Params());
    ++sent;
  }
  const std::size_t keys_at = sent;
  std::string subjects = subjects_needed(group);
  Params subject_params;
  if (!subjects.empty()) {
    first.send(key_table_ddl(SqlDialect::postgres), Params());
    subject_params.own(std::move(subjects));
    first.send(pg::kKeysOf, subject_params);
    known.keys_checked = true;
  }
  // The conditions of the appends decided here (native ones), each item's statement in turn.
  // Under the lock: every stored event is before the group's first.
  std::vector<std::pair<const Pending*, std::size_t>> conditions;  // and their statements
  for (const Pending* p : group) {
    const AppendCondition* condition = native(*p) ? condition_of(*p) : nullptr;
    if (condition == nullptr) continue;
    conditions.emplace_back(
        p, send_condition(first, *condition,
                          static_cast<Position>(std::numeric_limits<std::int64_t>::max()), false));
  }
  const std::vector<PgResult> r = first.run("locking the log's head");
  const Tail tail = head_row(r[1]);
  if (!r[1].int64(0, 2, commits) || !r[1].int64(0, 3, known.store)) bad_head();
  for (int i = 0; i < r[2].rows(); ++i) {
    known.streams[std::string(r[2].text(i, 0))] = {
        static_cast<StreamVersion>(r[2].int64_or(i, 1, 0)), r[2].int64_or(i, 2, 0)};
  }
  for (int i = 0; i < r[3].rows(); ++i) {
    std::optional<EventId> id;
    if (r[3].null(i, 1)) continue;  // not stored
    if (read_id(r[3], i, 0, id) && id) known.ids[*id] = {std::string(r[3].text(i, 1))};
  }
  if (known.keys_checked) {
    const PgResult& keys = r[keys_at + 1];
    for (int i = 0; i < keys.rows(); ++i) {
      known.keys[std::string(keys.text(i, 0))] = keys.int64_or(i, 1, 0) == 1;
    }
  }
  std::size_t k = r.size();
  for (const auto& [p, statements] : conditions) k -= statements;
  for (const auto& [p, statements] : conditions) {
    std::vector<Position>& found = known.conflicts[p];
    for (const std::size_t end = k + statements; k < end; ++k) {
      for (int i = 0; i < r[k].rows(); ++i) {
        found.push_back(static_cast<Position>(r[k].int64_or(i, 0, 0)));
      }
    }
  }
  return tail;
}

bool PgWriter::decidable(const Pending& p, const Known& known,
                         const std::set<std::string, std::less<>>& touched,
                         const std::set<EventId>& written) {
  if (!native(p)) return false;
  std::set<std::string_view> mine;
  for (const AppendView& a : p.appends) {
    if (touched.count(a.stream) != 0 || !mine.insert(a.stream).second) return false;
    if (known.ids.count(a.events.front().id) != 0) return false;
    for (const EventData& e : a.events) {
      if (written.count(e.id) != 0) return false;
    }
  }
  return true;
}

void PgWriter::decide(Pending& p, Known& known, Batch& out, Tail& tail, std::int64_t now) {
  // Every check first, so that nothing of `p` is added to `out` when one fails.
  for (const AppendView& a : p.appends) {
    const auto stream = known.streams.find(a.stream);
    const StreamVersion current = stream != known.streams.end() ? stream->second.version : 0;
    if (!a.expected.matches(current)) {
      for (const EventData& e : a.events.subspan(1)) {
        const auto stored = known.ids.find(e.id);
        if (stored != known.ids.end()) duplicate(e.id, a.stream, stored->second.stream);
      }
      throw ConcurrencyError(std::string(a.stream), a.expected.to_string(), current);
    }
    for (std::size_t i = 0; i < a.events.size(); ++i) {
      const EventData& e = a.events[i];
      if (const auto stored = known.ids.find(e.id); stored != known.ids.end()) {
        duplicate(e.id, a.stream, stored->second.stream);
      }
      if (e.metadata.compensates) {
        const auto target = known.ids.find(*e.metadata.compensates);
        const bool earlier_here =
            std::any_of(a.events.begin(), a.events.begin() + static_cast<std::ptrdiff_t>(i),
                        [&](const EventData& x) { return x.id == *e.metadata.compensates; });
        if (!earlier_here && (target == known.ids.end() || target->second.stream != a.stream)) {
          throw InvalidArgument("factum: event " + e.id.to_string() + " of stream '" +
                                std::string(a.stream) + "' compensates " +
                                e.metadata.compensates->to_string() +
                                ", which is not an event of that stream");
        }
      }
    }
  }
  // As EventStore's hook would, after the streams' checks: the condition, the keys, the tags.
  if (const AppendCondition* condition = condition_of(p)) {
    // The stored events found (none in a speculation: its guards found none), and the events
    // of the group's appends decided before this one.
    const auto stored = known.conflicts.find(&p);
    std::vector<Position> found =
        stored != known.conflicts.end() ? stored->second : std::vector<Position>();
    for (const Known::Decided& d : known.decided) {
      if (d.position > condition->after &&
          matches(condition->fail_if_events_match, d.event->type, d.event->metadata)) {
        found.push_back(d.position);
      }
    }
    fail_condition(*condition, std::move(found));
  }
  if (p.checks != nullptr && p.checks->keys) {
    // Malformed subjects are refused here; in a speculation, its guard checks the keys.
    for (const AppendView& a : p.appends) {
      for (const EventData& e : a.events) {
        if (!e.metadata.values.contains(kSubjectsMetadataKey)) continue;
        for (const std::string& subject : subjects_of(e.metadata)) {
          if (!known.keys_checked) continue;
          const auto key = known.keys.find(subject);
          if (key == known.keys.end() || !key->second) {
            missing_key(e.id, a.stream, subject, key != known.keys.end());
          }
        }
      }
    }
  }
  std::vector<std::vector<std::string>> tags;  // of each event, in order
  if (p.checks != nullptr && p.checks->tags) {
    for (const AppendView& a : p.appends) {
      for (const EventData& e : a.events) tags.push_back(tags_of(e.metadata));
    }
  }
  std::vector<AppendResult> results;
  results.reserve(p.appends.size());
  std::vector<RecordedEvent>* committed = p.sink->events;
  Tail t = tail;
  std::size_t n = 0;  // events so far
  for (const AppendView& a : p.appends) {
    const auto stream = known.streams.find(a.stream);
    StreamVersion version = stream != known.streams.end() ? stream->second.version : 0;
    const std::int64_t key = stream != known.streams.end() ? stream->second.key : 0;
    if (stream == known.streams.end()) out.add_stream(a.stream);
    AppendResult result;
    result.first_position = t.position + 1;
    for (const EventData& e : a.events) {
      const EventFields f = event_fields(a.stream, e, t.position + 1, ++version, now);
      const Hash hash = hasher_(t.hash, f);
      Params& row = out.add_row(key, a.stream);
      row.i64(static_cast<std::int64_t>(f.position))
          .i64(static_cast<std::int64_t>(f.stream_version));
      add_columns(row, e, now, hash);
      if (out.previous()) add_hash(row, t.hash);
      if (committed != nullptr) committed->push_back(recorded_of(f, hash, t.hash));
      if (n < tags.size()) {
        for (const std::string& tag : tags[n]) out.add_tag(tag, f.position);
      }
      known.decided.push_back({f.position, &e});
      ++n;
      t = {f.position, hash};
    }
    result.stream_version = version;
    result.last_position = t.position;
    results.push_back(result);
  }
  p.results = std::move(results);
  if (t.position > tail.position) {
    p.sink->first_written = tail.position + 1;
    p.sink->last_written = t.position;
  }
  tail = t;
}

[[noreturn]] void PgWriter::duplicate(const EventId& id, std::string_view stream,
                                      const std::string& where) {
  throw DuplicateEventError(id.to_string(), std::string(stream),
                            "is stored already in stream '" + where + "'");
}

[[noreturn]] void PgWriter::bad_head() const {
  throw StorageError(StorageError::Kind::corrupt,
                     "factum: the store of '" + target_->shown +
                         "' is damaged: its factum_store row is missing or malformed");
}

Tail PgWriter::head_row(const PgResult& r) const {
  std::int64_t position = 0;
  if (r.rows() != 1 || !r.int64(0, 0, position) || position < 0) bad_head();
  return {static_cast<Position>(position), hash_of(r.bytes(0, 1), static_cast<Position>(position))};
}

}  // namespace factum::detail::pg
