#include "postgres/notifications.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <functional>
#include <system_error>
#include <thread>

#include "postgres/pipeline.hpp"

namespace factum::detail::pg {
namespace {

// PRAGMA data_version's counterpart: factum_store.commits, which every commit that writes
// (an append, a write_sql) increments under the ordering lock. changed() reads it on a
// connection of its own: one indexed read of one row, exact (a NOTIFY, which each commit also
// sends, can still be in flight when an append returns, so it cannot answer alone). A broken
// connection is reopened and reported as a change (commits may have been missed meanwhile).
// push(): a thread of its own LISTENs on the store's channel (every commit that writes sends a
// NOTIFY there, delivered at its COMMIT) on a connection of its own, and calls `wake` for each
// batch of notifications that arrives; when that connection fails it calls `wake` (commits may
// have been missed), pauses (10 ms, doubling up to 1 s) and connects again. A self-pipe stops it.
class CommitListener {
 public:
  CommitListener(std::shared_ptr<const PgTarget> target, StoreOptions options, std::string channel,
                 std::function<void()> wake)
      : target_(std::move(target)),
        options_(std::move(options)),
        channel_(std::move(channel)),
        wake_(std::move(wake)) {
    if (::pipe2(stop_.data(), O_CLOEXEC | O_NONBLOCK) != 0) {
      throw std::system_error(errno, std::generic_category(), "factum: a pipe for a listener");
    }
    try {
      thread_ = std::thread([this] { run(); });
    } catch (...) {
      close_pipe();
      throw;
    }
  }
  ~CommitListener() {
    const char byte = 0;
    while (::write(stop_[1], &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
    close_pipe();
  }
  CommitListener(const CommitListener&) = delete;
  CommitListener& operator=(const CommitListener&) = delete;

 private:
  void close_pipe() noexcept {
    ::close(stop_[0]);
    ::close(stop_[1]);
  }

  // Waits until `fd` is readable or the stop pipe is (or `timeout_ms` passes; -1: no limit).
  // Returns false when stopping.
  bool await(int fd, int timeout_ms) const noexcept {
    std::array<pollfd, 2> fds{pollfd{stop_[0], POLLIN, 0}, pollfd{fd, POLLIN, 0}};
    const nfds_t n = fd >= 0 ? 2 : 1;
    while (::poll(fds.data(), n, timeout_ms) < 0) {
      if (errno != EINTR) return true;  // the caller's next read fails and reconnects
    }
    return fds[0].revents == 0;
  }

  void run() noexcept {
    int pause_ms = 10;
    for (;;) {
      try {
        PgConn conn(target_, options_);
        conn.exec("LISTEN " + channel_, "listening for commits");
        pause_ms = 10;
        wake_();  // commits between the watcher's baseline and the LISTEN
        for (;;) {
          const int socket = libpq().PQsocket(conn.get());
          if (socket < 0) break;
          if (!await(socket, -1)) return;
          if (libpq().PQconsumeInput(conn.get()) == 0) break;
          bool notified = false;
          while (PGnotify* n = libpq().PQnotifies(conn.get())) {
            notified = true;
            libpq().PQfreemem(n);
          }
          if (notified) wake_();
        }
      } catch (...) {
        // Cannot connect or LISTEN now: woken below, tried again after the pause.
      }
      wake_();  // commits may have come while the connection was gone
      if (!await(-1, pause_ms)) return;
      pause_ms = std::min(pause_ms * 2, 1000);
    }
  }

  std::shared_ptr<const PgTarget> target_;
  StoreOptions options_;
  std::string channel_;
  std::function<void()> wake_;
  std::array<int, 2> stop_{-1, -1};
  std::thread thread_;
};

class CommitWatcher final : public LogWatcher {
 public:
  CommitWatcher(std::shared_ptr<const PgTarget> target, StoreOptions options, std::string channel)
      : target_(std::move(target)), options_(std::move(options)), channel_(std::move(channel)) {
    connect();
  }

  bool push(std::function<void()> wake) override {
    listener_ = std::make_unique<CommitListener>(target_, options_, channel_, std::move(wake));
    return true;
  }

  bool changed() override {
    if (!conn_ || !conn_->alive()) {
      connect();
      return std::exchange(armed_, true);
    }
    std::int64_t now = 0;
    try {
      now = read_commits();
    } catch (const StorageError&) {
      if (conn_->ok()) throw;
      connect();
      return std::exchange(armed_, true);
    }
    const bool moved = now != seen_;
    seen_ = now;
    return std::exchange(armed_, true) && moved;
  }

 private:
  std::int64_t read_commits() {
    PgResult r = Params().run(*conn_, "SELECT commits FROM factum_store WHERE id = 1",
                              "reading the store's commit counter");
    return r.rows() == 1 ? r.int64_or(0, 0, 0) : 0;
  }

  void connect() {
    conn_.reset();
    conn_ = std::make_unique<PgConn>(target_, options_);
    seen_ = read_commits();
  }

  std::shared_ptr<const PgTarget> target_;
  StoreOptions options_;
  std::string channel_;
  std::unique_ptr<PgConn> conn_;
  std::int64_t seen_ = 0;  // the commit count answered for
  bool armed_ = false;     // false until the first call, which only takes the baseline
  std::unique_ptr<CommitListener> listener_;  // push()'s, stopped first
};

}  // namespace

std::unique_ptr<LogWatcher> watch_commits(std::shared_ptr<const PgTarget> target,
                                          const StoreOptions& options, const std::string& channel) {
  return std::make_unique<CommitWatcher>(std::move(target), options, channel);
}

}  // namespace factum::detail::pg
