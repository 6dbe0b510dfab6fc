// Keyring (personal.hpp): subjects' data keys in the table factum_subject_keys, both backends.
#include "keyring.hpp"

#include <algorithm>

namespace factum {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Timestamp at_us(std::int64_t us) { return Timestamp(std::chrono::microseconds(us)); }

std::span<const std::byte> as_span(const detail::AesKey& k) {
  return {reinterpret_cast<const std::byte*>(k.data()), k.size()};
}

// One row of the table.
struct KeyRow {
  std::string subject;
  std::string kek;
  std::optional<Bytes> wrapped;  // nullopt: forgotten
  std::int64_t created_us = 0;
  std::optional<std::int64_t> forgotten_us;
};

constexpr const char* kSelectOne =
    "SELECT subject, kek, wrapped, created_us, forgotten_us FROM factum_subject_keys "
    "WHERE subject = ?1";

KeyRow row_of(const SqlRow& r) {
  KeyRow k;
  k.subject = r.text(0);
  k.kek = r.is_null(1) ? std::string() : r.text(1);
  if (!r.is_null(2)) k.wrapped = r.blob(2);
  k.created_us = r.integer(3);
  if (!r.is_null(4)) k.forgotten_us = r.integer(4);
  return k;
}

// The row of `subject`, read inside the caller's transaction; nullopt when there is none (or no
// table yet).
std::optional<KeyRow> read_row(Sql& sql, std::string_view subject) {
  if (sql.object_type(detail::kSubjectKeysTable) != "table") return std::nullopt;
  std::optional<KeyRow> out;
  sql.query(kSelectOne, {std::string(subject)}, [&](const SqlRow& r) { out = row_of(r); });
  return out;
}

SubjectInfo info_of(const KeyRow& k) {
  SubjectInfo i;
  i.subject = k.subject;
  i.state = k.wrapped ? SubjectInfo::State::active : SubjectInfo::State::forgotten;
  i.kek_id = k.wrapped ? k.kek : std::string();
  i.created_at = at_us(k.created_us);
  if (k.forgotten_us) i.forgotten_at = at_us(*k.forgotten_us);
  return i;
}

[[noreturn]] void forgotten_error(std::string_view subject) {
  throw InvalidArgument("factum: subject '" + std::string(subject) +
                        "' was forgotten: nothing personal of it is stored again");
}

}  // namespace

namespace detail {

std::string key_table_ddl(SqlDialect dialect) {
  return table_ddl(dialect,
                   "CREATE TABLE IF NOT EXISTS factum_subject_keys (subject TEXT PRIMARY KEY, "
                   "kek TEXT NOT NULL, wrapped BLOB, created_us INTEGER NOT NULL, "
                   "forgotten_us INTEGER)");
}

void ensure_key_table(Sql& sql) { sql.execute(key_table_ddl(sql.dialect())); }

void missing_key(const EventId& id, std::string_view stream, std::string_view subject,
                 bool forgotten) {
  throw InvalidArgument(
      "factum: the event " + id.to_string() + " of stream '" + std::string(stream) +
      "' holds a personal value of subject '" + std::string(subject) + "', which " +
      (forgotten ? std::string("was forgotten (before this append committed)")
                 : std::string("has no key in this store (was the event encoded with another "
                               "store's keyring?)")) +
      ": nothing was written");
}

bool forget_key(Sql& sql, std::string_view subject, std::int64_t now) {
  ensure_key_table(sql);
  // SQLite zeroes what a change frees in the file's pages (the old row, with the wrapped key)
  // instead of leaving it in free space; the checkpoint after the commit clears the WAL.
  if (sql.dialect() == SqlDialect::sqlite) sql.execute("PRAGMA secure_delete = ON");
  const std::optional<KeyRow> row = read_row(sql, subject);
  if (row) {
    sql.execute(
        "UPDATE factum_subject_keys SET kek = '', wrapped = NULL, forgotten_us = "
        "COALESCE(forgotten_us, ?2) WHERE subject = ?1",
        {std::string(subject), now});
  } else {
    sql.execute(
        "INSERT INTO factum_subject_keys (subject, kek, wrapped, created_us, forgotten_us) "
        "VALUES (?1, '', NULL, ?2, ?2)",
        {std::string(subject), now});
  }
  return row && row->wrapped.has_value();
}

void require_keys(Sql& sql, std::span<const RecordedEvent> events) {
  bool table = false;
  bool looked = false;
  std::vector<std::string> checked;
  for (const RecordedEvent& e : events) {
    for (const std::string& subject : subjects_of(e.metadata)) {
      if (std::find(checked.begin(), checked.end(), subject) != checked.end()) continue;
      if (!looked) {
        table = sql.object_type(kSubjectKeysTable) == "table";
        looked = true;
      }
      std::optional<std::int64_t> active;
      if (table) {
        active = sql.query_integer(
            "SELECT CASE WHEN wrapped IS NULL THEN 0 ELSE 1 END FROM factum_subject_keys "
            "WHERE subject = ?1",
            {subject});
      }
      if (!active || *active == 0) missing_key(e.id, e.stream_id, subject, active.has_value());
      checked.push_back(subject);
    }
  }
}

std::string forgotten_payload(std::string_view subject) {
  return "{\"subject\":\"" + std::string(subject) + "\"}";  // subject ids need no escaping
}

}  // namespace detail

