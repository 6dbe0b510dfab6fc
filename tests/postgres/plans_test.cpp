// The plans of the PostgreSQL backend's per-append and per-page statements
// (eventstore/src/postgres/statements.hpp): each must read through an index, bounded by a key or
// a LIMIT, whatever the statistics say and whenever it was prepared. Each statement is prepared
// on a connection with factum's planner settings and explained with a generic plan (as a
// statement prepared long ago runs) and with a custom one, after ANALYZE of an empty store, of a
// large one, and of a store analyzed while small and grown since (statistics taken mid-load).
// And which settings plan what: the caller's SQL the server's defaults, factum's own reads
// factum's.
#include <doctest/doctest.h>
#include <libpq-fe.h>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "postgres/statements.hpp"
#include "storage.hpp"
#include "support/pg_test.hpp"
#include "support/temp_dir.hpp"
#include "tags_index.hpp"

using namespace factum;
using factum::detail::pg::PlannedStatement;
using factum::test::make_events;

namespace {

// A plain libpq connection on a test schema.
class Raw {
 public:
  explicit Raw(const std::string& uri) : conn_(PQconnectdb(uri.c_str()), &PQfinish) {
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
      throw std::runtime_error("raw connection: " + std::string(PQerrorMessage(conn_.get())));
    }
  }
  // The rows of `sql`'s last statement, first column each; throws with the server's message.
  std::vector<std::string> lines(const std::string& sql) {
    const std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn_.get(), sql.c_str()),
                                                          &PQclear);
    const auto status = PQresultStatus(r.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      throw std::runtime_error(sql + ": " + PQresultErrorMessage(r.get()));
    }
    std::vector<std::string> out;
    for (int i = 0; i < PQntuples(r.get()); ++i) out.emplace_back(PQgetvalue(r.get(), i, 0));
    return out;
  }

 private:
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

// A store in a fresh schema with `events` events over 100 streams ("account-0" ...), 100 per
// append.
std::string store_with(std::size_t events) {
  const std::string uri = factum::test::pg_test_uri();
  EventStore store = EventStore::open(uri, factum::test::TempStore::fast_options());
  for (std::size_t n = 0; n < events; n += 100) {
    store.append("account-" + std::to_string(n / 100 % 100), ExpectedVersion::any(),
                 make_events(100));
  }
  // The tables the writer's checks read: the tag index (conditions) and the subjects' keys
  // (personal values), which a forget makes.
  store.write_sql(
      [](Sql& sql) { sql.execute(factum::detail::tag_table_ddl(SqlDialect::postgres)); });
  store.forget("user:9");
  return uri;
}

std::string joined(const std::vector<std::string>& v, const char* between) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : between) + s;
  return out;
}

bool has(const std::string& line, const char* what) { return line.find(what) != std::string::npos; }

// What is wrong with `plan` (EXPLAIN's lines), "" when nothing: a sequential, bitmap, hash,
// merge or materialising node; a sort (unless `may_sort`); an index scan without an index
// condition, unless a Limit right above it bounds it.
std::string faults(const std::vector<std::string>& plan, bool may_sort) {
  std::string out;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const std::string& line = plan[i];
    for (const char* bad : {"Seq Scan", "Bitmap", "Hash", "Merge", "Materialize"}) {
      if (has(line, bad)) out += "[" + line + "] ";
    }
    if (!may_sort && has(line, "Sort")) out += "[" + line + "] ";
    if (!has(line, "Index Scan") && !has(line, "Index Only Scan")) continue;
    bool condition = false;
    for (std::size_t j = i + 1; j < plan.size() && !has(plan[j], "->") &&
                                !has(plan[j], "SubPlan") && !has(plan[j], "InitPlan");
         ++j) {
      condition = condition || has(plan[j], "Index Cond");
    }
    const bool limited = i > 0 && has(plan[i - 1], "Limit");
    if (!condition && !limited) out += "[" + line + ": no index condition] ";
  }
  return out;
}

// Checks every statement's generic and custom plan on the store at `uri`.
void check_plans(const std::string& uri) {
  Raw raw(uri);
  raw.lines(factum::detail::pg::kPlannerSettings);
  int n = 0;
  for (const PlannedStatement& s : factum::detail::pg::planned_statements()) {
    const std::string name = "s" + std::to_string(n++);
    const std::string types = s.types.empty() ? "" : "(" + joined(s.types, ", ") + ")";
    const std::string values = s.values.empty() ? "" : "(" + joined(s.values, ", ") + ")";
    raw.lines("PREPARE " + name + types + " AS " + s.sql);
    for (const char* mode : {"force_generic_plan", "force_custom_plan"}) {
      raw.lines(std::string("SET plan_cache_mode = ") + mode);
      const std::vector<std::string> plan =
          raw.lines("EXPLAIN (COSTS OFF) EXECUTE " + name + values);
      CAPTURE(s.name);
      CAPTURE(mode);
      INFO(joined(plan, "\n"));
      CHECK(faults(plan, s.may_sort) == "");
    }
  }
}

}  // namespace

TEST_CASE("postgres: every per-append and per-page statement reads an index on an empty store") {
  const std::string uri = store_with(0);
  Raw(uri).lines("ANALYZE");
  check_plans(uri);
}

TEST_CASE("postgres: every per-append and per-page statement reads an index on a large store") {
  const std::string uri = store_with(20000);
  Raw(uri).lines("ANALYZE");
  check_plans(uri);
}

TEST_CASE("postgres: every per-append and per-page statement reads an index after stale ANALYZE") {
  // Statistics taken while the store was small, then the store grew tenfold.
  const std::string uri = store_with(2000);
  Raw(uri).lines("ANALYZE");
  EventStore store = EventStore::open(uri, factum::test::TempStore::fast_options());
  for (int n = 0; n < 180; ++n) {
    store.append("account-" + std::to_string(n % 100), ExpectedVersion::any(), make_events(100));
  }
  check_plans(uri);
}

TEST_CASE(
    "postgres: the caller's SQL is planned by the server's defaults, factum's own reads by "
    "factum's") {
  const EventStore store = EventStore::open(factum::test::pg_test_uri());
  const auto setting = [](Sql& sql) {
    std::string value;
    sql.query("SELECT current_setting('enable_seqscan')", {},
              [&](const SqlRow& row) { value = row.text(0); });
    return value;
  };
  // Each twice: the settings are the transaction's, whichever pooled connection it runs on.
  for (int round = 0; round < 2; ++round) {
    store.read_sql([&](Sql& sql) { CHECK(setting(sql) == "on"); });
    detail::StoreAccess::read_own_sql(store, [&](Sql& sql) { CHECK(setting(sql) == "off"); });
  }
}
