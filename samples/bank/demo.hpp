// samples/bank/demo.hpp — a year of banking, made up: accounts opened, salaries and rent,
// card payments and transfers between friends, a few accounts closed, and the operations a
// real bank refuses (overdrafts, payments from closed accounts) or has to undo (transfers to
// an account closed meanwhile, reversed by a compensating event).
//
// Everything goes through the Bank service, with a simulated clock that walks through 2024,
// so the history obeys exactly the rules a user's commands obey. The same seed gives the same
// history (the same accounts, amounts and balances; event ids and hashes differ).
//
// Thread-safety: create_history uses its store alone while it runs.
#pragma once

#include <factum/factum.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace bank {

struct DemoOptions {
  int accounts = 120;       // accounts opened in the first weeks
  int operations = 3000;    // deposits, withdrawals, transfers and closings attempted
  std::uint64_t seed = 42;  // the random history's seed
};

struct DemoSummary {
  int opened = 0;
  int closed = 0;
  int deposits = 0;                   // landed
  int withdrawals = 0;                // landed
  int transfers = 0;                  // credited
  int reversed = 0;                   // debited, refused by the target, compensated
  int refused = 0;                    // refused before anything was written
  std::vector<std::string> refusals;  // the first refusal of each rule, its message
  std::string salary_reference;       // the payment reference of the first salary booked
};

// Steps create_history reports through its callback: one per account and per operation.
std::uint64_t demo_steps(const DemoOptions& options);

// Writes the history into `store` (meant to be empty), calling `step()` after each step.
DemoSummary create_history(factum::EventStore& store, const DemoOptions& options,
                           const std::function<void()>& step);

}  // namespace bank
