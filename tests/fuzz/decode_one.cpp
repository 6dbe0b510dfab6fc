#include "fuzz/decode_one.hpp"

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <string>

#include "events/sample_events.hpp"
#include "fuzz/fuzz_types.hpp"

namespace factum::fuzz {
namespace {

using test::Currency;
using test::EverythingHappened;
using test::MoneyDeposited;
using test::MoneyDepositedV1;
using test::MoneyDepositedV2;

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Encodes a decoded value again: the encoder must accept it, write no more bytes than were
// read (only a non-minimal LEB128 length can make the input longer), and write bytes the
// decoder takes back. With `stable`, the value must also come back to the same bytes
// (types with unordered containers may iterate in another order).
template <class T>
void check_reencodes(const T& value, std::size_t read, bool stable) {
  const std::string once = encode_payload(value);
  if (once.size() > read) {
    throw InvariantBroken("a decoded value re-encodes to " + std::to_string(once.size()) +
                          " bytes, more than the " + std::to_string(read) + " bytes read");
  }
  T again;
  try {
    again = decode_payload<T>(bytes_of(once));
  } catch (const PayloadError& e) {
    throw InvariantBroken(std::string("the decoder refuses what the encoder wrote: ") + e.what());
  }
  if (stable && encode_payload(again) != once) {
    throw InvariantBroken("a value changes on its way through encode and decode");
  }
}

template <class T>
Outcome decode_as(std::span<const std::byte> payload, bool stable = true) {
  T value;
  try {
    value = decode_payload<T>(payload);
  } catch (const PayloadError&) {
    return Outcome::rejected;
  }
  check_reencodes(value, payload.size(), stable);
  return Outcome::decoded;
}

// ---- Through an EventRegistry: hash check, upcasters, then the archive.

// The bank event's registry: the schema chain v1 -> v2 -> v3, v1 stored as "bank.Deposit".
struct BankRegistry {
  EventRegistry registry;
  BankRegistry() {
    registry.add<MoneyDeposited>();
    registry.alias<MoneyDeposited>("bank.Deposit");
    registry.upcast<MoneyDepositedV1, MoneyDepositedV2>([](const MoneyDepositedV1& v1) {
      return MoneyDepositedV2{v1.account, std::int64_t{v1.euros} * 100};
    });
    registry.upcast<MoneyDepositedV2, MoneyDeposited>([](const MoneyDepositedV2& v2) {
      return MoneyDeposited{v2.account, {v2.amount_minor, Currency::eur}, "(before v3)"};
    });
    registry.validate();
  }
};

const EventRegistry& bank_registry() {
  static const BankRegistry bank;
  return bank.registry;
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

void put_string(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

// Sets `e.hash` as docs/storage-format.md ("The hash chain") defines it, for an event with
// no metadata; hash_matches() must then agree, or the harness and the format have drifted.
void seal(RecordedEvent& e) {
  std::string in(e.previous_hash.begin(), e.previous_hash.end());
  put_u64(in, e.position);
  put_string(in, e.stream_id);
  put_u64(in, e.stream_version);
  in.append(e.id.bytes().begin(), e.id.bytes().end());
  put_string(in, e.type);
  put_u32(in, e.schema_version);
  put_u32(in, static_cast<std::uint32_t>(e.payload.size()));
  in.append(reinterpret_cast<const char*>(e.payload.data()), e.payload.size());
  in.append(3, '\0');  // correlation, causation and compensates ids: absent
  put_u32(in, 0);      // actor: absent
  put_u32(in, 0);      // key/values: none
  put_u64(in, static_cast<std::uint64_t>(e.recorded_at.time_since_epoch().count()));
  unsigned int size = 0;
  if (EVP_Digest(in.data(), in.size(), e.hash.data(), &size, EVP_sha256(), nullptr) != 1 ||
      size != e.hash.size()) {
    throw std::runtime_error("SHA-256 failed");
  }
  if (!hash_matches(e)) {
    throw InvariantBroken("the harness's hash of docs/storage-format.md and hash_matches disagree");
  }
}

// Decodes `payload` stored as `type` at `schema_version` as the current MoneyDeposited.
Outcome decode_recorded(std::string_view type, std::uint32_t schema_version,
                        std::span<const std::byte> payload) {
  RecordedEvent e;
  e.position = 1;
  e.stream_id = "account-1";
  e.stream_version = 1;
  e.type = std::string(type);
  e.schema_version = schema_version;
  e.payload.assign(payload.begin(), payload.end());
  seal(e);
  MoneyDeposited value;
  try {
    value = bank_registry().decode<MoneyDeposited>(e);
  } catch (const CorruptEventError&) {
    return Outcome::rejected;
  }
  // Upcasted payloads are re-encoded by the upcasters: only the round trip is checked.
  check_reencodes(value, encode_payload(value).size(), true);
  return Outcome::decoded;
}

// ---- The targets. Append only: saved inputs select by index.

struct Target {
  std::string_view name;
  Outcome (*decode)(std::span<const std::byte>);
};

constexpr std::array kTargets{
    Target{"everything", [](auto p) { return decode_as<EverythingHappened>(p); }},
    Target{"money_deposited", [](auto p) { return decode_as<MoneyDeposited>(p); }},
    Target{"money_deposited_v1", [](auto p) { return decode_as<MoneyDepositedV1>(p); }},
    Target{"optional_int_lists", [](auto p) { return decode_as<OptionalIntLists>(p); }},
    Target{"kitchen", [](auto p) { return decode_as<Kitchen>(p, false); }},
    Target{"priorities", [](auto p) { return decode_as<Priorities>(p); }},
    Target{"float_durations", [](auto p) { return decode_as<FloatDurations>(p); }},
    Target{"registry_v1", [](auto p) { return decode_recorded("bank.Deposit", 1, p); }},
    Target{"registry_v2", [](auto p) { return decode_recorded("bank.MoneyDeposited", 2, p); }},
    Target{"registry_v3", [](auto p) { return decode_recorded("bank.MoneyDeposited", 3, p); }},
};

}  // namespace

Outcome decode_one(std::span<const std::byte> input) {
  if (input.empty()) return kTargets[0].decode(input);
  // Not `% size`: a saved input must keep its target when targets are added.
  const auto selector = static_cast<std::size_t>(input[0]);
  if (selector >= kTargets.size()) return Outcome::rejected;
  return kTargets[selector].decode(input.subspan(1));
}

std::size_t target_count() { return kTargets.size(); }

std::string_view target_name(std::size_t index) { return kTargets.at(index).name; }

std::string make_input(std::string_view name, std::string_view payload) {
  for (std::size_t i = 0; i < kTargets.size(); ++i) {
    if (kTargets[i].name == name) return static_cast<char>(i) + std::string(payload);
  }
  throw std::invalid_argument("no fuzz target named " + std::string(name));
}

}  // namespace factum::fuzz
