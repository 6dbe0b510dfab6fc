// tools/cmd_info.cpp — `factum info DB` (what the store is: format, counts, head, size) and
// `factum stats DB` (events per type, per category and per day), both from read-only SQL on
// the store's tables (docs/storage-format.md).
#include <iostream>
#include <memory>

#include "cli.hpp"
#include "options.hpp"
#include "output.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

struct InfoOptions {
  std::string db;
  bool json = false;
};

struct Info {
  std::int64_t format = 0;
  std::int64_t events = 0;
  std::int64_t streams = 0;
  std::int64_t categories = 0;
  Head head;
  std::optional<Timestamp> first;
  std::optional<Timestamp> last;
  std::uint64_t file_size = 0;
  std::uint64_t wal_size = 0;
  // On PostgreSQL: the store's schema and what its tables take on the server (no file sizes).
  std::optional<std::string> schema;
  std::uint64_t schema_size = 0;
};

std::optional<Timestamp> time_at(Sql& sql, const char* which) {
  const auto us = sql.query_integer(std::string("SELECT recorded_at FROM events WHERE position = "
                                                "(SELECT ") +
                                    which + "(position) FROM events)");
  if (!us) return std::nullopt;
  return Timestamp(std::chrono::microseconds(*us));
}

Info read_info(const EventStore& store, const std::string& path) {
  Info info;
  info.head = store.head();
  store.read_sql([&](Sql& sql) {
    info.format = sql.query_integer(sql.dialect() == SqlDialect::postgres
                                        ? "SELECT format FROM factum_store WHERE id = 1"
                                        : "PRAGMA user_version")
                      .value_or(0);
    info.events = sql.query_integer("SELECT count(*) FROM events").value_or(0);
    info.streams = sql.query_integer("SELECT count(*) FROM streams").value_or(0);
    info.categories = sql.query_integer("SELECT count(DISTINCT category) FROM streams").value_or(0);
    info.first = time_at(sql, "min");
    info.last = time_at(sql, "max");
  });
  if (is_server_location(path)) {
    info.schema = store_schema(store);
    info.schema_size = cli::schema_size(store);
    return info;
  }
  info.file_size = file_size_or_zero(path);
  info.wal_size = file_size_or_zero(path + "-wal");
  return info;
}

Json info_json(const Info& info, const std::string& path) {
  Json j = Json::object();
  j["path"] = json_text(shown_location(path));
  j["format"] = info.format;
  j["events"] = info.events;
  j["streams"] = info.streams;
  j["categories"] = info.categories;
  j["head"] = {{"position", info.head.position}, {"hash", to_hex(info.head.hash)}};
  j["first_recorded_at"] = info.first ? Json(format_time(*info.first)) : Json(nullptr);
  j["last_recorded_at"] = info.last ? Json(format_time(*info.last)) : Json(nullptr);
  if (info.schema) {  // a server has no store file
    j["schema"] = json_text(*info.schema);
    j["schema_size"] = info.schema_size;
    j["file_size"] = nullptr;
    j["wal_size"] = nullptr;
    return j;
  }
  j["file_size"] = info.file_size;
  j["wal_size"] = info.wal_size;
  return j;
}

int run_info(const InfoOptions& o) {
  const EventStore store = open_read_only(o.db);
  const Info info = read_info(store, o.db);
  if (o.json) {
    print_json(info_json(info, o.db));
    return kOk;
  }
  auto time_or_dash = [](const std::optional<Timestamp>& t) {
    return t ? format_time(*t) : std::string("-");
  };
  std::vector<std::pair<std::string, std::string>> size_fields;
  if (info.schema) {
    size_fields = {
        {"schema", printable(*info.schema)},
        {"schema size", human_bytes(info.schema_size) + " (" + std::to_string(info.schema_size) +
                            " bytes: tables and indexes)"}};
  } else {
    std::string size =
        human_bytes(info.file_size) + " (" + std::to_string(info.file_size) + " bytes)";
    if (info.wal_size > 0) size += ", WAL " + human_bytes(info.wal_size);
    size_fields = {{"file size", size}};
  }
  std::vector<std::pair<std::string, std::string>> fields{
      {"path", printable(shown_location(o.db))},
      {"format", std::to_string(info.format)},
      {"events", std::to_string(info.events)},
      {"streams", std::to_string(info.streams)},
      {"categories", std::to_string(info.categories)},
      {"head position", std::to_string(info.head.position)},
      {"head hash", to_hex(info.head.hash)},
      {"first event", time_or_dash(info.first)},
      {"last event", time_or_dash(info.last)}};
  fields.insert(fields.end(), size_fields.begin(), size_fields.end());
  print_fields(fields);
  return kOk;
}

