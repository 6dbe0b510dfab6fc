#include "sqlite/reader.hpp"

#include <cstring>
#include <limits>
#include <string>

#include "sqlite/rows.hpp"
#include "sqlite/schema.hpp"

namespace factum::detail {
namespace {

// The open flags of read connections: never create, read-only when the store is.
int reader_flags(const StoreOptions& options) {
  return options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
}

Statement& statement_for(ReadConnection& c, PageQuery::Kind kind) {
  switch (kind) {
    case PageQuery::Kind::all:
      return c.all_page;
    case PageQuery::Kind::stream_forward:
      return c.stream_forward;
    case PageQuery::Kind::stream_backward:
      return c.stream_backward;
    case PageQuery::Kind::category:
      return c.category_page;
  }
  return c.all_page;
}

// kEventColumns with NULL for the previous event's hash: for readers that chain it themselves.
std::string unjoined_columns() {
  std::string columns = kEventColumns;
  columns.replace(columns.rfind("p.hash"), 6, "NULL");
  return columns;
}

// The stream's category follows the event columns.
std::string verify_select() {
  return "SELECT " + unjoined_columns() +
         ", s.category FROM events e LEFT JOIN streams s ON s.stream_key = e.stream_key "
         "WHERE e.position >= ?1 ORDER BY e.position LIMIT ?2";
}

// A page of the whole log without the previous-event join: the reader carries each event's
// hash to the next one (HashCarry), which saves a B-tree search per event.
std::string all_page_select() {
  return "SELECT " + unjoined_columns() +
         " FROM events e LEFT JOIN streams s ON s.stream_key = e.stream_key "
         "WHERE e.position >= ?1 ORDER BY e.position LIMIT ?2";
}

}  // namespace

ReadConnection::ReadConnection(const std::filesystem::path& path, const StoreOptions& options,
                               bool immutable)
    : db(path, reader_flags(options), static_cast<int>(options.busy_timeout.count()), immutable),
      // LEFT JOIN: an event whose stream row is missing is reported as damaged, not skipped.
      all_page(db, all_page_select().c_str()),
      stream_forward(db,
                     select_events("FROM streams s JOIN events e ON e.stream_key = s.stream_key "
                                   "WHERE s.stream_id = ?1 AND e.stream_version >= ?2 "
                                   "ORDER BY e.stream_version LIMIT ?3")
                         .c_str()),
      stream_backward(db,
                      select_events("FROM streams s JOIN events e ON e.stream_key = s.stream_key "
                                    "WHERE s.stream_id = ?1 AND e.stream_version <= ?2 "
                                    "ORDER BY e.stream_version DESC LIMIT ?3")
                          .c_str()),
      // CROSS JOIN keeps events as the outer loop: a category is read in position order by
      // walking the log, never by sorting the category.
      category_page(db, select_events("FROM events e CROSS JOIN streams s "
                                      "WHERE s.stream_key = e.stream_key AND s.category = ?1 "
                                      "AND e.position >= ?2 ORDER BY e.position LIMIT ?3")
                            .c_str()),
      stream_version(db,
                     "SELECT e.stream_version FROM streams s JOIN events e "
                     "ON e.stream_key = s.stream_key WHERE s.stream_id = ?1 "
                     "ORDER BY e.stream_version DESC LIMIT 1"),
      head(db, kHeadSql),
      hash_at(db, "SELECT hash FROM events WHERE position = ?1"),
      by_id(db, select_events("FROM events e JOIN streams s ON s.stream_key = e.stream_key "
                              "WHERE e.event_id = ?1")
                    .c_str()),
      compensations(db, select_events("FROM events e JOIN streams s ON s.stream_key = e.stream_key "
                                      "WHERE e.compensates = ?1 ORDER BY e.position")
                            .c_str()),
      // verify chains the hashes itself: no previous-event join (NULL in its column), which
      // saves a B-tree search per event (bench/verify_bench.cpp).
      verify_page(db, verify_select().c_str()),
      sequence(db, "SELECT seq FROM sqlite_sequence WHERE name = 'events'"),
      log_end(db,
              "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0), "
              "coalesce((SELECT max(position) FROM events), 0)"),
      event_rows(db, "SELECT count(*), min(position), max(position) FROM events"),
      empty_streams(db,
                    "SELECT stream_id FROM streams s WHERE NOT EXISTS "
                    "(SELECT 1 FROM events e WHERE e.stream_key = s.stream_key) LIMIT 1"),
      cache(db) {}

ReaderPool::ReaderPool(std::filesystem::path path, StoreOptions options, bool immutable)
    : path_(std::move(path)), options_(std::move(options)), immutable_(immutable) {}

ReaderPool::Lease ReaderPool::acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(conn));
    }
  }
  auto conn = std::make_unique<ReadConnection>(path_, options_, immutable_);
  configure_connection(conn->db, options_, /*reader=*/true);
  return Lease(*this, std::move(conn));
}

