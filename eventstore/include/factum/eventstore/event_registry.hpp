// factum/eventstore/event_registry.hpp — typed domain events: registration, encoding,
// decoding, schema evolution (upcasters and aliases) and type-safe dispatch.
//
//   struct MoneyDeposited {
//     static constexpr std::string_view event_type = "bank.MoneyDeposited";
//     static constexpr std::uint32_t schema_version = 2;  // optional; 1 when absent
//     std::string account;
//     std::int64_t amount_minor = 0;
//     template <class Archive> void serialize(Archive& ar, unsigned) { ar & account & amount_minor;
//     }
//   };
//
//   factum::EventRegistry registry;
//   registry.add<MoneyDeposited>().add<MoneyWithdrawn>();
//   registry.upcast<MoneyDepositedV1, MoneyDeposited>([](const MoneyDepositedV1& old) {...});
//   registry.validate();                         // at start-up: a broken chain fails here
//   store.append("account-1", factum::ExpectedVersion::any(), registry, MoneyDeposited{...});
//   using BankEvent = std::variant<MoneyDeposited, MoneyWithdrawn>;
//   for (const auto& d : registry.typed<BankEvent>(store.read_stream("account-1")))
//     std::visit(overloaded{...}, d.event);
//
// Decoding checks the event against its hash first (CorruptEventError on mismatch), runs the
// upcasters from the stored schema version to the current one, then decodes with
// PayloadIArchive, whose failures become CorruptEventError naming the position and type.
// An unregistered type gives UnknownEventTypeError, or is skipped where the caller says so.
//
// Thread-safety: register everything first (add, alias, upcast, validate) on one thread;
// after that every const member may be called from any number of threads at once.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <typeindex>
#include <variant>
#include <vector>

#include "factum/eventstore/domain_event.hpp"
#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_range.hpp"
#include "factum/eventstore/payload_archive.hpp"
#include "factum/eventstore/personal.hpp"

namespace factum {

// What a typed read does with an event whose type the caller did not ask for.
enum class UnknownEvents {
  raise,  // throw UnknownEventTypeError (the default)
  skip,   // leave it out of the range
};

// A decoded event with its envelope.
template <class Event>
struct Decoded {
  RecordedEvent envelope;
  Event event;
};

class EventRegistry {
 public:
  EventRegistry() = default;
  EventRegistry(const EventRegistry&) = delete;
  EventRegistry& operator=(const EventRegistry&) = delete;

  // Registers E under E::event_type at schema_version_of<E>(). Throws InvalidArgument when
  // the name is empty or taken by another type or alias.
  template <DomainEvent E>
  EventRegistry& add() {
    add_type(std::string(E::event_type), schema_version_of<E>(), typeid(E));
    return *this;
  }

  // Events stored under `old_name` (a type that was renamed) decode as E. Their schema
  // versions are E's: upcasters of E apply to them. Throws InvalidArgument when `old_name`
  // is registered already.
  template <DomainEvent E>
  EventRegistry& alias(std::string_view old_name) {
    add_alias(std::string(old_name), std::string(E::event_type));
    return *this;
  }

  // An upcaster: turns a payload written as From (an old layout of the event, with its own
  // schema_version) into To (the next layout). From and To are structs of the same event
  // (To::event_type names it; From's name is ignored). Throws InvalidArgument when
  // From's version is not below To's (a cycle), or when an upcaster for that version of
  // the event exists already.
  template <class From, DomainEvent To, class Fn>
  requires std::is_invocable_r_v<To, Fn, const From&> EventRegistry& upcast(Fn fn) {
    add_upcaster(std::string(To::event_type), schema_version_of<From>(), schema_version_of<To>(),
                 [fn = std::move(fn)](std::span<const std::byte> bytes) {
                   // Each payload's personal values count from the first (their places bind
                   // them: personal.hpp).
                   detail::PersonalScope* personal = detail::current_personal_scope();
                   if (personal != nullptr) personal->next_field = 0;
                   const From from = decode_payload<From>(bytes);
                   if (personal != nullptr) personal->next_field = 0;
                   return encode_payload<To>(fn(from));
                 });
    return *this;
  }

