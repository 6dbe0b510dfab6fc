// tools/import_target.cpp — building an imported store under a temporary name and moving it
// into place (see import_target.hpp).
#include "import_target.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <map>
#include <system_error>

#include "cli.hpp"

namespace factum::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTempInfix = ".import-";

bool exists_at_all(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

// The first companion file of `path` that exists, or "".
std::string companion_of(const std::string& path) {
  for (const char* suffix : kCompanionSuffixes) {
    if (exists_at_all(path + suffix)) return path + suffix;
  }
  return {};
}

void refuse_companion(const std::string& target, const std::string& companion) {
  throw CliError("'" + companion + "' exists, left by another store named '" + target +
                 "'; SQLite would join it to the new store, so import builds nothing beside it: "
                 "move or remove it (it may hold that store's last commits), or choose another "
                 "name");
}

// Removes `path` and its companions; false when one of them is still there afterwards.
bool remove_set(const std::string& path) {
  bool gone = true;
  std::error_code ec;
  fs::remove(path, ec);
  gone = gone && !exists_at_all(path);
  for (const char* suffix : kCompanionSuffixes) {
    fs::remove(path + suffix, ec);
    gone = gone && !exists_at_all(path + suffix);
  }
  return gone;
}

// The process id in a leftover's name ("<base>.import-<pid>" with an optional companion
// suffix), or 0 when `name` is not one.
pid_t leftover_pid(const std::string& name, const std::string& base) {
  const std::string prefix = base + kTempInfix;
  if (name.rfind(prefix, 0) != 0) return 0;
  std::string rest = name.substr(prefix.size());
  for (const char* suffix : kCompanionSuffixes) {
    const std::string s(suffix);
    if (rest.size() > s.size() && rest.compare(rest.size() - s.size(), s.size(), s) == 0) {
      rest.erase(rest.size() - s.size());
      break;
    }
  }
  pid_t pid = 0;
  const char* end = rest.data() + rest.size();
  const auto [ptr, ec] = std::from_chars(rest.data(), end, pid);
  if (rest.empty() || rest[0] == '0' || ec != std::errc() || ptr != end || pid <= 0) return 0;
  return pid;
}

// True when no process `pid` exists (kill with signal 0 only asks; EPERM: it exists).
bool process_is_gone(pid_t pid) { return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

std::vector<std::string> remove_dead_imports(const std::string& target) {
  const fs::path path(target);
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string base = path.filename().string();
  std::map<pid_t, std::string> leftovers;  // by process: the set's main file
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const pid_t pid = leftover_pid(entry.path().filename().string(), base);
    if (pid != 0 && pid != getpid()) {
      leftovers[pid] = (dir / (base + kTempInfix + std::to_string(pid))).string();
    }
  }
  std::vector<std::string> removed;
  for (const auto& [pid, file] : leftovers) {
    if (process_is_gone(pid) && remove_set(file)) removed.push_back(file);
  }
  return removed;
}

ImportTarget::ImportTarget(std::string target)
    : target_(std::move(target)), temp_(target_ + kTempInfix + std::to_string(getpid())) {
  if (exists_at_all(target_)) {
    throw CliError("'" + target_ + "' exists; import creates a new store (choose another name)");
  }
  if (const std::string companion = companion_of(target_); !companion.empty()) {
    refuse_companion(target_, companion);
  }
  if (!remove_set(temp_)) {
    throw CliError("cannot remove '" + temp_ +
                   "' (or its -wal, -shm, -journal), left by an "
                   "earlier process with this process's id");
  }
}

ImportTarget::~ImportTarget() {
  if (!moved_) remove_set(temp_);
}

void ImportTarget::move_into_place() {
  std::error_code ec;
  if (fs::file_size(temp_ + "-wal", ec) > 0 && !ec) {
    throw CliError("the new store '" + temp_ +
                   "' was not closed cleanly (its -wal holds "
                   "commits); nothing was moved to '" +
                   target_ + "'");
  }
  if (const std::string companion = companion_of(target_); !companion.empty()) {
    refuse_companion(target_, companion);
  }
  fs::create_hard_link(temp_, target_, ec);
  if (ec == std::errc::file_exists) throw CliError("'" + target_ + "' was created meanwhile");
  if (ec) {
    if (exists_at_all(target_)) throw CliError("'" + target_ + "' was created meanwhile");
    fs::rename(temp_, target_);  // a file system without hard links
  }
  moved_ = true;
  remove_set(temp_);
}

void ImportTarget::remove_moved() noexcept {
  std::error_code ec;
  if (moved_) fs::remove(target_, ec);
}

}  // namespace factum::cli
