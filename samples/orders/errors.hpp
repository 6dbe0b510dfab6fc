// samples/orders/errors.hpp — the orders domain's own errors. The command line prints any of
// them as one line ("factum-orders: <message>") and exits 1; nothing is written when one is
// thrown.
//
// Thread-safety: exception objects are immutable after construction.
#pragma once

#include <stdexcept>
#include <string>

namespace orders {

// Base of every error of the orders domain.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Input that does not parse or is out of range: an order id, a customer, an item, an amount.
class BadInput : public Error {
 public:
  using Error::Error;
};

// A command names an order that has no events.
class UnknownOrder : public Error {
 public:
  explicit UnknownOrder(const std::string& order) : Error("unknown order " + order) {}
};

// A command the order's state machine refuses (out of order, or the order is closed).
class Refused : public Error {
 public:
  using Error::Error;
};

}  // namespace orders
