// A bank account aggregate for the aggregate and snapshot tests.
#pragma once

#include <factum/factum.hpp>

#include <stdexcept>
#include <string>

namespace factum::test::bank {

struct Opened {
  static constexpr std::string_view event_type = "test.bank.Opened";
  std::string owner;
  std::int64_t limit_cents = 0;  // how far below zero the balance may go
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& owner& limit_cents;
  }
};
struct Deposited {
  static constexpr std::string_view event_type = "test.bank.Deposited";
  std::int64_t cents = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& cents;
  }
};
struct Withdrawn {
  static constexpr std::string_view event_type = "test.bank.Withdrawn";
  std::int64_t cents = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& cents;
  }
};
struct Closed {
  static constexpr std::string_view event_type = "test.bank.Closed";
  template <class Ar>
  void serialize(Ar&, unsigned) {}
};

// The domain's error: a command that would break an invariant.
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Account : public Aggregate<Account, Opened, Deposited, Withdrawn, Closed> {
 public:
  static constexpr std::string_view category = "account";
  static constexpr std::uint32_t snapshot_version = 1;

  void open(std::string owner, std::int64_t limit_cents) {
    if (opened_) throw Refused("account " + id() + " is open already");
    raise(Opened{std::move(owner), limit_cents});
  }
  void deposit(std::int64_t cents) {
    require_open();
    if (cents <= 0) throw Refused("a deposit must be positive");
    raise(Deposited{cents});
  }
  void withdraw(std::int64_t cents) {
    require_open();
    if (cents <= 0) throw Refused("a withdrawal must be positive");
    if (balance_ - cents < -limit_) throw Refused("account " + id() + " would pass its limit");
    raise(Withdrawn{cents});
  }
  void close() {
    require_open();
    raise(Closed{});
  }

  void apply(const Opened& e) {
    opened_ = true;
    owner_ = e.owner;
    limit_ = e.limit_cents;
  }
  void apply(const Deposited& e) {
    balance_ += e.cents;
    ++movements_;
  }
  void apply(const Withdrawn& e) {
    balance_ -= e.cents;
    ++movements_;
  }
  void apply(const Closed&) { closed_ = true; }

  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar& opened_& closed_& owner_& limit_& balance_& movements_;
  }

  bool opened() const { return opened_; }
  bool closed() const { return closed_; }
  const std::string& owner() const { return owner_; }
  std::int64_t limit() const { return limit_; }
  std::int64_t balance() const { return balance_; }
  std::int64_t movements() const { return movements_; }
  friend bool operator==(const Account& a, const Account& b) {
    return a.opened_ == b.opened_ && a.closed_ == b.closed_ && a.owner_ == b.owner_ &&
           a.limit_ == b.limit_ && a.balance_ == b.balance_ && a.movements_ == b.movements_ &&
           a.id() == b.id() && a.version() == b.version();
  }

 private:
  void require_open() const {
    if (!opened_) throw Refused("account " + id() + " is not open");
    if (closed_) throw Refused("account " + id() + " is closed");
  }
  bool opened_ = false;
  bool closed_ = false;
  std::string owner_;
  std::int64_t limit_ = 0;
  std::int64_t balance_ = 0;
  std::int64_t movements_ = 0;
};

inline void register_events(EventRegistry& r) {
  r.add<Opened>().add<Deposited>().add<Withdrawn>().add<Closed>();
  r.validate();
}

}  // namespace factum::test::bank
