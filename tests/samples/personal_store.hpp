// tests/samples/personal_store.hpp — store options with a key-encryption key, for the API tests
// of the samples that keep personal data (factum-feed's names and posts, factum-bank's owners),
// and what a store file holds, for the tests that grep it for plaintext.
#pragma once

#include <factum/eventstore/personal.hpp>
#include <factum/eventstore/sql.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace factum::test {

// A KEK file of this process (made once, in a temporary folder that lives as long as the
// process): what --kek names for the programs' commands run in the test.
inline const std::filesystem::path& samples_kek() {
  static const TempDir folder;
  static const std::filesystem::path kek = [] {
    const std::filesystem::path file = folder.file("samples-test.kek");
    std::ofstream(file, std::ios::binary) << std::string(32, 'k');
    return file;
  }();
  return kek;
}

// TempStore::fast_options() with a FileKeyProvider on samples_kek().
inline StoreOptions personal_options() {
  StoreOptions options = TempStore::fast_options();
  options.personal_data.key_provider = std::make_shared<FileKeyProvider>(samples_kek());
  return options;
}

// Every byte a store file keeps: the file and its WAL.
inline std::string stored_bytes(const std::filesystem::path& db) {
  std::string bytes = slurp(db);
  if (std::filesystem::exists(db.string() + "-wal")) bytes += slurp(db.string() + "-wal");
  return bytes;
}

// The payloads of the log's events at `db`, end to end.
inline std::string stored_payloads(const std::filesystem::path& db) {
  std::string out;
  EventStore::open(db).read_sql([&](Sql& sql) {
    sql.query("SELECT payload FROM events", {}, [&](const SqlRow& row) {
      const Bytes blob = row.blob(0);
      out.append(reinterpret_cast<const char*>(blob.data()), blob.size());
    });
  });
  return out;
}

}  // namespace factum::test
