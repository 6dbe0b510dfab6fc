// factum/eventstore/payload_archive.hpp — the Boost.Serialization archives of event payloads.
//
// A domain event is a plain struct with a Boost.Serialization `serialize` function:
//
//   struct MoneyDeposited {
//     static constexpr std::string_view event_type = "bank.MoneyDeposited";
//     static constexpr std::uint32_t schema_version = 1;
//     std::string account;
//     std::int64_t amount_minor = 0;
//     template <class Archive> void serialize(Archive& ar, unsigned) { ar & account & amount_minor;
//     }
//   };
//
// PayloadOArchive and PayloadIArchive are factum's own archives for it, because the archives
// that come with Boost do not suit bytes that live for years and move between machines
// (docs/events.md says why). The format, in docs/storage-format.md, is fixed and portable:
//   - bool: one byte, 0 or 1; integers, chars and enums: their fixed width, little-endian;
//     float and double: IEEE-754 bits, little-endian;
//   - std::string, containers (vector, deque, list, set, map, unordered_*): a LEB128 count,
//     then the items; std::array and C arrays: the items; std::pair: first, second;
//     std::optional: one byte 0 (empty) or 1 followed by the value;
//     std::chrono durations and time points: the count as a little-endian int64 (a double
//     for floating-point counts) in the type's own period: use factum::Timestamp (UTC
//     microseconds) rather than system_clock::time_point, whose period differs by library;
//   - a struct: its fields in `serialize` order, with no header, class id or version.
// Pointers, wide strings and long double are refused at compile time. Nested types are not
// versioned (the version argument of serialize is always 0): evolve an event through its
// schema_version and upcasters (event_registry.hpp) instead.
//
// PayloadIArchive never trusts the bytes: it reads only inside its span, checks every count
// and length against the bytes that remain BEFORE it allocates, keeps the objects it builds
// within a budget of 64 times the payload's size (plus 1 MiB), refuses a bool that is not 0
// or 1, and throws PayloadError (never crashes) on anything malformed.
//
// Thread-safety: an archive object is used by one thread; distinct archives are independent.
#pragma once

#include <array>
#include <bit>
#include <boost/core/nvp.hpp>
#include <boost/mpl/bool.hpp>
#include <boost/serialization/nvp.hpp>
#include <boost/serialization/serialization.hpp>
#include <boost/serialization/split_member.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "factum/eventstore/errors.hpp"

namespace factum {

// Malformed payload bytes (the registry turns it into a CorruptEventError naming the event).
class PayloadError : public Error {
 public:
  explicit PayloadError(const std::string& message) : Error("factum: payload: " + message) {}
};

namespace detail {

template <class T>
struct is_nvp : std::false_type {};
template <class T>
struct is_nvp<boost::nvp<T>> : std::true_type {};

template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};

template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
struct is_duration : std::false_type {};
template <class R, class P>
struct is_duration<std::chrono::duration<R, P>> : std::true_type {};

template <class T>
struct is_time_point : std::false_type {};
template <class C, class D>
struct is_time_point<std::chrono::time_point<C, D>> : std::true_type {};

// Containers filled by push_back (sequence) or insert (associative).
template <class T>
struct is_sequence : std::false_type {};
template <class T, class A>
struct is_sequence<std::vector<T, A>> : std::true_type {};
template <class T, class A>
struct is_sequence<std::deque<T, A>> : std::true_type {};
template <class T, class A>
struct is_sequence<std::list<T, A>> : std::true_type {};

template <class T>
struct is_associative : std::false_type {};
template <class K, class C, class A>
struct is_associative<std::set<K, C, A>> : std::true_type {};
template <class K, class V, class C, class A>
struct is_associative<std::map<K, V, C, A>> : std::true_type {};
template <class K, class H, class E, class A>
struct is_associative<std::unordered_set<K, H, E, A>> : std::true_type {};
template <class K, class V, class H, class E, class A>
struct is_associative<std::unordered_map<K, V, H, E, A>> : std::true_type {};

template <class T>
inline constexpr bool is_fixed_scalar_v = (std::is_integral_v<T> ||
                                           std::is_enum_v<T>)&&!std::is_same_v<T, bool>;

template <class T>
inline constexpr bool always_false_v = false;

// An enum whose underlying type is fixed (enum class, or enum E : int) can hold any value of
// that type; an unscoped enum without one may only hold its enumerators' range, and loading
// another value is undefined behaviour.
template <class T>
concept FixedEnum = std::is_enum_v<T> && requires {
  T{std::underlying_type_t<T>{}};
};

template <class T>
void refuse_unsupported() {
  static_assert(!std::is_enum_v<T> || FixedEnum<T>,
                "factum payloads hold enums with a fixed underlying type only: use enum class, "
                "or enum E : std::int32_t");
  static_assert(!std::is_pointer_v<T>, "factum payloads cannot hold pointers: store the value");
  static_assert(!std::is_same_v<T, wchar_t> && !std::is_same_v<T, std::wstring>,
                "factum payloads do not hold wchar_t: its width differs between platforms");
  static_assert(!std::is_same_v<T, long double>,
                "factum payloads do not hold long double: its layout differs between platforms");
}

}  // namespace detail

