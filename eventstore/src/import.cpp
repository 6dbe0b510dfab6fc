// EventStore::import_events and import_log: append exported events verbatim (their positions,
// versions, ids, recorded-at times and hashes), checking that each continues this store's
// chain. Each call runs in one write_sql transaction, so it is serialised with appends and atomic
// like them; everything it writes is what the writer would have written for the same events
// (docs/storage-format.md).
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "event_rows.hpp"
#include "factum/eventstore/event_store.hpp"
#include "hash_chain.hpp"
#include "keyring.hpp"
#include "tags_index.hpp"
#include "validation.hpp"

namespace factum {
namespace {

// The times a store holds: the years 1 to 9999 of ISO 8601, in microseconds since 1970
// (docs/storage-format.md). Every reader prints them; no append makes others.
constexpr std::int64_t kEarliestRecordedAtUs = -62135596800000000;  // 0001-01-01T00:00:00Z
constexpr std::int64_t kLatestRecordedAtUs = 253402300799999999;    // 9999-12-31T23:59:59.999999Z

std::string at(const RecordedEvent& e) { return "position " + std::to_string(e.position); }

SqlValue id_value(const EventId& id) {
  Bytes b(id.bytes().size());
  std::memcpy(b.data(), id.bytes().data(), b.size());
  return b;
}

SqlValue optional_id(const std::optional<EventId>& id) {
  return id ? id_value(*id) : SqlValue(nullptr);
}

SqlValue bytes_of(const void* data, std::size_t size) {
  Bytes b(size);
  if (size > 0) std::memcpy(b.data(), data, size);
  return b;
}

// The checks append() makes on its arguments, for one recorded event.
void validate(const RecordedEvent& e, const StoreOptions& options) {
  EventData d;
  d.id = e.id;
  d.type = e.type;
  d.metadata.compensates = e.metadata.compensates;
  detail::validate_batch(e.stream_id, {&d, 1}, options);
  const std::int64_t us = e.recorded_at.time_since_epoch().count();
  if (us < kEarliestRecordedAtUs || us > kLatestRecordedAtUs) {
    throw InvalidArgument("factum: the event at " + at(e) + " was recorded at " +
                          std::to_string(us) +
                          " microseconds since 1970, outside the times a store holds "
                          "(0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z)");
  }
  if (e.payload.size() > options.max_payload_size) {
    throw InvalidArgument("factum: the event at " + at(e) + " has a payload of " +
                          std::to_string(e.payload.size()) + " bytes; the limit is " +
                          std::to_string(options.max_payload_size));
  }
}

// One import transaction: the head it continues and the streams it has touched.
class Importer {
 public:
  Importer(Sql& sql, const StoreOptions& options)
      : sql_(sql), options_(options), keeps_previous_(keeps_previous(sql)) {
    read_head();
  }

  void add(const RecordedEvent& e) {
    validate(e, options_);
    if (e.position != head_.position + 1) {
      throw InvalidArgument("factum: cannot import the event at " + at(e) +
                            ": the store's log ends at position " + std::to_string(head_.position) +
                            ", so the next must be " + std::to_string(head_.position + 1));
    }
    Stream& stream = stream_of(e.stream_id);
    if (e.stream_version != stream.version + 1) {
      throw InvalidArgument("factum: cannot import the event at " + at(e) + ": it is version " +
                            std::to_string(e.stream_version) + " of stream '" + e.stream_id +
                            "', whose last version is " + std::to_string(stream.version));
    }
    check_id(e);
    check_compensates(e, stream);
    if (hasher_(head_.hash, detail::fields_of(e)) != e.hash) {
      throw CorruptEventError(e.position,
                              "its hash does not match its fields and the previous event's hash "
                              "(the export was altered, or does not continue this log)");
    }
    insert(e, stream);
    if (!tag_table_ && e.metadata.values.contains(kTagsMetadataKey)) {
      detail::ensure_tag_table(sql_);  // once per import
      tag_table_ = true;
    }
    detail::index_tags(sql_, {&e, 1});  // a malformed tags value is refused here
    stream.version = e.stream_version;
    head_ = {e.position, e.hash};
    // A forget in the imported log forgets here too: the subject's key (imported with the
    // keys, or none) is deleted and no key of it is ever made again in this store.
    if (const std::optional<std::string> subject = forgotten_subject(e)) {
      detail::forget_key(sql_, *subject, e.recorded_at.time_since_epoch().count());
    }
  }

  const Head& head() const noexcept { return head_; }

 private:
  struct Stream {
    std::int64_t key = 0;
    StreamVersion version = 0;
  };

  // Whether the store's event rows keep their previous hash (PostgreSQL stores made since
  // 2026-12-07: docs/postgres.md, "Schema"): imported events keep it too, as appended ones do.
  static bool keeps_previous(Sql& sql) {
    return sql.dialect() == SqlDialect::postgres &&
           sql.query_integer(detail::kKeepsPreviousHashSql) == 1;
  }

