// A TCP listener on 127.0.0.1 that lets clients connect and never sends them a byte: a server
// that hangs, for the tests of connection timeouts.
#pragma once

#include <functional>
#include <string>

namespace factum::test {

// Listens on a free port of 127.0.0.1 (backlog 64) and never accepts: the system completes
// each connection, and what the client sends is never read nor answered.
//
// Thread-safety: port() may be called from any thread; close() from one thread at a time.
class SilentServer {
 public:
  // Throws std::system_error when no socket can be bound.
  SilentServer();
  ~SilentServer();
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;

  int port() const noexcept { return port_; }
  // Stops listening: the connections waiting on it are reset (their clients see an error at
  // once). Use it to end a client that would otherwise wait forever.
  void close() noexcept;

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Runs `connect` (a call that connects to `server`) on a thread of its own and returns the
// message of the factum::StorageError it throws, followed by " [io]" when its kind is io, or
// "connected" when it returns. If it has not returned after a minute, `server` stops listening,
// which ends the wait with another error: a test's checks of the message then fail, never hang.
std::string error_connecting(SilentServer& server, const std::function<void()>& connect);

}  // namespace factum::test
