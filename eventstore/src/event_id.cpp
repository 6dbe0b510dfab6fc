#include "factum/eventstore/event_id.hpp"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>

#include "factum/eventstore/errors.hpp"

namespace factum {
namespace {

// Per-thread state of the UUIDv7 generator: the last millisecond and a 74-bit random tail
// that is incremented within one millisecond, so ids from one thread strictly increase
// (RFC 9562, method 2: monotonic random).
struct Generator {
  std::mt19937_64 rng{seed()};
  std::uint64_t last_ms = 0;
  std::uint64_t rand_a = 0;      // 12 bits
  std::uint64_t rand_b = 0;      // 62 bits
  std::uint64_t generation = 0;  // the fork generation it was seeded in

  static std::uint64_t seed() {
    std::random_device device;  // the kernel's generator (getrandom)
    return device() ^ (std::uint64_t{device()} << 32);
  }
};

// fork() copies the generator of the forking thread into the child: parent and child would
// then make the same ids in the same millisecond. Every fork bumps this counter in the child,
// and a generator seeded in an older generation reseeds before its next id.
std::atomic<std::uint64_t> fork_generation{0};

void after_fork_in_child() noexcept { fork_generation.fetch_add(1, std::memory_order_relaxed); }

// Registered when the library is loaded, before any thread of the program can fork. (Lazily, on
// the first id, a fork racing that first call could leave the child a half-run initializer.)
// pthread_atfork fails only without memory.
[[maybe_unused]] const int kAtForkRegistered =
    pthread_atfork(nullptr, nullptr, &after_fork_in_child);

std::uint64_t current_generation() noexcept {
  return fork_generation.load(std::memory_order_relaxed);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

EventId EventId::generate() {
  thread_local Generator g;
  if (const std::uint64_t generation = current_generation(); generation != g.generation) {
    g = Generator{};  // a forked child: new seed, and no counting on from the parent's tail
    g.generation = generation;
  }
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  std::uint64_t ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
  if (ms > g.last_ms) {
    g.last_ms = ms;
    const std::uint64_t r = g.rng();
    g.rand_a = r & 0xfff;
    g.rand_b = g.rng() & ((std::uint64_t{1} << 62) - 1);
  } else {
    ms = g.last_ms;  // clock went back or same millisecond: count on
    if (++g.rand_b == (std::uint64_t{1} << 62)) {
      g.rand_b = 0;
      if (++g.rand_a == 0x1000) {
        g.rand_a = 0;
        ms = ++g.last_ms;
      }
    }
  }
  Bytes b{};
  for (int i = 0; i < 6; ++i) b[i] = static_cast<std::uint8_t>(ms >> (40 - 8 * i));
  b[6] = static_cast<std::uint8_t>(0x70 | (g.rand_a >> 8));
  b[7] = static_cast<std::uint8_t>(g.rand_a);
  b[8] = static_cast<std::uint8_t>(0x80 | (g.rand_b >> 56));
  for (int i = 9; i < 16; ++i) b[i] = static_cast<std::uint8_t>(g.rand_b >> (8 * (15 - i)));
  return EventId(b);
}

EventId EventId::parse(std::string_view text) {
  Bytes b{};
  std::size_t out = 0;
  bool valid = text.size() == 36;
  for (std::size_t i = 0; valid && i < text.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      valid = text[i] == '-';
      continue;
    }
    const int hi = hex_value(text[i]);
    const int lo = ++i < text.size() ? hex_value(text[i]) : -1;
    valid = hi >= 0 && lo >= 0 && out < b.size();
    if (valid) b[out++] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  if (!valid || out != b.size()) {
    throw InvalidArgument("factum: '" + std::string(text) + "' is not a UUID");
  }
  return EventId(b);
}

std::string EventId::to_string() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (std::size_t i = 0; i < bytes_.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kHex[bytes_[i] >> 4]);
    s.push_back(kHex[bytes_[i] & 0xf]);
  }
  return s;
}

bool EventId::is_nil() const noexcept { return *this == EventId(); }

}  // namespace factum

std::size_t std::hash<factum::EventId>::operator()(const factum::EventId& id) const noexcept {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::memcpy(&a, id.bytes().data(), 8);
  std::memcpy(&b, id.bytes().data() + 8, 8);
  return static_cast<std::size_t>(a * 0x9e3779b97f4a7c15ULL ^ b);
}
