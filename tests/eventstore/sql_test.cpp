// The SQL handle on the store's file: write_sql and read_sql.
#include <doctest/doctest.h>

#include <thread>

#include "support/temp_dir.hpp"

using namespace factum;
using factum::test::make_event;
using factum::test::TempStore;

namespace {

std::int64_t count_rows(const EventStore& store) {
  std::int64_t n = -1;
  store.read_sql(
      [&](Sql& sql) { n = sql.query_integer("SELECT count(*) FROM notes").value_or(-1); });
  return n;
}

}  // namespace

TEST_CASE("write_sql commits its statements and read_sql sees them") {
  TempStore t;
  t.store.write_sql([](Sql& sql) {
    sql.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, data BLOB, score REAL)");
    CHECK(sql.execute("INSERT INTO notes (body, data, score) VALUES (?1, ?2, ?3)",
                      {std::string("hello"), to_bytes("\x01\x02"), 2.5}) == 1);
    sql.execute("INSERT INTO notes (body, data, score) VALUES (?1, ?2, ?3)",
                {nullptr, Bytes{}, std::int64_t{3}});
  });
  std::vector<std::string> bodies;
  t.store.read_sql([&](Sql& sql) {
    sql.query("SELECT body, data, score FROM notes ORDER BY id", {}, [&](const SqlRow& row) {
      CHECK(row.size() == 3);
      bodies.push_back(row.is_null(0) ? "<null>" : row.text(0));
      if (!row.is_null(0)) {
        CHECK(row.blob(1) == to_bytes("\x01\x02"));
        CHECK(row.real(2) == 2.5);
        CHECK_THROWS_AS(row.integer(0), StorageError);
      }
    });
  });
  CHECK(bodies == std::vector<std::string>{"hello", "<null>"});
}

TEST_CASE("write_sql rolls back everything when its callback throws") {
  TempStore t;
  t.store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE notes (body TEXT)"); });
  CHECK_THROWS_AS(t.store.write_sql([](Sql& sql) {
    sql.execute("INSERT INTO notes VALUES ('a')");
    throw std::runtime_error("changed my mind");
  }),
                  std::runtime_error);
  CHECK(count_rows(t.store) == 0);
  // The writer is usable afterwards, for SQL and appends alike.
  t.store.write_sql([](Sql& sql) { sql.execute("INSERT INTO notes VALUES ('b')"); });
  CHECK(count_rows(t.store) == 1);
  CHECK(t.store.append("s-1", ExpectedVersion::any(), make_event()).last_position == 1);
}

TEST_CASE("bad SQL raises StorageError naming the file") {
  TempStore t;
  CHECK_THROWS_WITH_AS(t.store.write_sql([](Sql& sql) { sql.execute("SELEKT 1"); }),
                       doctest::Contains(t.path.c_str()), StorageError);
}

TEST_CASE("read_sql refuses writes") {
  TempStore t;
  t.store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE notes (body TEXT)"); });
  CHECK_THROWS_AS(t.store.read_sql([](Sql& sql) { sql.execute("INSERT INTO notes VALUES ('x')"); }),
                  StorageError);
  CHECK(count_rows(t.store) == 0);
}

TEST_CASE("write_sql on a read-only store throws StorageError read_only") {
  TempStore t;
  t.store.append("s-1", ExpectedVersion::any(), make_event());  // a read-only open needs a store
  StoreOptions o;
  o.read_only = true;
  auto ro = EventStore::open(t.path, o);
  try {
    ro.write_sql([](Sql& sql) { sql.execute("CREATE TABLE x (y)"); });
    FAIL("expected StorageError");
  } catch (const StorageError& e) {
    CHECK(e.kind() == StorageError::Kind::read_only);
  }
}

