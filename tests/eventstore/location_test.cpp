// tests/eventstore/location_test.cpp — factum::is_server_location and factum::shown_location
// (<factum/eventstore/location.hpp>): which locations EventStore::open takes for a server, and
// how every message shows a location without its passwords.
#include <doctest/doctest.h>

#include <factum/eventstore/location.hpp>

using factum::is_server_location;
using factum::shown_location;

TEST_CASE("is_server_location is true for postgresql:// and postgres:// URIs") {
  CHECK(is_server_location("postgresql://app@db.internal:5432/ledger"));
  CHECK(is_server_location("postgres://app@db.internal/ledger"));
  CHECK(is_server_location("postgresql:///ledger"));  // the default host
}

TEST_CASE("is_server_location is false for a file named like a URI's scheme") {
  CHECK_FALSE(is_server_location("postgresql-notes.db"));
  CHECK_FALSE(is_server_location("postgres.db"));
  CHECK_FALSE(is_server_location("postgresql:notes.db"));
  CHECK_FALSE(is_server_location("./postgresql://x"));
  CHECK_FALSE(is_server_location("PostgreSQL://db/x"));  // libpq's schemes are lowercase
  CHECK_FALSE(is_server_location(""));
}

TEST_CASE("is_server_location is false for a keyword/value string: open takes it as a path") {
  CHECK_FALSE(is_server_location("host=db.internal dbname=ledger password=s3cret"));
}

TEST_CASE("shown_location returns a file's path unchanged") {
  CHECK(shown_location("bank.db") == "bank.db");
  CHECK(shown_location("/var/lib/factum/postgresql-notes.db") ==
        "/var/lib/factum/postgresql-notes.db");
  CHECK(shown_location("user:pw@host?password=x") == "user:pw@host?password=x");
  CHECK(shown_location("host=db password=s3cret") == "host=db password=s3cret");
}

TEST_CASE("shown_location returns a URI without a password unchanged") {
  for (const char* uri :
       {"postgresql://app@db.internal:5432/ledger?sslmode=require", "postgres://db/ledger",
        "postgresql:///ledger?host=/var/run/postgresql", "postgresql://[::1]:5432/ledger",
        "postgresql://app@[::1]/ledger", "postgresql://app@h1:5432,h2:5433/ledger",
        "postgresql://db/ledger?passfile=/home/app/.pgpass&mypassword=x"}) {
    CHECK(shown_location(uri) == uri);
  }
}

TEST_CASE("shown_location masks the password of user:password@") {
  CHECK(shown_location("postgresql://app:s3cret@db.internal:5432/ledger") ==
        "postgresql://app:***@db.internal:5432/ledger");
  CHECK(shown_location("postgres://app:s3cret@db") == "postgres://app:***@db");
  CHECK(shown_location("postgresql://:s3cret@db/ledger") == "postgresql://:***@db/ledger");
}

TEST_CASE("shown_location masks a password holding a percent-encoded or a raw '@'") {
  CHECK(shown_location("postgresql://app:p%40ss@db/ledger") == "postgresql://app:***@db/ledger");
  CHECK(shown_location("postgresql://app:p@ss@db/ledger") == "postgresql://app:***@db/ledger");
}

TEST_CASE("shown_location masks a password holding a raw '?' or '#', as libpq reads it") {
  CHECK(shown_location("postgresql://app:pa?ss@db/ledger") == "postgresql://app:***@db/ledger");
  CHECK(shown_location("postgresql://app:pa#ss@db/ledger") == "postgresql://app:***@db/ledger");
}

TEST_CASE("shown_location keeps an '@' of the query out of the credentials") {
  CHECK(shown_location("postgresql://app:s3cret@db/ledger?application_name=ops@eu") ==
        "postgresql://app:***@db/ledger?application_name=ops@eu");
  CHECK(shown_location("postgresql://app@db/ledger?application_name=ops@eu") ==
        "postgresql://app@db/ledger?application_name=ops@eu");
}

TEST_CASE("shown_location masks a password= parameter wherever it is in the query") {
  CHECK(shown_location("postgresql://db/ledger?password=s3cret") ==
        "postgresql://db/ledger?password=***");
  CHECK(shown_location("postgresql://db/ledger?sslmode=disable&password=s3cret&user=app") ==
        "postgresql://db/ledger?sslmode=disable&password=***&user=app");
  CHECK(shown_location("postgresql://db/ledger?user=app&password=s3cret") ==
        "postgresql://db/ledger?user=app&password=***");
}

TEST_CASE("shown_location masks a password= value up to the next '&' only") {
  CHECK(shown_location("postgresql://db/ledger?password=se#cr=et&sslmode=disable") ==
        "postgresql://db/ledger?password=***&sslmode=disable");
}

TEST_CASE("shown_location masks a percent-encoded password name and sslpassword=") {
  CHECK(shown_location("postgresql://db/ledger?pass%77ord=s3cret") ==
        "postgresql://db/ledger?pass%77ord=***");
  CHECK(shown_location("postgresql://db/ledger?sslpassword=s3cret&sslmode=verify-full") ==
        "postgresql://db/ledger?sslpassword=***&sslmode=verify-full");
}

TEST_CASE("shown_location masks both the credentials and the password= parameter") {
  CHECK(shown_location("postgres://app:one@db/ledger?password=two") ==
        "postgres://app:***@db/ledger?password=***");
}
