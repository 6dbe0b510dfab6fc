// factum/eventstore/personal.hpp — personal data that can be forgotten without touching the log
// (crypto-shredding).
//
// A personal value is stored encrypted under a data key of its own subject (a person, an
// account holder); forgetting the subject deletes that key. The hash chain covers the stored
// ciphertext, which never changes: after a forget the log still verifies, and the value is gone.
//
//   struct UserRegistered {
//     static constexpr std::string_view event_type = "feed.UserRegistered";
//     std::string user_id;                        // plain: not erasable
//     factum::Personal<std::string> display_name; // erasable, under its subject
//     template <class A> void serialize(A& ar, unsigned) { ar & user_id & display_name; }
//   };
//
//   factum::StoreOptions options;
//   options.personal_data.key_provider =
//       std::make_shared<factum::FileKeyProvider>("/etc/feed/kek.bin");  // openssl rand -out
//       kek.bin 32
//   factum::EventStore store = factum::EventStore::open("feed.db", options);
//   registry.use_keyring(store.keyring());      // once, with the other registry set-up
//   store.append("user-7", factum::ExpectedVersion::no_stream(), registry,
//                UserRegistered{"7", {"user-7", "Ada"}});
//   store.forget("user-7");                     // the key is deleted, a fact appended
//   // decoding now gives display_name.is_erased() == true, and store.verify() still passes.
//
// Encryption is AES-256-GCM (OpenSSL's libcrypto) with a fresh random 96-bit nonce per value;
// the associated data binds the event id, the value's place among the event's personal values
// and the subject, so a value moved to another event or field fails to decrypt. Each subject's
// 256-bit data key is stored in the store (table factum_subject_keys, both backends) wrapped by
// a key-encryption key the application supplies through a KeyProvider; the KEK is never stored.
// The exact bytes are in docs/storage-format.md ("Personal data").
//
// What is not erasable: stream ids, event types, metadata (actor, correlation ids, values) and
// the plain fields of events. Keep personal data out of them; a subject id is an opaque id
// (1 to 128 bytes of A-Z a-z 0-9 . _ : -), never a name or an e-mail address.
//
// Thread-safety: Personal<T> is a value. KeyProvider implementations must be safe to call from
// several threads at once (FileKeyProvider is: it is immutable after loading). A Keyring is
// thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_id.hpp"
#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/payload_archive.hpp"

namespace factum {

// A personal value was read whose subject was forgotten (Personal::value() on an erased value),
// or that was decoded without a keyring.
class ErasedValueError : public Error {
 public:
  explicit ErasedValueError(const std::string& message) : Error(message) {}
};

// Throws InvalidArgument unless `subject` is 1 to 128 bytes of A-Z a-z 0-9 . _ : -.
void validate_subject(std::string_view subject);

namespace detail {

// What encrypts and decrypts personal values: the store's Keyring.
class PersonalCodec {
 public:
  virtual ~PersonalCodec() = default;
  // The stored form of `plaintext` (docs/storage-format.md). Throws InvalidArgument for a
  // forgotten subject, StorageError when its key cannot be made.
  virtual std::string seal(std::string_view subject, std::string_view plaintext,
                           std::string_view aad) const = 0;
  // The plaintext of `sealed`; nullopt when the subject's key is gone (forgotten). Throws
  // PayloadError when the bytes do not decrypt under the subject's key (altered, or moved).
  virtual std::optional<std::string> open(std::string_view subject, std::string_view sealed,
                                          std::string_view aad) const = 0;
};

// The personal values of the event being encoded or decoded on this thread (set by
// EventRegistry around each encode and decode).
struct PersonalScope {
  PersonalScope(const PersonalCodec* codec, const EventId& event) noexcept;
  ~PersonalScope();
  PersonalScope(const PersonalScope&) = delete;
  PersonalScope& operator=(const PersonalScope&) = delete;

  const PersonalCodec* codec;
  EventId event;
  std::uint32_t next_field = 0;  // the place of the next personal value in the event
  PersonalScope* outer;
  std::vector<std::string> sealed;  // the subjects of the values sealed in it (may repeat)
};
PersonalScope* current_personal_scope() noexcept;

// The metadata value (key kSubjectsMetadataKey) naming the subjects whose values an encoded
// event holds: their ids, sorted, unique, separated by ','. EventRegistry::encode sets it; an
// append of an event that carries it commits only if each subject still has a key in the store
// (checked inside the append's transaction: no value is ever stored under a deleted key).
inline constexpr const char* kSubjectsMetadataKey = "factum.subjects";
// Sets `metadata`'s kSubjectsMetadataKey from `scope.sealed` (nothing when it is empty).
void note_subjects(const PersonalScope& scope, Metadata& metadata);
// The subject ids of `metadata`'s kSubjectsMetadataKey (none when it has no such value). Throws
// InvalidArgument when one is not a valid subject id.
std::vector<std::string> subjects_of(const Metadata& metadata);

// The associated data of the personal value at `field` of `event`, of `subject`.
std::string personal_aad(const EventId& event, std::uint32_t field, std::string_view subject);

// What stands for the event id in the associated data of a snapshot's personal values: the
// first 16 bytes of SHA-256("factum-snapshot", stream, version), so a snapshot's values decrypt
// only in that snapshot. Snapshots encrypt under the subjects' keys like events do: a forget
// erases them in both.
EventId snapshot_scope_id(std::string_view stream, std::uint64_t version);

}  // namespace detail

// A value of T that belongs to a subject and can be forgotten. T is anything a payload holds
// (a string, a struct with a serialize function, ...), except another Personal.
template <class T>
class Personal {
 public:
  enum class State {
    value,   // the value is here
    erased,  // its subject was forgotten: the value is gone for good
    sealed,  // decoded without a keyring (EventRegistry::use_keyring): not decrypted
  };

