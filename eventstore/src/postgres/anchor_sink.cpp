// PostgresAnchorSink (anchor.hpp): anchors in a table of a PostgreSQL database, usually on
// another machine than the store (a SQLite store anchoring to a server, say). Appends are
// serialised across processes and machines by a table lock held for one short transaction.
#include <cctype>
#include <mutex>

#include "factum/eventstore/anchor.hpp"
#include "postgres/connection.hpp"
#include "postgres/pipeline.hpp"

namespace factum {
namespace {

using detail::PgTarget;
using detail::pg::Params;
using detail::pg::PgConn;
using detail::pg::PgResult;

void check_table_name(const std::string& table) {
  bool ok = !table.empty() && table.size() <= 63 &&
            (std::islower(static_cast<unsigned char>(table[0])) || table[0] == '_');
  for (char c : table) {
    ok = ok && (std::islower(static_cast<unsigned char>(c)) ||
                std::isdigit(static_cast<unsigned char>(c)) || c == '_');
  }
  if (!ok) {
    throw InvalidArgument("factum: '" + table +
                          "' is not a table name for anchors: use 1 to 63 of [a-z0-9_], not "
                          "starting with a digit");
  }
}

StoreOptions connection_options() {
  StoreOptions o;
  o.durability = Durability::full;  // an anchor counts once its commit is flushed
  return o;
}

}  // namespace

struct PostgresAnchorSink::State {
  std::shared_ptr<const PgTarget> target;
  std::string table;
  std::mutex mutex;
  std::unique_ptr<PgConn> conn;

  // The connection, made again when the last one broke.
  PgConn& connection() {
    if (!conn || !conn->ok()) {
      conn.reset();
      conn = std::make_unique<PgConn>(target, connection_options());
    }
    return *conn;
  }

  std::optional<Anchor> newest(PgConn& c, std::int64_t& seq) {
    PgResult r =
        Params().run(c, ("SELECT seq, anchor FROM " + table + " ORDER BY seq DESC LIMIT 1").c_str(),
                     "reading the newest anchor");
    seq = 0;
    if (r.rows() == 0) return std::nullopt;
    seq = r.int64_or(0, 0, 0);
    return parse(r.text(0, 1), seq);
  }

  Anchor parse(std::string_view line, std::int64_t seq) const {
    try {
      return Anchor::from_json(line);
    } catch (const AnchorError& e) {
      throw AnchorError("factum: anchor " + std::to_string(seq) + " of the table " + table +
                        " on '" + target->shown + "': " + e.what());
    }
  }
};

PostgresAnchorSink::PostgresAnchorSink(const std::string& uri, std::string table)
    : state_(std::make_shared<State>()) {
  check_table_name(table);
  state_->target = std::make_shared<const PgTarget>(detail::pg_target(uri));
  state_->table = std::move(table);
  std::lock_guard lock(state_->mutex);
  state_->connection().exec("CREATE TABLE IF NOT EXISTS " + state_->table +
                                " (seq bigint PRIMARY KEY, anchor text NOT NULL)",
                            "creating the table of anchors");
}

Anchor PostgresAnchorSink::append(
    const std::function<Anchor(const std::optional<Anchor>& last)>& make) {
  std::lock_guard lock(state_->mutex);
  PgConn& c = state_->connection();
  c.exec("BEGIN", "appending an anchor");
  try {
    // EXCLUSIVE: other appenders wait (lock_timeout bounds it), readers do not.
    c.exec("LOCK TABLE " + state_->table + " IN EXCLUSIVE MODE", "locking the table of anchors");
    std::int64_t seq = 0;
    const std::optional<Anchor> last = state_->newest(c, seq);
    Anchor next = make(last);
    Params()
        .i64(seq + 1)
        .own(next.to_json())
        .run(c, ("INSERT INTO " + state_->table + " (seq, anchor) VALUES ($1, $2)").c_str(),
             "appending an anchor");
    c.exec("COMMIT", "committing an anchor");
    return next;
  } catch (...) {
    c.rollback();
    throw;
  }
}

std::optional<Anchor> PostgresAnchorSink::last() {
  std::lock_guard lock(state_->mutex);
  std::int64_t seq = 0;
  return state_->newest(state_->connection(), seq);
}

std::vector<Anchor> PostgresAnchorSink::anchors() {
  std::lock_guard lock(state_->mutex);
  PgResult r = Params().run(state_->connection(),
                            ("SELECT seq, anchor FROM " + state_->table + " ORDER BY seq").c_str(),
                            "reading the anchors");
  std::vector<Anchor> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(state_->parse(r.text(i, 1), r.int64_or(i, 0, 0)));
  return out;
}

}  // namespace factum