TEST_CASE("write_sql interleaves safely with appends from other threads") {
  TempStore t;
  t.store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE counter (n INTEGER)"); });
  t.store.write_sql([](Sql& sql) { sql.execute("INSERT INTO counter VALUES (0)"); });
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int j = 0; j < 25; ++j) {
        t.store.append("s-" + std::to_string(i), ExpectedVersion::any(), make_event());
        t.store.write_sql([](Sql& sql) { sql.execute("UPDATE counter SET n = n + 1"); });
      }
    });
  }
  for (auto& th : threads) th.join();
  std::int64_t n = 0;
  t.store.read_sql([&](Sql& sql) { n = sql.query_integer("SELECT n FROM counter").value_or(-1); });
  CHECK(n == 100);
  CHECK(t.store.head_position() == 100);
  CHECK(t.store.verify().ok());
}

TEST_CASE("a nested query with the same SQL text walks every row of the outer one") {
  TempStore t;
  t.store.write_sql([](Sql& sql) {
    sql.execute("CREATE TABLE nodes (id INTEGER PRIMARY KEY, parent INTEGER)");
    sql.execute("INSERT INTO nodes (id, parent) VALUES (1, NULL), (2, 1), (3, 1), (4, 2)");
  });
  // A recursive walk: the children of each node, queried with one SQL text at every depth.
  std::vector<std::int64_t> visited;
  t.store.read_sql([&](Sql& sql) {
    std::function<void(std::int64_t)> walk = [&](std::int64_t parent) {
      sql.query("SELECT id FROM nodes WHERE parent = ?1 ORDER BY id", {parent},
                [&](const SqlRow& row) {
                  visited.push_back(row.integer(0));
                  walk(row.integer(0));
                });
    };
    walk(1);
  });
  CHECK(visited == std::vector<std::int64_t>{2, 4, 3});
}

TEST_CASE("a query keeps its statement while more than 64 other statements run inside it") {
  TempStore t;
  t.store.write_sql([](Sql& sql) {
    sql.execute("CREATE TABLE items (id INTEGER PRIMARY KEY)");
    sql.execute("INSERT INTO items (id) VALUES (1), (2), (3)");
  });
  std::vector<std::int64_t> seen;
  std::int64_t sum = 0;
  t.store.read_sql([&](Sql& sql) {
    sql.query("SELECT id FROM items ORDER BY id", {}, [&](const SqlRow& row) {
      seen.push_back(row.integer(0));
      // 100 distinct SQL texts: more than the cache keeps idle.
      for (int i = 0; i < 100; ++i) {
        sum += sql.query_integer("SELECT " + std::to_string(i) + " + ?1", {row.integer(0)})
                   .value_or(0);
      }
    });
  });
  CHECK(seen == std::vector<std::int64_t>{1, 2, 3});
  CHECK(sum == 3 * (99 * 100 / 2) + 100 * (1 + 2 + 3));
}

TEST_CASE("a statement given more or fewer values than it has parameters is refused") {
  TempStore t;
  t.store.write_sql([](Sql& sql) { sql.execute("CREATE TABLE notes (a TEXT, b TEXT)"); });
  CHECK_THROWS_AS(t.store.write_sql([](Sql& sql) {
    sql.execute("INSERT INTO notes (a) VALUES (?1)", {std::string("x"), std::string("extra")});
  }),
                  InvalidArgument);
  CHECK_THROWS_AS(t.store.write_sql([](Sql& sql) {
    sql.execute("INSERT INTO notes (a, b) VALUES (?1, ?2)", {std::string("x")});
  }),
                  InvalidArgument);
  CHECK_THROWS_AS(
      t.store.read_sql([](Sql& sql) { sql.query_integer("SELECT 1", {std::int64_t{1}}); }),
      InvalidArgument);
  CHECK(count_rows(t.store) == 0);
  t.store.write_sql([](Sql& sql) {
    sql.execute("INSERT INTO notes (a, b) VALUES (?1, ?2)", {std::string("x"), nullptr});
  });
  CHECK(count_rows(t.store) == 1);
}