// --- stats -------------------------------------------------------------------------------------

// Day numbers (days since 1970-01-01, UTC) with floor division, also before 1970, and with no
// intermediate value that could overflow (SQLite turns an overflowing integer into a float):
// any 64-bit recorded_at has its day.
constexpr const char* kDaySql =
    "SELECT recorded_at / 86400000000 - "
    "(CASE WHEN recorded_at % 86400000000 < 0 THEN 1 ELSE 0 END) AS day, count(*) "
    "FROM events GROUP BY day ORDER BY day";

struct Stats {
  Json types = Json::array();
  Json categories = Json::array();
  Json days = Json::array();
};

Stats read_stats(const EventStore& store) {
  Stats s;
  store.read_sql([&](Sql& sql) {
    sql.query(
        "SELECT type, count(*), sum(length(payload)) FROM events GROUP BY type "
        "ORDER BY count(*) DESC, type",
        {}, [&](const SqlRow& r) {
          s.types.push_back({{"type", json_text(r.text(0))},
                             {"events", r.integer(1)},
                             {"payload_bytes", r.is_null(2) ? 0 : r.integer(2)}});
        });
    sql.query(
        "SELECT s.category, count(DISTINCT s.stream_key), count(*) FROM events e "
        "JOIN streams s ON s.stream_key = e.stream_key GROUP BY s.category "
        "ORDER BY count(*) DESC, s.category",
        {}, [&](const SqlRow& r) {
          s.categories.push_back({{"category", json_text(r.text(0))},
                                  {"streams", r.integer(1)},
                                  {"events", r.integer(2)}});
        });
    sql.query(kDaySql, {}, [&](const SqlRow& r) {
      s.days.push_back({{"day", format_day(r.integer(0))}, {"events", r.integer(1)}});
    });
  });
  return s;
}

std::string text_cell(const Json& v) {
  return v.is_string() ? printable(v.get<std::string>())
                       : "base64:" + v["base64"].get<std::string>();
}

void print_stats(const Stats& s) {
  {
    Table t({{"TYPE"}, {"EVENTS", Align::right}, {"PAYLOAD BYTES", Align::right}});
    for (const Json& r : s.types) {
      t.add({text_cell(r["type"]), std::to_string(r["events"].get<std::int64_t>()),
             std::to_string(r["payload_bytes"].get<std::int64_t>())});
    }
  }
  std::cout << '\n';
  {
    Table t({{"CATEGORY"}, {"STREAMS", Align::right}, {"EVENTS", Align::right}});
    for (const Json& r : s.categories) {
      t.add({text_cell(r["category"]), std::to_string(r["streams"].get<std::int64_t>()),
             std::to_string(r["events"].get<std::int64_t>())});
    }
  }
  std::cout << '\n';
  Table t({{"DAY (UTC)"}, {"EVENTS", Align::right}});
  for (const Json& r : s.days) {
    t.add({r["day"].get<std::string>(), std::to_string(r["events"].get<std::int64_t>())});
  }
}

int run_stats(const InfoOptions& o) {
  const EventStore store = open_read_only(o.db);
  const Stats s = read_stats(store);
  if (o.json) {
    print_json({{"types", s.types}, {"categories", s.categories}, {"days", s.days}});
  } else {
    print_stats(s);
  }
  return kOk;
}

}  // namespace

void add_info_commands(CLI::App& app, Action& action) {
  auto info = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "info", "Show the store's format, event, stream and category counts, head and file size");
  add_db_argument(*cmd, info->db);
  add_json_flag(*cmd, info->json);
  cmd->callback([&action, info] { action = [info] { return run_info(*info); }; });

  auto stats = std::make_shared<InfoOptions>();
  cmd = app.add_subcommand("stats", "Count events per type, per category and per day (UTC)");
  add_db_argument(*cmd, stats->db);
  add_json_flag(*cmd, stats->json);
  cmd->callback([&action, stats] { action = [stats] { return run_stats(*stats); }; });
}

}  // namespace factum::cli