class PayloadOArchive {
 public:
  using is_saving = boost::mpl::true_;
  using is_loading = boost::mpl::false_;

  // Appends to `out`.
  explicit PayloadOArchive(std::string& out) noexcept : out_(out) {}

  template <class T>
  PayloadOArchive& operator<<(const T& value) {
    save(value);
    return *this;
  }
  template <class T>
  PayloadOArchive& operator&(const T& value) {
    return *this << value;
  }

  // Part of the archive concept; factum payloads have no object tracking or class registry.
  template <class T>
  void register_type(const T* = nullptr) {}
  void save_binary(const void* data, std::size_t size) { put(data, size); }

  void put_varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }

 private:
  void put(const void* data, std::size_t size) {
    out_.append(static_cast<const char*>(data), size);
  }

  template <class U>
  void put_le(U v) {
    static_assert(std::is_unsigned_v<U>);
    char b[sizeof(U)];
    for (std::size_t i = 0; i < sizeof(U); ++i) b[i] = static_cast<char>(v >> (8 * i));
    put(b, sizeof(U));
  }

  template <class T>
  void save(const T& t) {
    detail::refuse_unsupported<T>();
    if constexpr (detail::is_nvp<T>::value) {
      save(t.const_value());
    } else if constexpr (std::is_same_v<T, bool>) {
      out_.push_back(t ? 1 : 0);
    } else if constexpr (std::is_enum_v<T>) {
      save(static_cast<std::underlying_type_t<T>>(t));
    } else if constexpr (std::is_integral_v<T>) {
      put_le(static_cast<std::make_unsigned_t<T>>(t));
    } else if constexpr (std::is_same_v<T, float>) {
      put_le(std::bit_cast<std::uint32_t>(t));
    } else if constexpr (std::is_same_v<T, double>) {
      put_le(std::bit_cast<std::uint64_t>(t));
    } else if constexpr (std::is_same_v<T, std::string>) {
      put_varint(t.size());
      put(t.data(), t.size());
    } else if constexpr (std::is_array_v<T>) {
      for (const auto& item : t) save(item);
    } else if constexpr (detail::is_std_array<T>::value) {
      for (const auto& item : t) save(item);
    } else if constexpr (detail::is_pair<T>::value) {
      save(t.first);
      save(t.second);
    } else if constexpr (detail::is_optional<T>::value) {
      out_.push_back(t.has_value() ? 1 : 0);
      if (t) save(*t);
    } else if constexpr (detail::is_duration<T>::value) {
      if constexpr (std::is_floating_point_v<typename T::rep>) {
        save(static_cast<double>(t.count()));
      } else {
        save(static_cast<std::int64_t>(t.count()));
      }
    } else if constexpr (detail::is_time_point<T>::value) {
      save(t.time_since_epoch());
    } else if constexpr (detail::is_sequence<T>::value || detail::is_associative<T>::value) {
      put_varint(t.size());
      for (const auto& item : t) save(item);
    } else if constexpr (std::is_class_v<T>) {
      boost::serialization::serialize_adl(*this, const_cast<T&>(t), 0u);
    } else {
      static_assert(detail::always_false_v<T>, "this type cannot be stored in a factum payload");
    }
  }

  std::string& out_;
};

class PayloadIArchive {
 public:
  using is_saving = boost::mpl::false_;
  using is_loading = boost::mpl::true_;