  void read_head() {
    sql_.query(detail::kHeadSql, {}, [&](const SqlRow& row) {
      const Bytes hash = row.blob(1);
      head_ = detail::head_of(static_cast<Position>(row.integer(0)), hash);
    });
  }

  Stream& stream_of(const std::string& id) {
    const auto found = streams_.find(id);
    if (found != streams_.end()) return found->second;
    std::optional<std::int64_t> key =
        sql_.query_integer("SELECT stream_key FROM streams WHERE stream_id = ?1", {id});
    Stream s;
    if (key) {
      s.key = *key;
      s.version = static_cast<StreamVersion>(
          sql_.query_integer("SELECT max(stream_version) FROM events WHERE stream_key = ?1", {*key})
              .value_or(0));
    } else {
      sql_.execute("INSERT INTO streams (stream_id, category) VALUES (?1, ?2)",
                   {id, std::string(category_of(id))});
      s.key = *sql_.query_integer("SELECT stream_key FROM streams WHERE stream_id = ?1", {id});
    }
    return streams_.emplace(id, s).first->second;
  }

  void check_id(const RecordedEvent& e) {
    if (sql_.query_integer("SELECT position FROM events WHERE event_id = ?1", {id_value(e.id)})) {
      throw DuplicateEventError(e.id.to_string(), e.stream_id, "is stored already");
    }
  }

  void check_compensates(const RecordedEvent& e, const Stream& stream) {
    if (!e.metadata.compensates) return;
    const auto key = sql_.query_integer("SELECT stream_key FROM events WHERE event_id = ?1",
                                        {id_value(*e.metadata.compensates)});
    if (key == stream.key) return;
    throw InvalidArgument("factum: the event at " + at(e) + " compensates " +
                          e.metadata.compensates->to_string() +
                          ", which is not an earlier event of stream '" + e.stream_id + "'");
  }

  void insert(const RecordedEvent& e, const Stream& stream) {
    const Metadata& m = e.metadata;
    const std::string extra = m.values.empty() ? std::string() : detail::encode_values(m.values);
    std::vector<SqlValue> params{
        static_cast<std::int64_t>(e.position),
        stream.key,
        static_cast<std::int64_t>(e.stream_version),
        id_value(e.id),
        e.type,
        static_cast<std::int64_t>(e.schema_version),
        e.payload,
        optional_id(m.correlation_id),
        optional_id(m.causation_id),
        optional_id(m.compensates),
        m.actor.empty() ? SqlValue(nullptr) : SqlValue(m.actor),
        m.values.empty() ? SqlValue(nullptr) : bytes_of(extra.data(), extra.size()),
        static_cast<std::int64_t>(e.recorded_at.time_since_epoch().count()),
        bytes_of(e.hash.data(), e.hash.size())};
    if (keeps_previous_) params.push_back(bytes_of(head_.hash.data(), head_.hash.size()));
    sql_.execute(keeps_previous_ ? "INSERT INTO events (position, stream_key, stream_version, "
                                   "event_id, type, schema_version, payload, correlation_id, "
                                   "causation_id, compensates, actor, extra, recorded_at, hash, "
                                   "previous_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                                   "?10, ?11, ?12, ?13, ?14, ?15)"
                                 : "INSERT INTO events (position, stream_key, stream_version, "
                                   "event_id, type, schema_version, payload, correlation_id, "
                                   "causation_id, compensates, actor, extra, recorded_at, hash) "
                                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                                   "?13, ?14)",
                 params);
  }

  Sql& sql_;
  const StoreOptions& options_;
  const bool keeps_previous_;
  Head head_;
  std::map<std::string, Stream, std::less<>> streams_;
  detail::ChainHasher hasher_;
  bool tag_table_ = false;  // ensure_tag_table ran in this transaction
};

}  // namespace

Head EventStore::import_events(std::span<const RecordedEvent> events) {
  if (events.empty()) throw InvalidArgument("factum: import_events was given no events");
  return import_log([events](const ImportBatches& import) { import(events); });
}

Head EventStore::import_log(const std::function<void(const ImportBatches& import)>& produce) {
  const bool notify = !on_appended().empty();
  std::vector<RecordedEvent> committed;  // copies for on_appended, when it has slots
  Head head;
  Hash before{};
  write_sql([&](Sql& sql) {
    Importer importer(sql, options());
    before = importer.head().hash;
    produce([&](std::span<const RecordedEvent> events) {
      for (const RecordedEvent& e : events) importer.add(e);
      if (notify) committed.insert(committed.end(), events.begin(), events.end());
    });
    head = importer.head();
  });
  if (!committed.empty()) {
    for (RecordedEvent& e : committed) {
      e.previous_hash = before;
      before = e.hash;
    }
    on_appended()(committed);
  }
  return head;
}

}  // namespace factum
