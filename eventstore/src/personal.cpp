// Personal values (personal.hpp): subject ids, the per-thread scope of the event being encoded
// or decoded, the associated data, and the file key provider.
#include "factum/eventstore/personal.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "hex.hpp"
#include "id_list.hpp"
#include "personal_crypto.hpp"

namespace factum {

void validate_subject(std::string_view subject) {
  if (subject.empty() || subject.size() > 128) {
    throw InvalidArgument("factum: a subject id must be 1 to 128 bytes, not " +
                          std::to_string(subject.size()));
  }
  for (char c : subject) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) {
      throw InvalidArgument(
          "factum: a subject id holds only A-Z a-z 0-9 . _ : - (an opaque id, never a name or an "
          "e-mail address)");
    }
  }
}

namespace detail {
namespace {
thread_local PersonalScope* current_scope = nullptr;
}  // namespace

PersonalScope::PersonalScope(const PersonalCodec* c, const EventId& e) noexcept
    : codec(c), event(e), outer(current_scope) {
  current_scope = this;
}

PersonalScope::~PersonalScope() { current_scope = outer; }

PersonalScope* current_personal_scope() noexcept { return current_scope; }

std::string personal_aad(const EventId& event, std::uint32_t field, std::string_view subject) {
  std::string aad = "factum-personal-v1";
  aad.append(reinterpret_cast<const char*>(event.bytes().data()), event.bytes().size());
  for (int i = 3; i >= 0; --i) aad.push_back(static_cast<char>(field >> (8 * i)));
  aad.append(subject);
  return aad;
}

void note_subjects(const PersonalScope& scope, Metadata& metadata) {
  if (scope.sealed.empty()) return;
  std::vector<std::string> ids = scope.sealed;
  sort_unique(ids);
  metadata.values[kSubjectsMetadataKey] = join_ids(ids);
}

std::vector<std::string> subjects_of(const Metadata& metadata) {
  const auto it = metadata.values.find(kSubjectsMetadataKey);
  if (it == metadata.values.end()) return {};
  return split_ids(it->second, [](std::string_view id) {
    try {
      validate_subject(id);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string("factum: the metadata value ") + kSubjectsMetadataKey +
                            " names an invalid subject id: " + e.what());
    }
  });
}

EventId snapshot_scope_id(std::string_view stream, std::uint64_t version) {
  std::string input = "factum-snapshot";
  input.push_back('\0');
  input.append(stream);
  for (int i = 7; i >= 0; --i) input.push_back(static_cast<char>(version >> (8 * i)));
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(input.data(), input.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
    throw Error("factum: libcrypto failed to hash a snapshot's scope");
  }
  std::array<std::uint8_t, 16> id{};
  std::copy_n(digest.begin(), id.size(), id.begin());
  return EventId(id);
}

}  // namespace detail

// --- FileKeyProvider --------------------------------------------------------------------------

struct FileKeyProvider::Key {
  detail::AesKey kek{};
  std::string id;
};

namespace {

std::string wrap_aad(std::string_view subject) { return "factum-wrap-v1" + std::string(subject); }

std::string_view as_text(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace

FileKeyProvider::FileKeyProvider(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InvalidArgument("factum: the key-encryption key file '" + path.string() +
                          "' cannot be read");
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto key = std::make_shared<Key>();
  if (bytes.size() != key->kek.size()) {
    throw InvalidArgument("factum: the key-encryption key file '" + path.string() + "' holds " +
                          std::to_string(bytes.size()) +
                          " bytes, not 32 (make one with: openssl rand -out kek.bin 32)");
  }
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(key->kek.data()));
  // The id names the key without revealing it: SHA-256 over a label and the key.
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  const std::string input = "factum-kek-id" + bytes;
  if (EVP_Digest(input.data(), input.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
    throw Error("factum: libcrypto failed to hash the key-encryption key");
  }
  key->id = "file:" + detail::hex_of(std::span<const std::uint8_t>(digest.data(), 8));
  key_ = std::move(key);
}

std::string FileKeyProvider::id() const { return key_->id; }

Bytes FileKeyProvider::wrap(std::span<const std::byte> data_key, std::string_view subject) const {
  const std::string sealed = detail::aes_gcm_seal(key_->kek, as_text(data_key), wrap_aad(subject));
  return to_bytes(sealed);
}

Bytes FileKeyProvider::unwrap(std::span<const std::byte> wrapped, std::string_view subject) const {
  const std::optional<std::string> key =
      detail::aes_gcm_open(key_->kek, as_text(wrapped), wrap_aad(subject));
  if (!key) {
    throw Error("factum: the data key of subject '" + std::string(subject) +
                "' does not unwrap under the key-encryption key " + key_->id +
                " (another KEK wrapped it, or its bytes were altered)");
  }
  return to_bytes(*key);
}

}  // namespace factum