  explicit PayloadIArchive(std::span<const std::byte> in) noexcept
      : in_(in), budget_(kBudgetPerByte * in.size() + kBudgetFloor) {}

  // Memory a decode may build, whatever the bytes claim: a fixed multiple of their size.
  static constexpr std::size_t kBudgetPerByte = 64;
  static constexpr std::size_t kBudgetFloor = std::size_t{1} << 20;

  template <class T>
  PayloadIArchive& operator>>(T&& value) {
    load_any(std::forward<T>(value));
    return *this;
  }
  template <class T>
  PayloadIArchive& operator&(T&& value) {
    return *this >> std::forward<T>(value);
  }

  // Part of the archive concept (no tracking, no pointers).
  template <class T>
  void register_type(const T* = nullptr) {}
  template <class T>
  void reset_object_address(const T*, const T*) {}
  void delete_created_pointers() {}
  void load_binary(void* data, std::size_t size) { take(data, size); }

  // Bytes not read yet.
  std::size_t remaining() const noexcept { return in_.size() - at_; }

  // Throws PayloadError unless every byte was read.
  void expect_end() const {
    if (remaining() != 0) {
      throw PayloadError(std::to_string(remaining()) + " bytes left over after the last field");
    }
  }

  std::uint64_t take_varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto b = static_cast<std::uint8_t>(take_byte());
      if (shift == 63 && b > 1) break;
      if (b == 0 && shift > 0) break;  // a needless trailing zero group: not canonical
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw PayloadError("a length is not a valid LEB128 number");
  }

  // A count of items that each take at least one byte: never more than the bytes left.
  std::size_t take_count(const char* what) {
    const std::uint64_t n = take_varint();
    if (n > remaining()) {
      throw PayloadError(std::string(what) + " of " + std::to_string(n) + " items, but only " +
                         std::to_string(remaining()) + " bytes are left");
    }
    return static_cast<std::size_t>(n);
  }

 private:
  std::byte take_byte() {
    if (at_ >= in_.size()) throw PayloadError("the payload ends in the middle of a field");
    return in_[at_++];
  }

  void take(void* data, std::size_t size) {
    if (size > remaining()) throw PayloadError("the payload ends in the middle of a field");
    if (size > 0) std::memcpy(data, in_.data() + at_, size);
    at_ += size;
  }

  template <class U>
  U take_le() {
    if (sizeof(U) > remaining()) throw PayloadError("the payload ends in the middle of a field");
    U v = 0;
    for (std::size_t i = 0; i < sizeof(U); ++i) {
      v |= static_cast<U>(static_cast<U>(static_cast<std::uint8_t>(in_[at_ + i])) << (8 * i));
    }
    at_ += sizeof(U);
    return v;
  }

  template <class T>
  void load_any(T&& t) {
    using U = std::remove_cvref_t<T>;
    if constexpr (detail::is_nvp<U>::value) {
      load(t.value());
    } else {
      static_assert(!std::is_const_v<std::remove_reference_t<T>>, "cannot load into a const");
      load(t);
    }
  }

  template <class T>
  void load(T& t) {
    detail::refuse_unsupported<T>();
    if constexpr (detail::is_nvp<T>::value) {
      load(t.value());
    } else if constexpr (std::is_same_v<T, bool>) {
      const auto b = static_cast<std::uint8_t>(take_byte());
      if (b > 1) throw PayloadError("a bool holds " + std::to_string(b));
      t = b == 1;
    } else if constexpr (std::is_enum_v<T>) {
      std::underlying_type_t<T> raw{};
      load(raw);
      t = static_cast<T>(raw);
    } else if constexpr (std::is_integral_v<T>) {
      t = static_cast<T>(take_le<std::make_unsigned_t<T>>());
    } else if constexpr (std::is_same_v<T, float>) {
      t = std::bit_cast<float>(take_le<std::uint32_t>());
    } else if constexpr (std::is_same_v<T, double>) {
      t = std::bit_cast<double>(take_le<std::uint64_t>());
    } else if constexpr (std::is_same_v<T, std::string>) {
      const std::uint64_t n = take_varint();
      if (n > remaining()) {
        throw PayloadError("a string of " + std::to_string(n) + " bytes, but only " +
                           std::to_string(remaining()) + " bytes are left");
      }
      t.assign(reinterpret_cast<const char*>(in_.data() + at_), static_cast<std::size_t>(n));
      at_ += static_cast<std::size_t>(n);
    } else if constexpr (std::is_array_v<T>) {
      for (auto& item : t) load(item);
    } else if constexpr (detail::is_std_array<T>::value) {
      for (auto& item : t) load(item);
    } else if constexpr (detail::is_pair<T>::value) {
      load(const_cast<std::remove_const_t<typename T::first_type>&>(t.first));
      load(t.second);
    } else if constexpr (detail::is_optional<T>::value) {
      const auto flag = static_cast<std::uint8_t>(take_byte());
      if (flag > 1) throw PayloadError("an optional's flag holds " + std::to_string(flag));
      if (flag == 0) {
        t.reset();
      } else {
        charge(sizeof(T));
        load(t.emplace());
      }
    } else if constexpr (detail::is_duration<T>::value) {
      if constexpr (std::is_floating_point_v<typename T::rep>) {
        double count = 0;
        load(count);
        t = T(static_cast<typename T::rep>(count));
      } else {
        std::int64_t count = 0;
        load(count);
        using Rep = typename T::rep;
        const bool fits =
            std::is_signed_v<Rep>
                ? count >= static_cast<std::int64_t>(std::numeric_limits<Rep>::min()) &&
                      count <= static_cast<std::int64_t>(std::numeric_limits<Rep>::max())
                : count >= 0 && static_cast<std::uint64_t>(count) <=
                                    static_cast<std::uint64_t>(std::numeric_limits<Rep>::max());
        if (!fits)
          throw PayloadError("a duration of " + std::to_string(count) + " does not fit its type");
        t = T(static_cast<Rep>(count));
      }
    } else if constexpr (detail::is_time_point<T>::value) {
      typename T::duration d{};
      load(d);
      t = T(d);
    } else if constexpr (detail::is_sequence<T>::value) {
      const std::size_t n = take_count("a sequence");
      t.clear();
      for (std::size_t i = 0; i < n; ++i) {
        charge(sizeof(typename T::value_type));
        t.push_back(load_value<typename T::value_type>());
      }
    } else if constexpr (detail::is_associative<T>::value) {
      const std::size_t n = take_count("a set or map");
      t.clear();
      for (std::size_t i = 0; i < n; ++i) {
        charge(sizeof(typename T::value_type) + 4 * sizeof(void*));  // the node's links too
        typename T::value_type item = load_value<typename T::value_type>();
        if (!t.insert(std::move(item)).second) throw PayloadError("a set or map repeats a key");
      }
    } else if constexpr (std::is_class_v<T>) {
      boost::serialization::serialize_adl(*this, t, 0u);
    } else {
      static_assert(detail::always_false_v<T>, "this type cannot be read from a factum payload");
    }
  }

  // A map's value_type has a const key: build a mutable pair, then convert.
  template <class V>
  V load_value() {
    if constexpr (detail::is_pair<V>::value) {
      std::pair<std::remove_const_t<typename V::first_type>, typename V::second_type> p{};
      load(p.first);
      load(p.second);
      return V(std::move(p.first), std::move(p.second));
    } else {
      V v{};
      load(v);
      return v;
    }
  }

  // Counts `bytes` of memory against the budget; throws once a decode would pass it (a
  // payload of many tiny items that each decode into a large object).
  void charge(std::size_t bytes) {
    if (bytes > budget_) {
      throw PayloadError("decoding would build more than " +
                         std::to_string(kBudgetPerByte * in_.size() + kBudgetFloor) +
                         " bytes of objects from " + std::to_string(in_.size()) +
                         " bytes of payload");
    }
    budget_ -= bytes;
  }

  std::span<const std::byte> in_;
  std::size_t at_ = 0;
  std::size_t budget_;
};

// Encodes `value` with PayloadOArchive.
template <class T>
std::string encode_payload(const T& value) {
  std::string out;
  PayloadOArchive ar(out);
  ar << value;
  return out;
}

// Decodes a T from `bytes`, requiring every byte to be used. Throws PayloadError.
template <class T>
T decode_payload(std::span<const std::byte> bytes) {
  T value{};
  PayloadIArchive ar(bytes);
  ar >> value;
  ar.expect_end();
  return value;
}

}  // namespace factum
