// tests/samples/samples_pg_test.cpp — the three sample programs with --db a PostgreSQL URI
// (label "postgres", cases "pg/..."), each on a fresh schema of the test server: the demos end
// to end (factum-bank's audit says OK), the read models' integer columns are 64-bit there, the
// one-step commands work on the server, and what a file would be deleted for (--fresh) is
// refused with the server's data left as it was.
#include <doctest/doctest.h>

#include <factum/factum.hpp>

#include <string>
#include <vector>

#include "sample_cli.hpp"
#include "support/pg_test.hpp"
#include "support/temp_dir.hpp"

namespace {

using factum::test::contains;
using factum::test::SampleFolder;

factum::EventStore open_read_only(const std::string& uri) {
  factum::StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  return factum::EventStore::open(uri, options);
}

// Whether the schema of `uri` holds a factum store (opened read-only: nothing is created).
bool holds_store(const std::string& uri) {
  try {
    open_read_only(uri);
    return true;
  } catch (const factum::StorageError& e) {
    if (e.kind() == factum::StorageError::Kind::not_a_store) return false;
    throw;
  }
}

factum::Position head_of(const std::string& uri) { return open_read_only(uri).head_position(); }

// The SQL type of `table`.`column` in the store's schema ("bigint", "text", ...).
std::string column_type(const std::string& uri, const std::string& table,
                        const std::string& column) {
  std::string type;
  open_read_only(uri).read_sql([&](factum::Sql& sql) {
    sql.query(
        "SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema()"
        " AND table_name = ?1 AND column_name = ?2",
        {table, column}, [&](const factum::SqlRow& row) { type = row.text(0); });
  });
  return type;
}

// The last line of `text` (without its newline).
std::string last_line(const std::string& text) {
  const std::size_t end = text.find_last_not_of('\n');
  if (end == std::string::npos) return {};
  const std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

std::vector<std::string> on(const std::string& uri, std::vector<std::string> args) {
  args.insert(args.begin(), {"--db", uri});
  return args;
}

// As on(), with the key file of the personal data (factum-bank, factum-feed: a store on a
// server needs --kek), in the program's folder: made by the first command that needs it.
std::vector<std::string> keyed(const std::string& uri, std::vector<std::string> args) {
  args.insert(args.begin(), {"--db", uri, "--kek", "store.kek"});
  return args;
}

TEST_CASE("factum-bank --db URI demo: a year of history on the server, and the audit says OK") {
  SampleFolder f("factum-bank", FACTUM_BANK_BIN);
  const std::string uri = factum::test::pg_test_uri();
  const std::string out = f.ok(keyed(uri, {"demo", "--accounts", "20", "--operations", "300"}));
  CHECK(contains(out, "20 accounts opened"));
  CHECK(contains(out, "Top balances"));
  CHECK(contains(out, "refused: payment reference SAL-0001 was used already, by account acc-"));
  const std::string last = last_line(out);
  CHECK_MESSAGE(last.rfind("audit: OK — ", 0) == 0, last);
  CHECK(contains(out, "Try next, one at a time: factum-bank --db '" + uri + "'"));
  // Microseconds since 1970 need 64 bits: the read models' INTEGER columns are BIGINT.
  CHECK(column_type(uri, "balances__g1", "updated_at") == "bigint");
  CHECK(column_type(uri, "statements__g1", "at") == "bigint");

  CHECK(last_line(f.ok(keyed(uri, {"audit"}))).rfind("audit: OK — ", 0) == 0);
  CHECK(contains(f.ok(keyed(uri, {"accounts"})), "acc-1"));
  CHECK(contains(f.ok(keyed(uri, {"statement", "acc-1", "--last", "3"})), "acc-1"));
  CHECK(contains(f.ok(keyed(uri, {"replay-with-new-logic", "--top", "3"})), "total"));
  CHECK(column_type(uri, "fee_balances__g1", "balance") == "bigint");

  // Never a second history in the same schema, and never a schema emptied: --fresh is for files.
  const factum::Position head = head_of(uri);
  for (const std::vector<std::string>& again :
       {std::vector<std::string>{"demo"}, {"demo", "--fresh", "--accounts", "10"}}) {
    const auto r = f.run(keyed(uri, again));
    factum::test::check_one_line_error(r, "factum-bank", 1, "already holds");
    CHECK(contains(r.err, "never tables on a server"));
  }
  CHECK(head_of(uri) == head);
}

TEST_CASE("factum-bank one step at a time on a URI") {
  SampleFolder f("factum-bank", FACTUM_BANK_BIN);
  const std::string uri = factum::test::pg_test_uri();
  // No store in the schema yet: a reading command says so and creates nothing.
  factum::test::check_one_line_error(f.run(keyed(uri, {"balance", "acc-1"})), "factum-bank", 1,
                                     "no bank at '" + uri + "'");
  CHECK_FALSE(holds_store(uri));

  f.ok(keyed(uri, {"open", "acc-1", "Ann Smith", "--limit", "50"}));
  f.ok(keyed(uri, {"deposit", "acc-1", "100"}));
  f.ok(keyed(uri, {"open", "acc-2", "Bob Jones"}));
  f.ok(keyed(uri, {"transfer", "acc-1", "acc-2", "30"}));
  CHECK(contains(f.ok(keyed(uri, {"balance", "acc-1"})), "70.00"));
  CHECK(contains(f.ok(keyed(uri, {"balance", "acc-2"})), "30.00"));
  factum::test::check_one_line_error(f.run(keyed(uri, {"withdraw", "acc-2", "500"})), "factum-bank",
                                     1, "");
  CHECK(last_line(f.ok(keyed(uri, {"audit"}))).rfind("audit: OK — ", 0) == 0);
  CHECK(head_of(uri) == 5);  // two openings, a deposit, a debit and its credit
}

TEST_CASE("factum-orders --db URI demo, then its read models and search on the server") {
  SampleFolder f("factum-orders", FACTUM_ORDERS_BIN);
  const std::string uri = factum::test::pg_test_uri();
  const std::string out = f.ok(on(uri, {"demo", "--orders", "40"}));
  CHECK(contains(out, "written to " + uri));
  CHECK(column_type(uri, "order_board__g1", "last_position") == "bigint");
  CHECK(contains(f.ok(on(uri, {"show", "o-1"})), "o-1"));
  CHECK_FALSE(f.ok(on(uri, {"board"})).empty());
  CHECK_FALSE(f.ok(on(uri, {"inventory"})).empty());
  CHECK_FALSE(f.ok(on(uri, {"outbox"})).empty());
  // LIKE ignores ASCII case on SQLite; the search does the same on PostgreSQL.
  const std::string lower = f.ok(on(uri, {"search", "o-1"}));
  CHECK(contains(lower, "match"));
  CHECK(f.ok(on(uri, {"search", "O-1"})) != "");
  f.ok(on(uri, {"place", "o-900", "zed", "mug-01:1:1"}));
  f.ok(on(uri, {"pay", "o-900"}));
  CHECK(contains(f.ok(on(uri, {"search", "ZED"})), "o-900"));

  const factum::Position head = head_of(uri);
  const auto r = f.run(on(uri, {"demo", "--fresh", "--orders", "1"}));
  factum::test::check_one_line_error(r, "factum-orders", 1, "never tables on a server");
  CHECK(head_of(uri) == head);
}

TEST_CASE("factum-feed --db URI demo, then feeds and stats on the server") {
  SampleFolder f("factum-feed", FACTUM_FEED_BIN);
  const std::string uri = factum::test::pg_test_uri();
  const std::string out = f.ok(keyed(uri, {"demo", "--users", "20", "--days", "1"}));
  CHECK(contains(out, "events in " + uri));
  CHECK(column_type(uri, "feeds__g1", "at") == "bigint");
  CHECK(contains(out, "Right to be forgotten: factum-feed forget "));
  CHECK(contains(out, "Hash chain after the forget: intact"));
  CHECK(contains(out, "factum-feed join alice: refused: user 'alice' exists already"));
  CHECK_FALSE(f.ok(keyed(uri, {"feed", "alice"})).empty());
  CHECK_FALSE(f.ok(keyed(uri, {"stats"})).empty());
  f.ok(keyed(uri, {"join", "zoe"}));
  f.ok(keyed(uri, {"follow", "zoe", "alice"}));
  CHECK(contains(f.ok(keyed(uri, {"post", "alice", "hello from the server"})), "posted by alice"));
  CHECK(contains(f.ok(keyed(uri, {"feed", "zoe"})), "hello from the server"));

  const factum::Position head = head_of(uri);
  const auto r = f.run(keyed(uri, {"demo", "--fresh"}));
  factum::test::check_one_line_error(r, "factum-feed", 1, "never tables on a server");
  CHECK(head_of(uri) == head);
}

TEST_CASE("a sample given another sample's schema refuses it before writing") {
  SampleFolder bank("factum-bank", FACTUM_BANK_BIN);
  const std::string uri = factum::test::pg_test_uri();
  bank.ok(keyed(uri, {"open", "acc-1", "Ann"}));
  const factum::Position head = head_of(uri);
  const auto r = bank.run_other(FACTUM_ORDERS_BIN, on(uri, {"place", "o-1", "ann", "mug-01:1:1"}));
  factum::test::check_one_line_error(r, "factum-orders", 1,
                                     "'" + uri + "' is not a factum-orders store");
  CHECK(head_of(uri) == head);
}

TEST_CASE("a URI's password is masked in what the samples print") {
  SampleFolder f("factum-bank", FACTUM_BANK_BIN);
  const std::string uri = factum::test::pg_test_uri();
  const std::size_t at = uri.find('@');
  REQUIRE(at != std::string::npos);
  const std::string with_password = uri.substr(0, at) + ":sekret" + uri.substr(at);
  const auto r = f.run(keyed(with_password, {"balance", "acc-1"}));
  factum::test::check_one_line_error(r, "factum-bank", 1,
                                     "no bank at '" + uri.substr(0, at) + ":***" + uri.substr(at));
  CHECK_FALSE(contains(r.err, "sekret"));
  const std::string out =
      f.ok(keyed(with_password, {"demo", "--accounts", "2", "--operations", "5"}));
  CHECK_FALSE(contains(out, "sekret"));
}

}  // namespace
