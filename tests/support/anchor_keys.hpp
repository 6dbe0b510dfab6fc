// Ed25519 key files for anchor tests, made with libcrypto as `openssl genpkey -algorithm ed25519`
// and `openssl pkey -pubout` would make them.
#pragma once

#include <filesystem>
#include <string>

namespace factum::test {

struct KeyFiles {
  std::filesystem::path private_key;  // PEM "PRIVATE KEY"
  std::filesystem::path public_key;   // PEM "PUBLIC KEY"
};

// Writes a fresh Ed25519 key pair to <dir>/<name>.pem and <dir>/<name>.pub. Throws
// std::runtime_error when OpenSSL fails.
KeyFiles make_ed25519_keys(const std::filesystem::path& dir, const std::string& name = "anchor");
// Writes a fresh key of another kind (EC P-256) to <dir>/<name>.pem and .pub: not for anchors.
KeyFiles make_p256_keys(const std::filesystem::path& dir, const std::string& name = "p256");

}  // namespace factum::test
