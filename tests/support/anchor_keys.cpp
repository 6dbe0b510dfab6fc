#include "support/anchor_keys.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace factum::test {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct FileClose {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

KeyFiles write_keys(EVP_PKEY* raw, const std::filesystem::path& dir, const std::string& name) {
  std::unique_ptr<EVP_PKEY, PkeyFree> key(raw);
  if (!key) throw std::runtime_error("OpenSSL could not make a key");
  KeyFiles files{dir / (name + ".pem"), dir / (name + ".pub")};
  std::unique_ptr<std::FILE, FileClose> priv(std::fopen(files.private_key.c_str(), "w"));
  std::unique_ptr<std::FILE, FileClose> pub(std::fopen(files.public_key.c_str(), "w"));
  if (!priv || !pub ||
      PEM_write_PrivateKey(priv.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1 ||
      PEM_write_PUBKEY(pub.get(), key.get()) != 1) {
    throw std::runtime_error("could not write the keys to " + dir.string());
  }
  return files;
}

}  // namespace

KeyFiles make_ed25519_keys(const std::filesystem::path& dir, const std::string& name) {
  return write_keys(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"), dir, name);
}

KeyFiles make_p256_keys(const std::filesystem::path& dir, const std::string& name) {
  return write_keys(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), dir, name);
}

}  // namespace factum::test
