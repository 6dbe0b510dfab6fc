// AES-256-GCM through libcrypto, as personal data uses it: the sealed form of a value
// (version byte 1, a 12-byte random nonce, the ciphertext, the 16-byte tag) and the wrapping of
// data keys by a key-encryption key.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace factum::detail {

using AesKey = std::array<std::uint8_t, 32>;

inline constexpr std::uint8_t kSealedVersion = 1;
inline constexpr std::size_t kNonceSize = 12;
inline constexpr std::size_t kTagSize = 16;
inline constexpr std::size_t kSealedOverhead = 1 + kNonceSize + kTagSize;

// version || nonce || AES-256-GCM(key, nonce, aad, plaintext) || tag. Throws Error when
// libcrypto fails (no randomness, say).
std::string aes_gcm_seal(const AesKey& key, std::string_view plaintext, std::string_view aad);
// The plaintext of what aes_gcm_seal made; nullopt when the tag does not check (another key,
// another aad, altered bytes) or the form is not version 1.
std::optional<std::string> aes_gcm_open(const AesKey& key, std::string_view sealed,
                                        std::string_view aad);

// 32 bytes from libcrypto's CSPRNG. Throws Error when it has none.
AesKey random_key();

}  // namespace factum::detail
