// factum/aggregates/aggregate.hpp — the base of an event-sourced aggregate.
//
// An aggregate's state is never stored, only derived from its events. Derive from
// Aggregate<Derived, Events...>, list the event types it raises and applies, give it one
// `apply` per event type and command methods that check invariants and `raise` events:
//
//   class Account : public factum::Aggregate<Account, AccountOpened, MoneyDeposited> {
//    public:
//     static constexpr std::string_view category = "account";  // streams "account-<id>"
//     void deposit(std::int64_t cents) {
//       if (!open_) throw AccountClosed(id());          // check first, then raise
//       raise(MoneyDeposited{id(), cents});
//     }
//     void apply(const AccountOpened&) { open_ = true; }
//     void apply(const MoneyDeposited& e) { balance_ += e.cents; }
//     // Optional, for snapshots: the state's layout version and its serialization.
//     static constexpr std::uint32_t snapshot_version = 1;
//     template <class Ar> void serialize(Ar& ar, unsigned) { ar & open_ & balance_; }
//    private:
//     bool open_ = false;
//     std::int64_t balance_ = 0;
//   };
//
// raise(e) applies e at once and keeps it as pending until the repository saves it. A
// command must check every invariant before its first raise: a command that throws must
// leave nothing raised (the repository's execute discards the aggregate when a command
// throws, so nothing is saved either way).
//
// Thread-safety: an aggregate object is a plain value used by one thread at a time.
#pragma once

#include <factum/eventstore/event.hpp>
#include <factum/eventstore/event_registry.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace factum {

namespace detail {
struct AggregateAccess;
}

template <class Derived, DomainEvent... Events>
class Aggregate {
 public:
  using Event = std::variant<Events...>;

  // The aggregate's id (the part of its stream id after the category and '-').
  const std::string& id() const noexcept { return id_; }
  // The stream version the aggregate was loaded at (or last saved at); 0 for a new one.
  StreamVersion loaded_version() const noexcept { return loaded_version_; }
  // The version it will have once its pending events are saved.
  StreamVersion version() const noexcept { return loaded_version_ + pending_.size(); }
  // Events raised since it was loaded or saved, oldest first.
  const std::vector<Event>& pending() const noexcept { return pending_; }

 protected:
  Aggregate() = default;

  // Applies `event` to the state at once and keeps it to be saved.
  template <class E>
  void raise(E event) {
    static_assert((std::is_same_v<E, Events> || ...),
                  "raise: the event is not one of the aggregate's event types");
    derived().apply(std::as_const(event));
    pending_.emplace_back(std::move(event));
  }

 private:
  friend struct detail::AggregateAccess;
  Derived& derived() { return static_cast<Derived&>(*this); }

  std::string id_;
  StreamVersion loaded_version_ = 0;
  std::vector<Event> pending_;
};

namespace detail {

// What the repository does to an aggregate that its users may not.
struct AggregateAccess {
  template <class A>
  static void replay(A& a, const typename A::Event& event) {
    std::visit([&](const auto& e) { a.derived().apply(e); }, event);
  }
  template <class A>
  static void set_identity(A& a, std::string id, StreamVersion version) {
    a.id_ = std::move(id);
    a.loaded_version_ = version;
    a.pending_.clear();
  }
  template <class A>
  static void mark_saved(A& a, StreamVersion version) {
    a.loaded_version_ = version;
    a.pending_.clear();
  }
};

}  // namespace detail

}  // namespace factum
