// Test helper: a step run over and over on a thread of its own until stopped (a writer beside
// the reads a test checks), and a way to wait until it has made progress, so that each read
// runs beside a writer that is still writing.
//
//   BackgroundLoop writer([&](std::uint64_t i) { bank.deposit("acc-1", Money::parse("1")); });
//   for (int i = 0; i < 40; ++i) {
//     REQUIRE_MESSAGE(writer.await_progress(), writer.error());
//     ... read and check ...
//   }
//   writer.stop();
//
// The step's exception ends the loop; error() gives its message. Header-only.
// Thread-safety: one thread drives the loop (await_progress, stop); error() from any.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace factum::test {

class BackgroundLoop {
 public:
  // Starts calling step(0), step(1), ... on a new thread.
  explicit BackgroundLoop(std::function<void(std::uint64_t)> step)
      : step_(std::move(step)), thread_([this] { run(); }) {}
  ~BackgroundLoop() { stop(); }
  BackgroundLoop(const BackgroundLoop&) = delete;
  BackgroundLoop& operator=(const BackgroundLoop&) = delete;

  // Lets the step in progress finish, and joins the thread.
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  // Waits until at least one more step has finished since the last call (or the start): true.
  // False when the loop has failed (error()) or no step finished within `timeout`.
  bool await_progress(std::chrono::seconds timeout = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    const bool moved =
        cv_.wait_for(lock, timeout, [&] { return done_ > seen_ || !error_.empty(); });
    seen_ = done_;
    return moved && error_.empty();
  }

  // The message of the exception that ended the loop; empty while it runs or stopped cleanly.
  std::string error() const {
    std::lock_guard lock(mu_);
    return error_;
  }

 private:
  void run() {
    try {
      for (std::uint64_t i = 0; !stop_; ++i) {
        step_(i);
        std::lock_guard lock(mu_);
        ++done_;
        cv_.notify_all();
      }
    } catch (const std::exception& e) {
      fail(e.what());
    } catch (...) {
      fail("an exception that is not a std::exception");
    }
  }

  void fail(std::string message) {
    std::lock_guard lock(mu_);
    error_ = std::move(message);
    cv_.notify_all();
  }

  std::function<void(std::uint64_t)> step_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t done_ = 0;  // steps finished; guarded by mu_
  std::uint64_t seen_ = 0;  // done_ at the last await_progress; guarded by mu_
  std::string error_;       // guarded by mu_
  std::thread thread_;      // last: starts once the members above exist
};

}  // namespace factum::test
