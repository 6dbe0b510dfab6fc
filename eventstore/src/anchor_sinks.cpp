// Where anchors go (anchor.hpp): an append-only file of JSON lines, fsynced line by line and
// locked while one is added, and a sink that hands each anchor to the application.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "factum/eventstore/anchor.hpp"
#include "factum/eventstore/location.hpp"

namespace factum {
namespace {

// How long an append waits for another process's append to the same file before it gives up.
constexpr auto kLockWait = std::chrono::seconds(30);
// An anchor's line is ~330 bytes; the tail read to find the last one.
constexpr off_t kTail = 64 * 1024;

// `error`: the errno of the call that failed, or 0 when no call did.
[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int error = 0) {
  throw AnchorError("factum: cannot use the anchor file '" + path.string() + "': " + what +
                    (error != 0 ? std::string(" (") + std::strerror(error) + ")" : ""));
}

// The end of a file of lines: its last complete line (nullopt when it has none), where that
// line ends (after its newline) and the file's size (beyond: a torn line).
struct Tail {
  std::optional<std::string> line;
  off_t complete = 0;
  off_t size = 0;
};

Tail read_tail(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, "its size cannot be read", errno);
  Tail t;
  t.size = st.st_size;
  // One byte more than the longest line read: the newline before it.
  const off_t from = t.size > kTail + 1 ? t.size - kTail - 1 : 0;
  std::string tail(static_cast<std::size_t>(t.size - from), '\0');
  std::size_t done = 0;
  while (done < tail.size()) {
    const ssize_t n =
        ::pread(fd, tail.data() + done, tail.size() - done, from + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, "it cannot be read", errno);
    if (n == 0) fail(path, "it shrank while it was read");
    done += static_cast<std::size_t>(n);
  }
  const std::size_t end = tail.rfind('\n');  // the end of the last complete line
  t.complete = end == std::string::npos ? from : from + static_cast<off_t>(end) + 1;
  if (end == std::string::npos && from == 0) return t;
  const std::size_t before =
      end == 0 || end == std::string::npos ? std::string::npos : tail.rfind('\n', end - 1);
  if (before == std::string::npos && from > 0) {
    fail(path, "its last line is longer than 64 KiB: not an anchor file");
  }
  const std::size_t begin = before == std::string::npos ? 0 : before + 1;
  t.line = tail.substr(begin, end - begin);
  return t;
}

// Waits (bounded) for the file's lock (`operation`: LOCK_EX to append, LOCK_SH to read): an
// append holds it only while it writes one line.
void lock_file(int fd, const std::filesystem::path& path, int operation) {
  const auto deadline = std::chrono::steady_clock::now() + kLockWait;
  while (::flock(fd, operation | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) fail(path, "it cannot be locked", errno);
    if (std::chrono::steady_clock::now() > deadline) {
      fail(path, "another process held its lock for 30 seconds");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Parses the last line of the anchor file `path`.
Anchor last_anchor(const std::filesystem::path& path, const std::string& line) {
  try {
    return Anchor::from_json(line);
  } catch (const AnchorError& e) {
    throw AnchorError("factum: the last line of the anchor file '" + path.string() +
                      "' is not an anchor: " + e.what());
  }
}

// An open anchor file, locked exclusively for one append (released when closed).
class LockedFile {
 public:
  explicit LockedFile(const std::filesystem::path& path) : path_(path) {
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(path, "it cannot be opened", errno);
    try {
      lock_file(fd_, path_, LOCK_EX);
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
  ~LockedFile() { ::close(fd_); }
  LockedFile(const LockedFile&) = delete;
  LockedFile& operator=(const LockedFile&) = delete;

  // The file's last complete line (nullopt when it has none), after cutting off a torn one.
  std::optional<std::string> last_line() {
    Tail tail = read_tail(fd_, path_);
    if (tail.complete < tail.size) cut(tail.complete);  // a torn line: a write that never finished
    end_ = tail.complete;
    return std::move(tail.line);
  }

  // Writes `line` at the end and makes it durable; on a failure, cuts the file back.
  void append(const std::string& line) {
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n =
          ::pwrite(fd_, line.data() + done, line.size() - done, end_ + static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int error = n < 0 ? errno : ENOSPC;
        cut_back();
        fail(path_, "the anchor cannot be written", error);
      }
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd_) != 0) {
      const int error = errno;
      cut_back();
      fail(path_, "the anchor cannot be flushed to disk", error);
    }
    // The file's name too (it may be new, or new since an append that failed): anchors are
    // rare, so one more flush each costs little.
    sync_folder();
  }

 private:
  // After a failed write: nothing of the line stays.
  void cut_back() noexcept {
    if (::ftruncate(fd_, end_) != 0) {
      // The write's error is the one reported; the next append cuts a torn line off anyway.
    }
  }
  void cut(off_t size) {
    if (::ftruncate(fd_, size) != 0 || ::fsync(fd_) != 0) {
      fail(path_, "a torn last line cannot be cut off", errno);
    }
  }
  // A new file's name is durable only once its folder is flushed.
  void sync_folder() {
    const std::filesystem::path folder = path_.has_parent_path() ? path_.parent_path() : ".";
    const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) fail(path_, "its folder cannot be opened to flush the new file's name", errno);
    const int rc = ::fsync(dir);
    const int error = errno;
    ::close(dir);
    if (rc != 0) fail(path_, "its folder cannot be flushed", error);
  }

  std::filesystem::path path_;
  int fd_ = -1;
  off_t end_ = 0;
};

}  // namespace

AnchorFile::AnchorFile(std::filesystem::path path) : path_(std::move(path)) {}

Anchor AnchorFile::append(const std::function<Anchor(const std::optional<Anchor>& last)>& make) {
  LockedFile file(path_);
  const std::optional<std::string> line = file.last_line();
  std::optional<Anchor> last;
  if (line) last = last_anchor(path_, *line);
  Anchor next = make(last);
  file.append(next.to_json() + "\n");
  return next;
}

std::optional<Anchor> AnchorFile::last() {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return std::nullopt;
  if (fd < 0) fail(path_, "it cannot be opened", errno);
  std::optional<Tail> tail;
  try {
    lock_file(fd, path_, LOCK_SH);  // no append cuts or writes the end meanwhile
    tail = read_tail(fd, path_);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (!tail->line) return std::nullopt;
  return last_anchor(path_, *tail->line);
}

std::vector<Anchor> AnchorFile::anchors() {
  std::vector<Anchor> out;
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) return out;
    throw AnchorError("factum: cannot read the anchor file '" + path_.string() + "'");
  }
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (in.eof()) break;  // no newline: a torn write that never counted
    try {
      out.push_back(Anchor::from_json(line));
    } catch (const AnchorError& e) {
      throw AnchorError("factum: line " + std::to_string(number) + " of the anchor file '" +
                        path_.string() + "': " + e.what());
    }
  }
  if (in.bad()) throw AnchorError("factum: cannot read the anchor file '" + path_.string() + "'");
  return out;
}

