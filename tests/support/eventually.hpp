// Waiting in tests without sleeping for a fixed time: poll a condition until it holds, bounded.
#pragma once

#include <chrono>
#include <thread>

namespace factum::test {

// How long a test waits for something that should happen at once before it calls it a failure.
inline constexpr std::chrono::milliseconds kWait = std::chrono::seconds(10);

// Polls `condition` every millisecond until it holds or `timeout` passes; returns whether it held.
template <class Condition>
bool eventually(Condition&& condition, std::chrono::milliseconds timeout = kWait) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace factum::test