  // A byte-level upcaster, for changes no struct expresses: payload bytes of `type` at
  // `from_version` in, bytes at `to_version` out.
  EventRegistry& upcast_bytes(std::string_view type, std::uint32_t from_version,
                              std::uint32_t to_version,
                              std::function<std::string(std::span<const std::byte>)> fn) {
    add_upcaster(std::string(type), from_version, to_version, std::move(fn));
    return *this;
  }

  // Personal values (personal.hpp): encode and decode them with `keyring` (a store's
  // EventStore::keyring()). Without one, encoding an event that holds a Personal value throws
  // InvalidArgument and decoding gives sealed values. Call it with the other set-up, before the
  // registry is used from several threads.
  EventRegistry& use_keyring(std::shared_ptr<const detail::PersonalCodec> keyring) {
    keyring_ = std::move(keyring);
    return *this;
  }

  // Checks every upcaster chain: each must lead, without a gap, to a registered type's
  // current version. Throws InvalidArgument naming the type and the missing version. Call
  // it at start-up; the first decode calls it too when nobody did.
  void validate() const;

  // True when `type` (a name or an alias) is registered.
  bool knows(std::string_view type) const;
  // The registered name behind `type` (itself, or what an alias points at).
  std::string_view canonical_name(std::string_view type) const;

  // Encodes `event` into an EventData with a fresh id. Throws UnknownEventTypeError when E
  // is not registered.
  template <DomainEvent E>
  EventData encode(const E& event, Metadata metadata = {}) const {
    require_registered(E::event_type, typeid(E));
    EventData data;
    data.type = std::string(E::event_type);
    data.schema_version = schema_version_of<E>();
    detail::PersonalScope personal(keyring_.get(), data.id);
    const std::string bytes = encode_payload(event);
    const auto* first = reinterpret_cast<const std::byte*>(bytes.data());
    data.payload.assign(first, first + bytes.size());  // no memcpy: may be empty (null data)
    data.metadata = std::move(metadata);
    if (!personal.sealed.empty()) detail::note_subjects(personal, data.metadata);
    return data;
  }

  // Decodes `recorded` as E. Throws UnknownEventTypeError when E is not the registered
  // struct of its name, when the event's type is not E (or an alias of E), or is of a schema
  // version newer than E's; CorruptEventError when it does not match its hash or its
  // payload is malformed; InvalidArgument when the registry fails validate().
  template <DomainEvent E>
  E decode(const RecordedEvent& recorded) const {
    require_registered(E::event_type, typeid(E));  // not an old struct of the same name
    if (canonical_name(recorded.type) != E::event_type) {
      throw UnknownEventTypeError(recorded.type, "expected '" + std::string(E::event_type) +
                                                     "' at position " +
                                                     std::to_string(recorded.position));
    }
    detail::PersonalScope personal(keyring_.get(), recorded.id);
    const std::string bytes = current_payload(recorded);
    personal.next_field = 0;  // an upcaster's values counted on their own
    try {
      return decode_payload<E>(as_bytes(bytes));
    } catch (const PayloadError& e) {
      throw corrupt(recorded, e.what());
    }
  }

  // Decodes `recorded` into whichever alternative of Variant (a std::variant of event
  // types) it is. Throws UnknownEventTypeError when it is none of them.
  template <class Variant>
  Variant decode_variant(const RecordedEvent& recorded) const {
    if (auto v = try_decode<Variant>(recorded)) return std::move(*v);
    throw UnknownEventTypeError(recorded.type, "at position " + std::to_string(recorded.position) +
                                                   ", not one of the types this reader handles");
  }

  // As decode_variant, but std::nullopt when the event is none of Variant's types.
  template <class Variant>
  std::optional<Variant> try_decode(const RecordedEvent& recorded) const {
    return try_alternatives<Variant>(recorded,
                                     std::make_index_sequence<std::variant_size_v<Variant>>{});
  }

