// samples/common/key_file.hpp — the key-encryption key (KEK) of a sample's personal data.
//
// factum-bank's owner names and factum-feed's display names and post texts are encrypted under
// per-subject data keys, which the store keeps
// wrapped by a KEK (docs/erasure.md). The KEK is a file of 32 random bytes given with
// --kek; by default "<store file>.kek", beside the store, made (mode 0600) the first time
// personal data is written. That default suits a sample; a real service keeps the KEK away
// from the store (another disk, a secret store, a KMS through a factum::KeyProvider), so that
// a copy of the store alone reads as ciphertext. A store on a PostgreSQL server has no file to
// sit beside: it needs --kek.
//
//   factum::StoreOptions options;
//   const auto kek = factum::samples::key_file_for(db, given, "factum-bank");
//   factum::samples::use_key_file(options, db, kek, /*create=*/true, "account owners");
//   auto store = factum::EventStore::open(db, options);
//
// Thread-safety: plain functions on the file system.
#pragma once

#include <factum/eventstore/store_options.hpp>

#include <filesystem>
#include <optional>
#include <string_view>

namespace factum::samples {

// The KEK file of the store at `db`: `given` when set, else "<db>.kek". Throws std::runtime_error
// for a PostgreSQL URI without `given` (naming `program`, which creates the file).
std::filesystem::path key_file_for(const std::filesystem::path& db,
                                   const std::optional<std::filesystem::path>& given,
                                   std::string_view program);

// Gives `options` a factum::FileKeyProvider on `kek`. When the file is missing: refuses
// (std::runtime_error, naming what the keys belong to: `holders`, e.g. "account owners") if the
// store at `db` holds a subject's key (its values are unreadable without the KEK that wrapped it);
// else creates it (32 random bytes, mode 0600) when `create`, and otherwise leaves `options`
// without a key provider (a store without keys reads without one). Throws factum::InvalidArgument
// for a file that is not 32 bytes.
void use_key_file(factum::StoreOptions& options, const std::filesystem::path& db,
                  const std::filesystem::path& kek, bool create, std::string_view holders);

}  // namespace factum::samples