std::optional<std::string> forgotten_subject(const RecordedEvent& e) {
  if (e.type != kSubjectForgottenType || e.stream_id != kSubjectsStream) return std::nullopt;
  constexpr std::string_view head = "{\"subject\":\"";
  constexpr std::string_view tail = "\"}";
  const std::string_view text(reinterpret_cast<const char*>(e.payload.data()), e.payload.size());
  if (text.size() < head.size() + tail.size() || !text.starts_with(head) || !text.ends_with(tail)) {
    return std::nullopt;
  }
  std::string subject(text.substr(head.size(), text.size() - head.size() - tail.size()));
  try {
    validate_subject(subject);
  } catch (const InvalidArgument&) {
    return std::nullopt;
  }
  return subject;
}

// --- Keyring::State ---------------------------------------------------------------------------

std::shared_ptr<detail::Storage> Keyring::State::open_storage() const {
  std::shared_ptr<detail::Storage> s = storage.lock();
  if (!s) {
    throw StorageError(StorageError::Kind::io,
                       "factum: the keyring of '" + shown + "' outlived its store (closed)");
  }
  return s;
}

detail::AesKey Keyring::State::unwrap(std::string_view subject, const std::string& kek,
                                      const Bytes& wrapped) {
  if (kek != provider->id()) {
    throw Error("factum: the data key of subject '" + std::string(subject) + "' in '" + shown +
                "' is wrapped by the key-encryption key " + kek + ", not by " + provider->id() +
                " (rewrap the keys: Keyring::rewrap with the older provider)");
  }
  const Bytes raw = provider->unwrap(wrapped, subject);
  detail::AesKey key{};
  if (raw.size() != key.size()) {
    throw Error("factum: the data key of subject '" + std::string(subject) + "' is not 32 bytes");
  }
  std::copy_n(reinterpret_cast<const std::uint8_t*>(raw.data()), key.size(), key.begin());
  return key;
}

void Keyring::State::check_provider() {
  const std::string id = provider->id();
  std::optional<KeyRow> row;
  std::int64_t others = 0;
  open_storage()->read_sql([&](Sql& sql) {
    if (sql.object_type(detail::kSubjectKeysTable) != "table") return;
    // A key wrapped by this provider's id when there is one (the newest), else any key.
    sql.query(
        "SELECT subject, kek, wrapped, created_us, forgotten_us FROM factum_subject_keys "
        "WHERE wrapped IS NOT NULL ORDER BY CASE WHEN kek = ?1 THEN 0 ELSE 1 END, "
        "created_us DESC, subject LIMIT 1",
        {id}, [&](const SqlRow& r) { row = row_of(r); });
    others = sql.query_integer(
                    "SELECT count(*) FROM factum_subject_keys WHERE wrapped IS NOT NULL AND "
                    "kek <> ?1",
                    {id})
                 .value_or(0);
  });
  if (!row) return;  // no key yet: any KEK will do
  if (row->kek != id) {
    throw InvalidArgument("factum: the key-encryption key " + id + " wraps none of the " +
                          std::to_string(others) + " data keys of '" + shown +
                          "', which are wrapped by " + row->kek +
                          " (the wrong KEK file? To rotate the KEK, open with the old one as "
                          "PersonalDataOptions::previous_key_provider)");
  }
  try {
    unwrap(row->subject, row->kek, *row->wrapped);
  } catch (const Error& e) {
    throw InvalidArgument("factum: the key-encryption key " + id +
                          " does not unwrap the data keys "
                          "of '" +
                          shown + "' that name it (" + e.what() + ")");
  }
}

