#include "support/silent_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <factum/eventstore/errors.hpp>
#include <future>
#include <system_error>

namespace factum::test {

SilentServer::SilentServer() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t size = sizeof address;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 || ::listen(fd_, 64) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    const int error = errno;
    close();
    throw std::system_error(error, std::generic_category(), "a silent server on 127.0.0.1");
  }
  port_ = ntohs(address.sin_port);
}

SilentServer::~SilentServer() { close(); }

void SilentServer::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string error_connecting(SilentServer& server, const std::function<void()>& connect) {
  auto connecting = std::async(std::launch::async, [&]() -> std::string {
    try {
      connect();
    } catch (const StorageError& e) {
      return std::string(e.what()) + (e.kind() == StorageError::Kind::io ? " [io]" : "");
    }
    return "connected";
  });
  if (connecting.wait_for(std::chrono::minutes(1)) != std::future_status::ready) server.close();
  return connecting.get();
}

}  // namespace factum::test