  Personal() = default;
  Personal(std::string subject, T value) : subject_(std::move(subject)), value_(std::move(value)) {}

  const std::string& subject() const noexcept { return subject_; }
  State state() const noexcept { return state_; }
  bool has_value() const noexcept { return state_ == State::value && value_.has_value(); }
  bool is_erased() const noexcept { return state_ == State::erased; }
  bool is_sealed() const noexcept { return state_ == State::sealed; }

  // The value. Throws ErasedValueError when it is erased or sealed.
  const T& value() const {
    if (!has_value()) {
      throw ErasedValueError("factum: the personal value of subject '" + subject_ + "' is " +
                             (is_erased() ? "erased: its subject was forgotten"
                                          : "sealed: it was decoded without a keyring"));
    }
    return *value_;
  }
  // The value, or `fallback` when it is erased or sealed.
  const T& value_or(const T& fallback) const noexcept { return has_value() ? *value_ : fallback; }

  // Equal when both hold equal values of the same subject, or both are erased or sealed with
  // the same stored bytes.
  friend bool operator==(const Personal& a, const Personal& b) {
    if (a.subject_ != b.subject_ || a.state_ != b.state_) return false;
    return a.state_ == State::value ? a.value_ == b.value_ : a.sealed_ == b.sealed_;
  }

  // PayloadOArchive / PayloadIArchive: the subject, then the sealed bytes (storage-format.md).
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    detail::PersonalScope* scope = detail::current_personal_scope();
    const std::uint32_t field = scope != nullptr ? scope->next_field++ : 0;
    if constexpr (Archive::is_saving::value) {
      save(ar, scope, field);
    } else {
      load(ar, scope, field);
    }
  }

 private:
  template <class Archive>
  void save(Archive& ar, detail::PersonalScope* scope, std::uint32_t field) const {
    if (state_ != State::value) {  // re-encoded (an upcast): what was stored, as it was
      ar& subject_& sealed_;
      return;
    }
    if (scope == nullptr || scope->codec == nullptr) {
      throw InvalidArgument(
          "factum: a personal value (subject '" + subject_ +
          "') is encoded only by a registry with a keyring (EventRegistry::use_keyring)");
    }
    if (!value_) {
      throw InvalidArgument(
          "factum: a default-constructed Personal has no subject or value to encode (use "
          "std::optional<Personal<T>> for a value that may be missing)");
    }
    validate_subject(subject_);
    const std::string plain = encode_payload(*value_);
    const std::string sealed =
        scope->codec->seal(subject_, plain, detail::personal_aad(scope->event, field, subject_));
    ar& subject_& sealed;
    scope->sealed.push_back(subject_);
  }

  template <class Archive>
  void load(Archive& ar, const detail::PersonalScope* scope, std::uint32_t field) {
    ar& subject_& sealed_;
    value_.reset();
    if (scope == nullptr || scope->codec == nullptr) {
      state_ = State::sealed;
      return;
    }
    const std::optional<std::string> plain =
        scope->codec->open(subject_, sealed_, detail::personal_aad(scope->event, field, subject_));
    if (!plain) {
      state_ = State::erased;
      return;
    }
    value_ = decode_payload<T>(std::span<const std::byte>(
        reinterpret_cast<const std::byte*>(plain->data()), plain->size()));
    state_ = State::value;
  }

  std::string subject_;
  std::optional<T> value_;
  State state_ = State::value;
  std::string sealed_;  // the stored bytes, when decoded
};

// Supplies the key-encryption key (KEK) that wraps each subject's data key. The KEK itself is
// never stored in the store or the log.
class KeyProvider {
 public:
  virtual ~KeyProvider() = default;
  // Names this KEK (1 to 64 printable ASCII characters), stored beside each key it wraps, so
  // that a rotation knows which keys are still under an older one.
  virtual std::string id() const = 0;
  // `data_key` (32 bytes) wrapped for `subject`. Throws Error when it cannot.
  virtual Bytes wrap(std::span<const std::byte> data_key, std::string_view subject) const = 0;
  // The data key of `subject` from `wrapped`. Throws Error when `wrapped` is not this KEK's
  // wrapping of a key for `subject`.
  virtual Bytes unwrap(std::span<const std::byte> wrapped, std::string_view subject) const = 0;
};

