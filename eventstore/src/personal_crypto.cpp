#include "personal_crypto.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <memory>
#include <mutex>

#include "factum/eventstore/errors.hpp"

namespace factum::detail {
namespace {

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const noexcept { EVP_CIPHER_CTX_free(c); }
};
using Ctx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

[[noreturn]] void crypto_failed(const char* what) {
  throw Error(std::string("factum: personal data: libcrypto failed to ") + what);
}

Ctx new_ctx() {
  Ctx ctx(EVP_CIPHER_CTX_new());
  if (!ctx) crypto_failed("allocate a cipher");
  return ctx;
}

// The nonce of each value: a field of 8 random bytes drawn per thread, then a 32-bit counter of
// the thread's values (the deterministic construction of NIST SP 800-38D, 8.2.1). Nonces are
// unique under any key unless two threads or processes draw the same 8 bytes (2^-64 a pair).
// The field is drawn again when the counter runs out and in a child after fork(), whose copy
// of the thread's state would otherwise repeat the parent's nonces. A RAND_bytes call per value
// cost 1.9 us, more than the encryption (docs/erasure.md).
// Counts fork()s of this process (a child's handler runs in the child), so that a thread's
// state copied into a child is known to be stale without a getpid() system call per value.
std::atomic<std::uint64_t> forks{1};

void next_nonce(unsigned char* nonce) {
  static std::once_flag registered;
  std::call_once(registered, [] {
    pthread_atfork(nullptr, nullptr, [] { forks.fetch_add(1, std::memory_order_relaxed); });
  });
  struct State {
    std::uint64_t generation = 0;  // `forks` when the field was drawn
    std::uint32_t counter = 0;
    unsigned char field[8] = {};
  };
  thread_local State state;
  const std::uint64_t generation = forks.load(std::memory_order_relaxed);
  if (state.generation != generation || state.counter == UINT32_MAX) {
    if (RAND_bytes(state.field, sizeof state.field) != 1) crypto_failed("draw a nonce");
    state.generation = generation;
    state.counter = 0;
  }
  std::copy_n(state.field, sizeof state.field, nonce);
  const std::uint32_t c = state.counter++;
  for (int i = 0; i < 4; ++i) nonce[8 + i] = static_cast<unsigned char>(c >> (24 - 8 * i));
}

}  // namespace

AesKey random_key() {
  AesKey key{};
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) crypto_failed("draw a key");
  return key;
}

std::string aes_gcm_seal(const AesKey& key, std::string_view plaintext, std::string_view aad) {
  std::string out(kSealedOverhead + plaintext.size(), '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  o[0] = kSealedVersion;
  unsigned char* nonce = o + 1;
  next_nonce(nonce);
  const Ctx ctx = new_ctx();
  int n = 0;
  if (EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), nonce) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &n, bytes(aad), static_cast<int>(aad.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nonce + kNonceSize, &n, bytes(plaintext),
                        static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), nonce + kNonceSize + n, &n) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagSize, o + out.size() - kTagSize) !=
          1) {
    crypto_failed("encrypt");
  }
  return out;
}

std::optional<std::string> aes_gcm_open(const AesKey& key, std::string_view sealed,
                                        std::string_view aad) {
  if (sealed.size() < kSealedOverhead || static_cast<std::uint8_t>(sealed[0]) != kSealedVersion) {
    return std::nullopt;
  }
  const unsigned char* nonce = bytes(sealed) + 1;
  const std::size_t size = sealed.size() - kSealedOverhead;
  std::string out(size, '\0');
  const Ctx ctx = new_ctx();
  int n = 0;
  std::array<unsigned char, kTagSize> tag{};
  std::copy_n(bytes(sealed) + sealed.size() - kTagSize, kTagSize, tag.begin());
  if (EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), nonce) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, bytes(aad), static_cast<int>(aad.size())) != 1 ||
      EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &n,
                        nonce + kNonceSize, static_cast<int>(size)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagSize, tag.data()) != 1) {
    crypto_failed("decrypt");
  }
  int last = 0;
  if (EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + n, &last) !=
      1) {
    return std::nullopt;  // the tag does not check
  }
  return out;
}

}  // namespace factum::detail
