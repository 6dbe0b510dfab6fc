// samples/orders/read_models.cpp — the read models' engine and their queries (see
// read_models.hpp).
#include "orders/read_models.hpp"

#include "orders/errors.hpp"

namespace orders {

namespace {

std::string describe(const factum::ProjectionStatus& s) {
  std::string out = "projection '" + s.name + "' " + std::string(factum::to_string(s.state));
  if (s.error) {
    out += " at position " + std::to_string(s.error->position) + " (" + s.error->event_type +
           "): " + s.error->message;
  }
  return out;
}

BoardRow board_row_of(const factum::SqlRow& row) {
  return {row.text(0), row.text(1), row.text(2), row.integer(3), row.integer(4), row.text(5)};
}

constexpr const char* kBoardColumns =
    "SELECT order_id, customer, status, total_cents, refunded_cents, updated FROM order_board";

std::vector<BoardRow> board_in(factum::Sql& sql, std::size_t limit, const std::string& status) {
  std::vector<BoardRow> rows;
  sql.query(std::string(kBoardColumns) +
                " WHERE ?1 = '' OR status = ?1 ORDER BY last_position DESC LIMIT ?2",
            {status, static_cast<std::int64_t>(limit)},
            [&](const factum::SqlRow& row) { rows.push_back(board_row_of(row)); });
  return rows;
}

std::map<std::string, std::int64_t> status_counts_in(factum::Sql& sql) {
  std::map<std::string, std::int64_t> counts;
  sql.query("SELECT status, count(*) FROM order_board GROUP BY status", {},
            [&](const factum::SqlRow& row) { counts[row.text(0)] = row.integer(1); });
  return counts;
}

std::vector<SentEmail> sent_emails_in(factum::Sql& sql, std::size_t limit) {
  std::vector<SentEmail> rows;
  // Newest first: by the position that starts the key ("<position>:<id>"). SQLite's CAST reads
  // the leading digits; PostgreSQL's refuses the rest, so it splits the key first.
  const char* position = sql.dialect() == factum::SqlDialect::postgres
                             ? "CAST(split_part(key, ':', 1) AS BIGINT)"
                             : "CAST(key AS INTEGER)";
  sql.query(std::string("SELECT key, order_id, recipient, subject FROM sent_emails ORDER BY ") +
                position + " DESC LIMIT ?1",
            {static_cast<std::int64_t>(limit)}, [&](const factum::SqlRow& row) {
              rows.push_back({row.text(0), row.text(1), row.text(2), row.text(3)});
            });
  return rows;
}

std::int64_t sent_email_count_in(factum::Sql& sql) {
  return sql.query_integer("SELECT count(*) FROM sent_emails").value_or(0);
}

}  // namespace

ReadModels::ReadModels(factum::EventStore& store, factum::EngineOptions options)
    : store_(store),
      outbox_(std::make_shared<Outbox>(store)),
      engine_(store, std::move(options)),
      search_(store) {
  engine_.add(std::make_shared<OrderBoard>());
  engine_.add(std::make_shared<Inventory>());
  engine_.add(outbox_, {.target = factum::ProjectionTarget::external});
}

ReadModels::~ReadModels() { stop(); }

void ReadModels::catch_up(std::chrono::milliseconds timeout) {
  const factum::Position head = store_.head_position();
  const bool idle = engine_.wait_idle(timeout);
  for (const factum::ProjectionStatus& s : engine_.status()) {
    if (s.state == factum::ProjectionState::failed) throw Error(describe(s));
    if (!idle && s.checkpoint < head) throw Error(describe(s) + ": not caught up in time");
  }
  if (!search_.wait_for(head, timeout)) throw Error("the search index is not caught up in time");
}

void ReadModels::stop() noexcept {
  search_.stop();
  engine_.stop();
}

std::vector<BoardRow> board(const factum::EventStore& store, std::size_t limit,
                            const std::string& status) {
  std::vector<BoardRow> rows;
  store.read_sql([&](factum::Sql& sql) { rows = board_in(sql, limit, status); });
  return rows;
}

std::optional<BoardRow> board_row(const factum::EventStore& store, const std::string& order_id) {
  std::optional<BoardRow> out;
  store.read_sql([&](factum::Sql& sql) {
    sql.query(std::string(kBoardColumns) + " WHERE order_id = ?1", {order_id},
              [&](const factum::SqlRow& row) { out = board_row_of(row); });
  });
  return out;
}

std::map<std::string, std::int64_t> status_counts(const factum::EventStore& store) {
  std::map<std::string, std::int64_t> counts;
  store.read_sql([&](factum::Sql& sql) { counts = status_counts_in(sql); });
  return counts;
}

BoardView board_view(const factum::EventStore& store, std::size_t limit,
                     const std::string& status) {
  BoardView view;
  store.read_sql([&](factum::Sql& sql) {
    view.rows = board_in(sql, limit, status);
    view.counts = status_counts_in(sql);
  });
  return view;
}

std::vector<InventoryRow> inventory(const factum::EventStore& store) {
  std::vector<InventoryRow> rows;
  store.read_sql([&](factum::Sql& sql) {
    sql.query(
        "SELECT sku, reserved, shipped FROM inventory"
        " ORDER BY shipped DESC, reserved DESC, sku",
        {}, [&](const factum::SqlRow& row) {
          rows.push_back({row.text(0), row.integer(1), row.integer(2)});
        });
  });
  return rows;
}

std::vector<SentEmail> sent_emails(const factum::EventStore& store, std::size_t limit) {
  std::vector<SentEmail> rows;
  store.read_sql([&](factum::Sql& sql) { rows = sent_emails_in(sql, limit); });
  return rows;
}

std::int64_t sent_email_count(const factum::EventStore& store) {
  std::int64_t n = 0;
  store.read_sql([&](factum::Sql& sql) { n = sent_email_count_in(sql); });
  return n;
}

SentEmailsView sent_emails_view(const factum::EventStore& store, std::size_t limit) {
  SentEmailsView view;
  store.read_sql([&](factum::Sql& sql) {
    view.count = sent_email_count_in(sql);
    view.newest = sent_emails_in(sql, limit);
  });
  return view;
}

BoardTotals board_totals(const factum::EventStore& store) {
  BoardTotals totals;
  store.read_sql([&](factum::Sql& sql) {
    sql.query(
        "SELECT count(*), coalesce(sum(CASE WHEN status IN ('paid', 'shipped', 'delivered')"
        " THEN total_cents ELSE 0 END), 0), coalesce(sum(refunded_cents), 0)"
        " FROM order_board",
        {}, [&](const factum::SqlRow& row) {
          totals = {row.integer(0), row.integer(1), row.integer(2)};
        });
  });
  return totals;
}

Redelivery redeliver_outbox(factum::EventStore& store, std::chrono::milliseconds timeout) {
  factum::CheckpointStore(store).save("outbox", 0);
  auto outbox = std::make_shared<Outbox>(store);
  factum::ProjectionEngine engine(store);
  engine.add(outbox, {.target = factum::ProjectionTarget::external});
  if (!engine.wait_idle(timeout)) throw Error(describe(engine.status("outbox")));
  return {outbox->delivered(), outbox->sent(), outbox->duplicates()};
}

}  // namespace orders
