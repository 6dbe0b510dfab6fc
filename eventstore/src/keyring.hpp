// The store's side of a Keyring (personal.hpp): the table of subjects' data keys, wrapped by the
// key provider's KEK, and a short-lived cache of unwrapped keys.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "factum/detail/mutex.hpp"
#include "factum/eventstore/personal.hpp"
#include "factum/eventstore/sql.hpp"
#include "factum/eventstore/store_options.hpp"
#include "personal_crypto.hpp"
#include "storage.hpp"

namespace factum {

struct Keyring::State {
  State(std::weak_ptr<detail::Storage> s, const PersonalDataOptions& o, std::string n)
      : storage(std::move(s)),
        provider(o.key_provider),
        cache_for(o.cache_for),
        max_cached(std::max<std::size_t>(o.max_cached_keys, 1)),
        shown(std::move(n)) {}

  // The storage, while the store is open. Throws StorageError once it is closed.
  std::shared_ptr<detail::Storage> open_storage() const;
  // The data key of `subject`: nullopt when it has none (forgotten, or never made). With
  // `create`, makes one when it has none and was never forgotten (InvalidArgument when it was).
  std::optional<detail::AesKey> key(std::string_view subject, bool create);
  // Throws InvalidArgument when the store has data keys and the provider unwraps none of them
  // (the wrong KEK): one key is unwrapped, one wrapped by the provider's id when there is one.
  void check_provider();
  // After a forget of `subject` committed: no key of it is kept.
  void forgotten(std::string_view subject);
  // How many subjects the cache holds (at most max_cached).
  std::size_t cached();

  const std::weak_ptr<detail::Storage> storage;
  const std::shared_ptr<const KeyProvider> provider;
  const std::chrono::milliseconds cache_for;
  const std::size_t max_cached;
  const std::string shown;  // the store, for messages

 private:
  struct Entry {
    std::optional<detail::AesKey> key;  // nullopt: forgotten
    std::chrono::steady_clock::time_point until;
  };
  detail::AesKey unwrap(std::string_view subject, const std::string& kek, const Bytes& wrapped);
  void remember(std::string subject, Entry entry) FACTUM_REQUIRES(mu_);

  detail::Mutex mu_;
  std::map<std::string, Entry, std::less<>> cache_ FACTUM_GUARDED_BY(mu_);
};

namespace detail {

inline constexpr const char* kSubjectKeysTable = "factum_subject_keys";

// Creates the table of keys when missing (inside the caller's write transaction).
void ensure_key_table(Sql& sql);
// The statement ensure_key_table runs, in the words of `dialect`.
std::string key_table_ddl(SqlDialect dialect);
// Inside the append transaction of a factum.SubjectForgotten event: removes the subject's key
// (its bytes overwritten on SQLite: secure_delete) and marks it forgotten, so that no key of it
// is made again. Returns whether it had a key.
bool forget_key(Sql& sql, std::string_view subject, std::int64_t now_us);
// Inside an append's transaction: throws InvalidArgument unless every subject named by the
// events' kSubjectsMetadataKey has a key in the store (none forgotten, none unknown).
void require_keys(Sql& sql, std::span<const RecordedEvent> events);
// require_keys' error: the event `id` of `stream` holds a value of `subject`, whose key was
// forgotten (`forgotten`) or is not in the store.
[[noreturn]] void missing_key(const EventId& id, std::string_view stream, std::string_view subject,
                              bool forgotten);
// The payload of a factum.SubjectForgotten event: {"subject":"<id>"}.
std::string forgotten_payload(std::string_view subject);

}  // namespace detail
}  // namespace factum