// A KEK in a file of exactly 32 random bytes (`openssl rand -out kek.bin 32`; keep it away from
// the store, readable only by the service). Wraps with AES-256-GCM, the subject bound in. Its
// id is "file:" and 16 hex digits of a SHA-256 of the key (which identify it, not reveal it).
class FileKeyProvider final : public KeyProvider {
 public:
  // Throws InvalidArgument naming the file when it cannot be read or is not 32 bytes.
  explicit FileKeyProvider(const std::filesystem::path& path);
  std::string id() const override;
  Bytes wrap(std::span<const std::byte> data_key, std::string_view subject) const override;
  Bytes unwrap(std::span<const std::byte> wrapped, std::string_view subject) const override;

 private:
  struct Key;
  std::shared_ptr<const Key> key_;
};

// What the store knows of a subject.
struct SubjectInfo {
  enum class State { active, forgotten };
  std::string subject;
  State state = State::active;
  std::string kek_id;                     // the KEK that wraps its key ("" once forgotten)
  Timestamp created_at{};                 // when its key was made
  std::optional<Timestamp> forgotten_at;  // when it was forgotten
};

// The outcome of EventStore::forget.
struct ForgetResult {
  Position position = 0;  // the factum.SubjectForgotten event's position
  bool was_known = true;  // false: the subject had no key (nothing of it was encrypted)
  bool purged = true;     // SQLite: the key's bytes were checkpointed out of the WAL as well;
                          // false when readers kept the checkpoint from finishing (the next
                          // checkpoint completes it). Always true on PostgreSQL (see docs).
};

// Every subject `store` knows (has a key for, or forgot), ordered by id; needs no key provider.
// Throws StorageError.
std::vector<SubjectInfo> list_subjects(const EventStore& store);

// A subject's data key as a store holds it: wrapped by a KEK that is not in it. Keys move
// between stores only this way, and only when asked (`factum export --with-keys`).
struct WrappedKey {
  std::string subject;
  std::string kek_id;  // the KeyProvider::id() that wrapped it
  Bytes wrapped;
  Timestamp created_at{};
  friend bool operator==(const WrappedKey&, const WrappedKey&) = default;
};

// Every subject's key that `store` holds (forgotten subjects have none), ordered by subject;
// needs no key provider. Throws StorageError.
std::vector<WrappedKey> wrapped_keys(const EventStore& store);

// Adds `keys` to `store`, in one transaction. A subject the store forgot keeps no key (its key
// is skipped: a forget is never undone), and one whose key the store holds already is left as
// it is. Returns how many keys were added. Throws InvalidArgument, adding none, for an invalid
// subject id, an empty kek_id or wrapped key, or a subject whose key in the store is another.
std::size_t add_wrapped_keys(EventStore& store, std::span<const WrappedKey> keys);

// The stream and type of the fact a forget appends (payload {"subject":"<id>"}).
inline constexpr std::string_view kSubjectsStream = "factum-subjects";
inline constexpr std::string_view kSubjectForgottenType = "factum.SubjectForgotten";

// The subject a factum.SubjectForgotten fact of kSubjectsStream names; nullopt for any other
// event, or one whose payload is not {"subject":"<id>"} with a valid id. For consumers that
// must drop what they derived from the subject (projections get Projection::forget).
std::optional<std::string> forgotten_subject(const RecordedEvent& event);

// The data keys of a store's subjects (EventStore::keyring()): makes a subject's key the first
// time a value of it is encrypted, keeps unwrapped keys in memory for `cache_for` (so a forget
// made by another process is seen by this one within that time), and never keeps one of a
// subject forgotten through this store. Thread-safe.
class Keyring : public detail::PersonalCodec {
 public:
  ~Keyring() override;
  Keyring(const Keyring&) = delete;
  Keyring& operator=(const Keyring&) = delete;

  std::string seal(std::string_view subject, std::string_view plaintext,
                   std::string_view aad) const override;
  std::optional<std::string> open(std::string_view subject, std::string_view sealed,
                                  std::string_view aad) const override;

  // What the store knows of `subject`: nullopt when it has no key and was never forgotten.
  std::optional<SubjectInfo> subject(std::string_view subject) const;
  // Every subject, ordered by id.
  std::vector<SubjectInfo> subjects() const;
  // How many subjects' keys (or forgotten marks) are in memory: at most
  // PersonalDataOptions::max_cached_keys, however many subjects are decoded.
  std::size_t cached_keys() const;
  // Re-wraps every key wrapped by `previous` (its id) with the store's current key provider,
  // in one transaction, touching no event. Returns how many were re-wrapped. Throws Error when
  // a key does not unwrap under `previous` (nothing changed).
  std::size_t rewrap(const KeyProvider& previous) const;

  struct State;  // the store's side (event_store.cpp)
  explicit Keyring(std::shared_ptr<State> state);

 private:
  std::shared_ptr<State> state_;
};

}  // namespace factum