std::optional<detail::AesKey> Keyring::State::key(std::string_view subject, bool create) {
  {
    detail::MutexLock lock(mu_);
    const auto it = cache_.find(subject);
    if (it != cache_.end() && Clock::now() < it->second.until) {
      if (!it->second.key && create) forgotten_error(subject);
      return it->second.key;
    }
  }
  const std::shared_ptr<detail::Storage> s = open_storage();
  std::optional<KeyRow> row;
  s->read_sql([&](Sql& sql) { row = read_row(sql, subject); });
  if (!row && create) {
    validate_subject(subject);
    const detail::AesKey fresh = detail::random_key();
    const Bytes wrapped = provider->wrap(as_span(fresh), subject);
    s->write_sql([&](Sql& sql) {
      detail::ensure_key_table(sql);
      // Another writer may have made it (or forgotten the subject) since: its row wins.
      sql.execute(
          "INSERT INTO factum_subject_keys (subject, kek, wrapped, created_us, forgotten_us) "
          "VALUES (?1, ?2, ?3, ?4, NULL) ON CONFLICT (subject) DO NOTHING",
          {std::string(subject), provider->id(), wrapped, now_us()});
      row = read_row(sql, subject);
    });
  }
  if (!row) return std::nullopt;  // never made: nothing of it can be decrypted
  std::optional<detail::AesKey> key;
  if (row->wrapped) key = unwrap(subject, row->kek, *row->wrapped);
  {
    detail::MutexLock lock(mu_);
    remember(std::string(subject), {key, Clock::now() + cache_for});
  }
  if (!key && create) forgotten_error(subject);
  return key;
}

void Keyring::State::remember(std::string subject, Entry entry) {
  // Bounded: a service that decodes values of millions of subjects keeps at most max_cached
  // keys; past that the expired ones go, and if that frees too little, all of them (each is
  // read again from the table when next needed).
  if (cache_.size() >= max_cached && cache_.find(subject) == cache_.end()) {
    const auto now = Clock::now();
    std::erase_if(cache_, [&](const auto& item) { return item.second.until <= now; });
    if (cache_.size() >= max_cached / 2) cache_.clear();
  }
  cache_[std::move(subject)] = entry;
}

std::size_t Keyring::State::cached() {
  detail::MutexLock lock(mu_);
  return cache_.size();
}

void Keyring::State::forgotten(std::string_view subject) {
  detail::MutexLock lock(mu_);
  // Remembered as forgotten for good: a forget is never undone.
  remember(std::string(subject), {std::nullopt, Clock::time_point::max()});
}

// --- Keyring ----------------------------------------------------------------------------------

Keyring::Keyring(std::shared_ptr<State> state) : state_(std::move(state)) {}
Keyring::~Keyring() = default;

std::string Keyring::seal(std::string_view subject, std::string_view plaintext,
                          std::string_view aad) const {
  const std::optional<detail::AesKey> key = state_->key(subject, true);
  return detail::aes_gcm_seal(*key, plaintext, aad);
}

std::optional<std::string> Keyring::open(std::string_view subject, std::string_view sealed,
                                         std::string_view aad) const {
  const std::optional<detail::AesKey> key = state_->key(subject, false);
  if (!key) return std::nullopt;
  std::optional<std::string> plain = detail::aes_gcm_open(*key, sealed, aad);
  if (!plain) {
    throw PayloadError("the personal value of subject '" + std::string(subject) +
                       "' does not decrypt under its key: its bytes were altered, or it was "
                       "moved from another event or field");
  }
  return plain;
}