  // A lazy range of Decoded<Variant> over `range`, for `for (const auto& d : ...)`.
  template <class Variant>
  class TypedRange;
  template <class Variant>
  TypedRange<Variant> typed(EventRange range, UnknownEvents unknown = UnknownEvents::raise) const {
    return TypedRange<Variant>(*this, std::move(range), unknown);
  }

 private:
  using Step = std::function<std::string(std::span<const std::byte>)>;
  struct Upcaster {
    std::uint32_t to_version = 0;
    Step step;
  };
  struct TypeInfo {
    std::uint32_t current_version = 0;
    std::type_index type = typeid(void);
  };

  static std::span<const std::byte> as_bytes(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
  }

  void add_type(std::string name, std::uint32_t version, std::type_index type);
  void add_alias(std::string old_name, std::string name);
  void add_upcaster(std::string type, std::uint32_t from, std::uint32_t to, Step step);
  void require_registered(std::string_view name, std::type_index type) const;
  // The payload of `recorded` at its type's current schema version: checks the hash, then
  // runs the upcasters. Throws CorruptEventError or UnknownEventTypeError.
  std::string current_payload(const RecordedEvent& recorded) const;
  static CorruptEventError corrupt(const RecordedEvent& recorded, const std::string& why);

  template <class Variant, std::size_t... I>
  std::optional<Variant> try_alternatives(const RecordedEvent& recorded,
                                          std::index_sequence<I...>) const {
    const std::string_view name = canonical_name(recorded.type);
    std::optional<Variant> out;
    ((std::variant_alternative_t<I, Variant>::event_type == name
          ? (out.emplace(std::in_place_index<I>,
                         decode<std::variant_alternative_t<I, Variant>>(recorded)),
             true)
          : false) ||
     ...);
    return out;
  }

  std::map<std::string, TypeInfo, std::less<>> types_;
  std::map<std::string, std::string, std::less<>> aliases_;
  std::map<std::pair<std::string, std::uint32_t>, Upcaster> upcasters_;
  std::shared_ptr<const detail::PersonalCodec> keyring_;
  mutable std::once_flag validated_;
};

template <class Variant>
class EventRegistry::TypedRange {
 public:
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Decoded<Variant>;
    using difference_type = std::ptrdiff_t;
    using reference = const Decoded<Variant>&;
    using pointer = const Decoded<Variant>*;

    iterator() = default;
    reference operator*() const { return *current_; }
    pointer operator->() const { return &*current_; }
    iterator& operator++() {
      ++it_;
      settle();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& i, std::default_sentinel_t) noexcept {
      return !i.current_.has_value();
    }

   private:
    friend class TypedRange;
    iterator(const TypedRange* range, EventRange::iterator it) : range_(range), it_(std::move(it)) {
      settle();
    }
    // Decodes the event under it_, skipping unknown ones when asked to.
    void settle() {
      current_.reset();
      for (; it_ != std::default_sentinel; ++it_) {
        auto event = range_->registry_.template try_decode<Variant>(*it_);
        if (event) {
          current_.emplace(Decoded<Variant>{*it_, std::move(*event)});
          return;
        }
        if (range_->unknown_ == UnknownEvents::raise) {
          range_->registry_.template decode_variant<Variant>(*it_);  // throws, naming it
        }
      }
    }
    const TypedRange* range_ = nullptr;
    EventRange::iterator it_;
    std::optional<Decoded<Variant>> current_;
  };

  TypedRange(const EventRegistry& registry, EventRange range, UnknownEvents unknown)
      : registry_(registry), range_(std::move(range)), unknown_(unknown) {}

  iterator begin() const { return iterator(this, range_.begin()); }
  std::default_sentinel_t end() const noexcept { return {}; }

 private:
  const EventRegistry& registry_;
  EventRange range_;
  UnknownEvents unknown_;
};

// Builds a visitor from lambdas: std::visit(factum::overloaded{[](const A&) {}, ...}, v).
template <class... Fs>
struct overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
overloaded(Fs...) -> overloaded<Fs...>;

}  // namespace factum
