// Anchors: their signed bytes, their JSON line, Ed25519 keys through OpenSSL's libcrypto, and
// checking a chain of them (anchor.hpp; the bytes are specified in docs/storage-format.md).
#include "factum/eventstore/anchor.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <memory>
#include <span>
#include <string>

#include "anchor_json.hpp"

namespace factum {
namespace {

constexpr std::string_view kMagic = "factum-anchor-v1\n";

struct PkeyFree {
  void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct CtxFree {
  void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};
struct BioFree {
  void operator()(BIO* b) const noexcept { BIO_free(b); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

// Reads an Ed25519 key from a PEM file with `read` (PEM_read_bio_PrivateKey or _PUBKEY).
template <class Read>
Pkey read_pem(const std::filesystem::path& path, const char* what, Read read) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) {
    throw AnchorError("factum: cannot read the " + std::string(what) + " '" + path.string() +
                      "': the file cannot be opened");
  }
  Pkey key(read(bio.get()));
  if (!key) {
    throw AnchorError("factum: '" + path.string() + "' is not a PEM " + what);
  }
  if (EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) {
    throw AnchorError("factum: the " + std::string(what) + " '" + path.string() +
                      "' is not an Ed25519 key (make one with: openssl genpkey -algorithm "
                      "ed25519)");
  }
  return key;
}

}  // namespace

std::string Anchor::signed_bytes() const {
  std::string s(kMagic);
  s += "position " + std::to_string(position) + "\n";
  s += "head " + to_hex(head) + "\n";
  s += "time_ms " + std::to_string(time_ms) + "\n";
  s += "previous " + to_hex(previous) + "\n";
  return s;
}

Hash Anchor::hash() const {
  std::string bytes = signed_bytes();
  bytes.append(reinterpret_cast<const char*>(signature.data()), signature.size());
  return sha256(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

std::string Anchor::to_json() const { return detail::anchor_to_json(*this); }

Anchor Anchor::from_json(std::string_view line) { return detail::anchor_from_json(line); }

struct AnchorSigningKey::Key {
  Pkey pkey;
};

AnchorSigningKey::AnchorSigningKey(std::shared_ptr<const Key> key) : key_(std::move(key)) {}

AnchorSigningKey AnchorSigningKey::from_pem_file(const std::filesystem::path& path) {
  auto key = std::make_shared<Key>();
  key->pkey = read_pem(path, "private key", [](BIO* bio) {
    return PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  });
  return AnchorSigningKey(std::move(key));
}

Anchor AnchorSigningKey::sign(const Head& head, std::int64_t time_ms,
                              const std::optional<Anchor>& previous) const {
  Anchor a;
  a.position = head.position;
  a.head = head.hash;
  a.time_ms = time_ms;
  if (previous) a.previous = previous->hash();
  const std::string bytes = a.signed_bytes();
  std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  std::size_t length = a.signature.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_->pkey.get()) != 1 ||
      EVP_DigestSign(ctx.get(), a.signature.data(), &length,
                     reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()) != 1 ||
      length != a.signature.size()) {
    throw AnchorError("factum: OpenSSL could not sign the anchor of position " +
                      std::to_string(head.position) + " with Ed25519");
  }
  return a;
}

std::array<std::uint8_t, 32> AnchorSigningKey::public_key() const {
  std::array<std::uint8_t, 32> raw{};
  std::size_t length = raw.size();
  if (EVP_PKEY_get_raw_public_key(key_->pkey.get(), raw.data(), &length) != 1 ||
      length != raw.size()) {
    throw AnchorError("factum: OpenSSL could not give the signing key's public key");
  }
  return raw;
}

struct AnchorPublicKey::Key {
  Pkey pkey;
};

AnchorPublicKey::AnchorPublicKey(std::shared_ptr<const Key> key) : key_(std::move(key)) {}

AnchorPublicKey AnchorPublicKey::from_pem_file(const std::filesystem::path& path) {
  auto key = std::make_shared<Key>();
  key->pkey = read_pem(path, "public key", [](BIO* bio) {
    return PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  });
  return AnchorPublicKey(std::move(key));
}

AnchorPublicKey AnchorPublicKey::from_raw(const std::array<std::uint8_t, 32>& raw) {
  auto key = std::make_shared<Key>();
  key->pkey.reset(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, raw.data(), raw.size()));
  if (!key->pkey) throw AnchorError("factum: 32 bytes that are not an Ed25519 public key");
  return AnchorPublicKey(std::move(key));
}

bool AnchorPublicKey::verifies(const Anchor& anchor) const {
  const std::string bytes = anchor.signed_bytes();
  std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_->pkey.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), anchor.signature.data(), anchor.signature.size(),
                          reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()) == 1;
}

}  // namespace factum
