// factum/eventstore/domain_event.hpp — what makes a struct a domain event: the DomainEvent
// concept and its schema version. Kept apart from event_registry.hpp, so that event_store.hpp
// can name typed events without parsing Boost.Serialization (docs/headers.md).
//
//   struct MoneyDeposited {
//     static constexpr std::string_view event_type = "bank.MoneyDeposited";
//     static constexpr std::uint32_t schema_version = 2;  // optional; 1 when absent
//     ...
//   };
//
// Thread-safety: compile-time only; nothing here runs.
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>

namespace factum {

// A domain event type: a default-constructible struct with a stable type name.
template <class E>
concept DomainEvent = std::default_initializable<E> && std::copy_constructible<E> && requires {
  { E::event_type } -> std::convertible_to<std::string_view>;
};

// The schema version of E: E::schema_version, or 1 when E does not declare one.
template <DomainEvent E>
constexpr std::uint32_t schema_version_of() {
  if constexpr (requires { E::schema_version; }) {
    return static_cast<std::uint32_t>(E::schema_version);
  } else {
    return 1;
  }
}

}  // namespace factum