void ReaderPool::release(std::unique_ptr<ReadConnection> conn) noexcept {
  if (!conn) return;
  std::lock_guard lock(mu_);
  try {
    idle_.push_back(std::move(conn));
  } catch (...) {
    // Out of memory: the connection closes instead of going back to the pool.
  }
}

namespace {

// Fills in previous_hash along a read of the whole log, whose page query selects NULL for it
// (all_page): from the event read just before when it is the previous position, else (the
// read's first event, or one after a gap) from one indexed look-up. The look-up runs while the
// page's statement is open, so it reads the same snapshot. The results equal the join's: a
// previous event that is missing, or whose hash is not 32 bytes, gives zeros.
class HashCarry {
 public:
  HashCarry(ReadConnection& conn, const PageQuery& query)
      : conn_(conn), position_(query.carried_position), hash_(query.carried_hash) {}

  void fill(EventView& e) {
    if (e.position == 1) {
      e.previous_hash = Hash{};
    } else if (position_ != 0 && position_ == e.position - 1) {
      e.previous_hash = hash_;
    } else {
      e.previous_hash = look_up(e.position - 1);
    }
    position_ = e.position;
    hash_ = e.hash;
  }

 private:
  Hash look_up(Position position) {
    Statement& s = conn_.hash_at;
    StatementScope scope(s);
    s.bind(1, static_cast<std::int64_t>(position));
    Hash h{};
    if (s.step("reading the previous event's hash") && s.column_type(0) == SQLITE_BLOB &&
        s.column_blob(0).size() == h.size()) {
      std::memcpy(h.data(), s.column_blob(0).data(), h.size());
    }
    return h;
  }

  ReadConnection& conn_;
  Position position_;
  Hash hash_;
};

void bind_page(Statement& s, const PageQuery& query, std::size_t limit) {
  int next = 1;
  if (query.kind != PageQuery::Kind::all) s.bind(next++, std::string_view(query.key));
  s.bind(next++, query_lower_bound(query));
  s.bind(next, static_cast<std::int64_t>(limit));
}

// Steps the page query of `query` and hands each checked row to `on_row` as a view (with its
// previous hash carried along a read of the whole log), until `limit` rows or `on_row` returns
// false. The one row loop of the owned and the visiting reads.
template <class OnRow>
PageEnd walk_page(ReadConnection& conn, const PageQuery& query, std::size_t limit, OnRow&& on_row) {
  Statement& s = statement_for(conn, query.kind);
  StatementScope scope(s);
  bind_page(s, query, limit);
  const bool carrying = query.kind == PageQuery::Kind::all;
  HashCarry carry(conn, query);
  PageEnd end;
  EventView v;
  while (end.rows < limit && s.step("reading events")) {
    read_view(s, v);
    if (carrying) carry.fill(v);
    end.add(v);
    if (!on_row(v)) {
      end.stopped = true;
      break;
    }
  }
  return end;
}

}  // namespace

void read_page(ReadConnection& conn, const PageQuery& query, std::size_t limit,
               std::vector<RecordedEvent>& page) {
  // The events of the page before are overwritten in place: their strings and payload
  // vectors keep their capacity, so a long read allocates little after its first page.
  std::size_t n = 0;
  try {
    walk_page(conn, query, limit, [&](const EventView& v) {
      if (n == page.size()) page.emplace_back();
      assign(page[n++], v);
      return true;
    });
  } catch (...) {
    page.clear();
    throw;
  }
  page.resize(n);
}

PageEnd visit_page(ReadConnection& conn, const PageQuery& query, std::size_t limit,
                   const ViewVisitor& visit) {
  return walk_page(conn, query, limit, visit);
}

}  // namespace factum::detail
