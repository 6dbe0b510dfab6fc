// samples/orders/search_index.cpp — the search index kept by a subscription (see
// search_index.hpp).
#include "orders/search_index.hpp"

#include <sstream>

#include "orders/errors.hpp"
#include "orders/events.hpp"
#include "orders/order.hpp"

namespace orders {

namespace {

constexpr std::size_t kMaxWords = 8;

std::vector<std::string> words_of(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(std::move(w));
  return words;
}

// "%word%" with LIKE's wildcards escaped by '\'.
std::string like_pattern(const std::string& word) {
  std::string out = "%";
  for (char c : word) {
    if (c == '%' || c == '_' || c == '\\') out += '\\';
    out += c;
  }
  return out + "%";
}

// A query with one LIKE condition per word: the text is the same for the same word count,
// so the store's statement cache reuses it. SQLite's LIKE ignores ASCII case; PostgreSQL's
// ILIKE does the same there.
std::string search_sql(std::size_t words, factum::SqlDialect dialect) {
  const bool postgres = dialect == factum::SqlDialect::postgres;
  std::string sql =
      std::string("SELECT order_id, customer, skus, status FROM search_index WHERE ") +
      (postgres ? "TRUE" : "1");
  for (std::size_t i = 1; i <= words; ++i) {
    sql += std::string(" AND (order_id || ' ' || customer || ' ' || skus || ' ' || status) ") +
           (postgres ? "ILIKE" : "LIKE") + " ?" + std::to_string(i) + " ESCAPE '\\'";
  }
  return sql + " ORDER BY order_id LIMIT ?" + std::to_string(words + 1);
}

void index_event(factum::Sql& sql, const factum::RecordedEvent& e) {
  const OrderEvent event = registry().decode_variant<OrderEvent>(e);
  const std::string order = order_id_of(e.stream_id);
  if (const auto* placed = std::get_if<OrderPlaced>(&event)) {
    // An upsert both databases speak (SQLite's INSERT OR REPLACE is its own).
    sql.execute(
        "INSERT INTO search_index (order_id, customer, skus, status)"
        " VALUES (?1, ?2, ?3, 'placed') ON CONFLICT (order_id) DO UPDATE SET"
        " customer = excluded.customer, skus = excluded.skus, status = excluded.status",
        {order, placed->customer, skus_of(placed->items)});
    return;
  }
  sql.execute("UPDATE search_index SET status = ?2 WHERE order_id = ?1 AND status <> 'cancelled'",
              {order, std::string(to_string(status_after(event)))});
}

}  // namespace

SearchIndex::SearchIndex(factum::EventStore& store) : store_(store) {
  store_.write_sql([](factum::Sql& sql) {
    sql.execute(
        factum::table_ddl(sql,
                          "CREATE TABLE IF NOT EXISTS search_index (order_id TEXT PRIMARY KEY,"
                          " customer TEXT NOT NULL, skus TEXT NOT NULL, status TEXT NOT NULL)"));
  });
  factum::SubscriptionOptions options;
  options.filter = factum::SubscriptionFilter::category(std::string(kCategory));
  options.checkpoint = std::string(kCheckpoint);
  subscription_.emplace(factum::Subscription::batched(
      store_, options, [this](std::span<const factum::RecordedEvent> batch) { index(batch); }));
}

SearchIndex::~SearchIndex() { stop(); }

void SearchIndex::index(std::span<const factum::RecordedEvent> batch) {
  store_.write_sql([&](factum::Sql& sql) {
    for (const factum::RecordedEvent& e : batch) index_event(sql, e);
  });
}

bool SearchIndex::wait_for(factum::Position p, std::chrono::milliseconds timeout) const {
  const bool reached = subscription_->wait_for(p, timeout);
  if (!reached && subscription_->error()) std::rethrow_exception(subscription_->error());
  return reached;
}

factum::Position SearchIndex::position() const noexcept { return subscription_->position(); }

void SearchIndex::stop() noexcept {
  if (subscription_) subscription_->stop();
}

void SearchIndex::check_query(std::string_view text) {
  if (words_of(text).empty()) throw BadInput("search: give at least one word");
}

std::vector<SearchHit> SearchIndex::search(const factum::EventStore& store, std::string_view text,
                                           std::size_t limit) {
  check_query(text);
  std::vector<std::string> words = words_of(text);
  if (words.size() > kMaxWords) words.resize(kMaxWords);
  std::vector<factum::SqlValue> params;
  for (const std::string& w : words) params.emplace_back(like_pattern(w));
  params.emplace_back(static_cast<std::int64_t>(limit));
  std::vector<SearchHit> hits;
  store.read_sql([&](factum::Sql& sql) {
    sql.query(search_sql(words.size(), sql.dialect()), params, [&](const factum::SqlRow& row) {
      hits.push_back({row.text(0), row.text(1), row.text(2), row.text(3)});
    });
  });
  return hits;
}

}  // namespace orders
