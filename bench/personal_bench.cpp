// bench/personal_bench.cpp — what personal data costs (docs/erasure.md, issue 31 item 8):
//
//   1. sealing and opening one 100-byte personal value (Keyring::seal / open, key cached),
//      against the raw ceiling measured in the same run: libcrypto's AES-256-GCM alone on the
//      same bytes; and encoding a plain 100-byte field, for scale;
//   2. appending events with two personal fields against the same events with plain fields
//      (one event per append, the store's default durability unless --durability);
//   3. forgetting one subject among --subjects subjects (the key table filled directly).
//
//   personal_bench [--values N] [--events N] [--subjects N] [--durability full|normal]
//                  [--pg-uri postgresql://...]   (each store in a schema of its own on that
//                                                 server, created and dropped by the bench)
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "factum/factum.hpp"
#include "support.hpp"
#ifdef FACTUM_HAVE_POSTGRES
#include "raw_postgres.hpp"
#endif

namespace {

using bench::Clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct PlainSigned {
  static constexpr std::string_view event_type = "bench.PlainSigned";
  std::string from;
  std::string to;
  std::int64_t cents = 0;
  template <class A>
  void serialize(A& ar, unsigned) {
    ar& from& to& cents;
  }
};

struct PersonalSigned {
  static constexpr std::string_view event_type = "bench.PersonalSigned";
  factum::Personal<std::string> from;
  factum::Personal<std::string> to;
  std::int64_t cents = 0;
  template <class A>
  void serialize(A& ar, unsigned) {
    ar& from& to& cents;
  }
};

// libcrypto's AES-256-GCM on `plain` with a counter nonce, one reused context (the key set
// each time, as a store with many subjects must): the ceiling of sealing.
std::size_t raw_gcm(EVP_CIPHER_CTX* ctx, const unsigned char* key, const std::string& plain,
                    std::string& out) {
  static std::uint64_t counter = 0;
  unsigned char nonce[12] = {};
  ++counter;
  std::memcpy(nonce, &counter, sizeof counter);
  out.resize(plain.size() + 16);
  int n = 0;
  EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key, nonce);
  EVP_EncryptUpdate(ctx, reinterpret_cast<unsigned char*>(out.data()), &n,
                    reinterpret_cast<const unsigned char*>(plain.data()),
                    static_cast<int>(plain.size()));
  EVP_EncryptFinal_ex(ctx, reinterpret_cast<unsigned char*>(out.data()) + n, &n);
  EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, out.data() + plain.size());
  return out.size();
}