#ifndef FACTUM_HAVE_POSTGRES
struct PostgresAnchorSink::State {};

PostgresAnchorSink::PostgresAnchorSink(const std::string& uri, std::string) {
  throw StorageError(StorageError::Kind::other,
                     "factum: cannot anchor to '" + shown_location(uri) +
                         "': this build of factum has no PostgreSQL backend (install libpq-dev "
                         "and configure again)");
}
Anchor PostgresAnchorSink::append(const std::function<Anchor(const std::optional<Anchor>&)>&) {
  return {};
}
std::optional<Anchor> PostgresAnchorSink::last() { return std::nullopt; }
std::vector<Anchor> PostgresAnchorSink::anchors() { return {}; }
#endif

struct CallbackAnchorSink::State {
  std::mutex mutex;
  std::function<void(const Anchor&)> deliver;
  std::vector<Anchor> anchors;
};

CallbackAnchorSink::CallbackAnchorSink(std::function<void(const Anchor&)> deliver,
                                       std::optional<Anchor> last)
    : state_(std::make_shared<State>()) {
  state_->deliver = std::move(deliver);
  if (last) state_->anchors.push_back(*last);
}

Anchor CallbackAnchorSink::append(
    const std::function<Anchor(const std::optional<Anchor>& last)>& make) {
  std::lock_guard lock(state_->mutex);
  std::optional<Anchor> last;
  if (!state_->anchors.empty()) last = state_->anchors.back();
  Anchor next = make(last);
  state_->deliver(next);
  state_->anchors.push_back(next);
  return next;
}

std::optional<Anchor> CallbackAnchorSink::last() {
  std::lock_guard lock(state_->mutex);
  if (state_->anchors.empty()) return std::nullopt;
  return state_->anchors.back();
}

std::vector<Anchor> CallbackAnchorSink::anchors() {
  std::lock_guard lock(state_->mutex);
  return state_->anchors;
}

}  // namespace factum