std::optional<SubjectInfo> Keyring::subject(std::string_view subject) const {
  std::optional<KeyRow> row;
  state_->open_storage()->read_sql([&](Sql& sql) { row = read_row(sql, subject); });
  if (!row) return std::nullopt;
  return info_of(*row);
}

namespace {

void read_subjects(Sql& sql, std::vector<SubjectInfo>& out) {
  if (sql.object_type(detail::kSubjectKeysTable) != "table") return;
  sql.query(
      "SELECT subject, kek, wrapped, created_us, forgotten_us FROM factum_subject_keys "
      "ORDER BY subject",
      {}, [&](const SqlRow& r) { out.push_back(info_of(row_of(r))); });
}

}  // namespace

std::vector<SubjectInfo> list_subjects(const EventStore& store) {
  std::vector<SubjectInfo> out;
  store.read_sql([&](Sql& sql) { read_subjects(sql, out); });
  return out;
}

std::vector<WrappedKey> wrapped_keys(const EventStore& store) {
  std::vector<WrappedKey> out;
  store.read_sql([&](Sql& sql) {
    if (sql.object_type(detail::kSubjectKeysTable) != "table") return;
    sql.query(
        "SELECT subject, kek, wrapped, created_us, forgotten_us FROM factum_subject_keys "
        "WHERE wrapped IS NOT NULL ORDER BY subject",
        {}, [&](const SqlRow& r) {
          KeyRow k = row_of(r);
          out.push_back(
              {std::move(k.subject), std::move(k.kek), std::move(*k.wrapped), at_us(k.created_us)});
        });
  });
  return out;
}

std::size_t add_wrapped_keys(EventStore& store, std::span<const WrappedKey> keys) {
  for (const WrappedKey& k : keys) {
    validate_subject(k.subject);
    if (k.kek_id.empty() || k.kek_id.size() > 64 || k.wrapped.empty()) {
      throw InvalidArgument("factum: the key of subject '" + k.subject +
                            "' has no KEK id (1 to 64 characters) or no wrapped bytes");
    }
  }
  std::size_t added = 0;
  store.write_sql([&](Sql& sql) {
    detail::ensure_key_table(sql);
    for (const WrappedKey& k : keys) {
      const std::optional<KeyRow> row = read_row(sql, k.subject);
      if (!row) {
        sql.execute(
            "INSERT INTO factum_subject_keys (subject, kek, wrapped, created_us, forgotten_us) "
            "VALUES (?1, ?2, ?3, ?4, NULL)",
            {k.subject, k.kek_id, k.wrapped, k.created_at.time_since_epoch().count()});
        ++added;
      } else if (row->wrapped && (*row->wrapped != k.wrapped || row->kek != k.kek_id)) {
        throw InvalidArgument("factum: subject '" + k.subject +
                              "' has another key in this store already: no key was added");
      }
    }
  });
  return added;
}

std::vector<SubjectInfo> Keyring::subjects() const {
  std::vector<SubjectInfo> out;
  state_->open_storage()->read_sql([&](Sql& sql) { read_subjects(sql, out); });
  return out;
}

std::size_t Keyring::cached_keys() const { return state_->cached(); }

std::size_t Keyring::rewrap(const KeyProvider& previous) const {
  const std::string old_id = previous.id();
  const std::string new_id = state_->provider->id();
  std::size_t count = 0;
  if (old_id == new_id) return 0;
  state_->open_storage()->write_sql([&](Sql& sql) {
    detail::ensure_key_table(sql);
    std::vector<KeyRow> rows;
    sql.query(
        "SELECT subject, kek, wrapped, created_us, forgotten_us FROM factum_subject_keys "
        "WHERE kek = ?1 AND wrapped IS NOT NULL ORDER BY subject",
        {old_id}, [&](const SqlRow& r) { rows.push_back(row_of(r)); });
    for (const KeyRow& k : rows) {
      const Bytes raw = previous.unwrap(*k.wrapped, k.subject);  // throws: nothing changed
      sql.execute("UPDATE factum_subject_keys SET kek = ?2, wrapped = ?3 WHERE subject = ?1",
                  {k.subject, new_id, state_->provider->wrap(raw, k.subject)});
      ++count;
    }
  });
  return count;
}

}  // namespace factum