void line(const char* what, double us, double ceiling_us, const char* target) {
  std::printf("%-44s %8.3f us  (raw ceiling %.3f us, ratio %.2f)  %s\n", what, us, ceiling_us,
              ceiling_us / us, target);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t values = 200000;
  std::size_t events = 2000;
  std::size_t subjects = 100000;
  factum::Durability durability = factum::Durability::full;
  std::string pg_uri;
  CLI::App app("personal_bench: the cost of encrypted personal values and of forgetting");
  bench::cli_defaults(app);
  bench::add_positive(app, "--values", values, "Values sealed and opened");
  bench::add_positive(app, "--events", events, "Events appended, each way");
  bench::add_positive(app, "--subjects", subjects, "Subjects in the key table for the forget");
  bench::add_durability(app, durability, "Durability of the stores");
#ifdef FACTUM_HAVE_POSTGRES
  app.add_option("--pg-uri", pg_uri,
                 "a PostgreSQL server: every store in a schema of its own there (created and "
                 "dropped by the bench), instead of SQLite files");
#endif
  bench::parse_or_exit(app, argc, argv);
  bench::catch_interrupts();
  return bench::run_reporting("personal_bench", [&] {
    bench::TempDir dir(std::filesystem::temp_directory_path(), "factum-personal-bench");
    const auto kek = dir.path() / "kek.bin";
    {
      std::string k(32, '\0');
      RAND_bytes(reinterpret_cast<unsigned char*>(k.data()), 32);
      std::ofstream(kek, std::ios::binary) << k;
    }
    factum::StoreOptions o;
    o.durability = durability;
    o.personal_data.key_provider = std::make_shared<factum::FileKeyProvider>(kek);
    // A new store named `name`: a file of `dir`, or a schema of the --pg-uri server.
#ifdef FACTUM_HAVE_POSTGRES
    std::unique_ptr<bench::RawPg> admin;
    std::vector<std::unique_ptr<bench::PgSchema>> schemas;
    if (!pg_uri.empty()) admin = std::make_unique<bench::RawPg>(pg_uri);
#endif
    const auto open = [&](const std::string& name) {
#ifdef FACTUM_HAVE_POSTGRES
      if (admin) {
        schemas.push_back(std::make_unique<bench::PgSchema>(*admin, pg_uri, name));
        return factum::EventStore::open(schemas.back()->uri(), o);
      }
#endif
      return factum::EventStore::open(dir.path() / (name + ".db"), o);
    };
    std::printf("personal_bench: %s\n", pg_uri.empty() ? "SQLite" : "PostgreSQL");

    // 1. One value.
    factum::EventStore store = open("values");
    const std::shared_ptr<const factum::Keyring> keys = store.keyring();
    const std::string plain(100, 'v');
    const factum::EventId id = factum::EventId::generate();
    const std::string aad = factum::detail::personal_aad(id, 0, "user:1");
    std::string sealed = keys->seal("user:1", plain, aad);  // makes the key
    std::size_t sink = 0;
    unsigned char raw_key[32];
    RAND_bytes(raw_key, 32);
    std::string raw_out;
    auto t = Clock::now();
    EVP_CIPHER_CTX* raw_ctx = EVP_CIPHER_CTX_new();
    for (std::size_t i = 0; i < values; ++i) sink += raw_gcm(raw_ctx, raw_key, plain, raw_out);
    EVP_CIPHER_CTX_free(raw_ctx);
    const double raw_us = seconds_since(t) * 1e6 / static_cast<double>(values);
    t = Clock::now();
    for (std::size_t i = 0; i < values; ++i) sink += keys->seal("user:1", plain, aad).size();
    const double seal_us = seconds_since(t) * 1e6 / static_cast<double>(values);
    t = Clock::now();
    for (std::size_t i = 0; i < values; ++i) sink += keys->open("user:1", sealed, aad)->size();
    const double open_us = seconds_since(t) * 1e6 / static_cast<double>(values);
    t = Clock::now();
    for (std::size_t i = 0; i < values; ++i) sink += factum::encode_payload(plain).size();
    const double plain_us = seconds_since(t) * 1e6 / static_cast<double>(values);
    std::printf("personal_bench: %zu values of 100 bytes, %zu events, %zu subjects\n\n", values,
                events, subjects);
    line("seal one 100-byte value (Keyring::seal)", seal_us, raw_us, "target < 2 us");
    line("open one 100-byte value (Keyring::open)", open_us, raw_us, "target < 2 us");
    std::printf("%-44s %8.3f us\n\n", "encode a plain 100-byte field (for scale)", plain_us);

    // 2. Appends: two personal fields against two plain ones, one event per append.
    factum::EventRegistry registry;
    registry.add<PlainSigned>().add<PersonalSigned>().use_keyring(keys);
    const std::string name(40, 'n');
    double plain_rate = 0;
    double personal_rate = 0;
    for (int round = 0; round < 2; ++round) {  // best of two, interleaved
      factum::EventStore a = open("plain" + std::to_string(round));
      t = Clock::now();
      for (std::size_t i = 0; i < events; ++i) {
        a.append("pay-" + std::to_string(i % 100), factum::ExpectedVersion::any(), registry,
                 PlainSigned{name, name, static_cast<std::int64_t>(i)});
      }
      plain_rate = std::max(plain_rate, static_cast<double>(events) / seconds_since(t));
      t = Clock::now();
      for (std::size_t i = 0; i < events; ++i) {
        const std::string s = "user:" + std::to_string(i % 100);
        store.append("pay-" + std::to_string(i % 100), factum::ExpectedVersion::any(), registry,
                     PersonalSigned{{s, name}, {s, name}, static_cast<std::int64_t>(i)});
      }
      personal_rate = std::max(personal_rate, static_cast<double>(events) / seconds_since(t));
      bench::check_interrupt();
    }
    std::printf("%-44s %10.0f events/s\n", "append, two plain fields", plain_rate);
    std::printf("%-44s %10.0f events/s  (ratio %.2f, target >= 0.80)\n\n",
                "append, two personal fields", personal_rate, personal_rate / plain_rate);

    // 3. Forget one subject among many: the table filled in one transaction.
    factum::EventStore many = open("subjects");
    const factum::FileKeyProvider provider(kek);
    many.write_sql([&](factum::Sql& sql) {
      sql.execute(factum::table_ddl(
          sql,
          "CREATE TABLE IF NOT EXISTS factum_subject_keys (subject TEXT PRIMARY KEY, kek TEXT "
          "NOT NULL, wrapped BLOB, created_us INTEGER NOT NULL, forgotten_us INTEGER)"));
      std::vector<std::byte> key(32, std::byte{7});
      for (std::size_t i = 0; i < subjects; ++i) {
        const std::string s = "s:" + std::to_string(i);
        sql.execute("INSERT INTO factum_subject_keys VALUES (?1, ?2, ?3, 0, NULL)",
                    {s, provider.id(), provider.wrap(key, s)});
      }
    });
    const int forgets = 20;
    t = Clock::now();
    for (int i = 0; i < forgets; ++i) {
      many.forget("s:" + std::to_string(static_cast<std::size_t>(i) * subjects / forgets));
    }
    const double forget_ms = seconds_since(t) * 1e3 / forgets;
    std::printf("%-44s %8.3f ms  (target < 10 ms)\n", "forget one subject among them", forget_ms);
    return sink == 0 ? 1 : 0;
  });
}
