#include "sqlite/notifications.hpp"

#include <cstdint>
#include <optional>
#include <system_error>
#include <utility>

#include "sqlite/connection.hpp"

namespace factum::detail {
namespace {

namespace fs = std::filesystem;

bool file_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// PRAGMA data_version changes on a connection when any other connection commits to the file.
// A store whose file is not made yet is watched from when it appears (that counts as a change).
class DataVersionWatcher final : public LogWatcher {
 public:
  DataVersionWatcher(fs::path path, const StoreOptions& options, bool immutable)
      : path_(std::move(path)),
        busy_timeout_ms_(static_cast<int>(options.busy_timeout.count())),
        immutable_(immutable) {
    open_if_there();
  }

  bool changed() override {
    const bool appeared = !db_ && open_if_there();
    if (!db_) {
      called_ = true;
      return false;
    }
    StatementScope scope(*pragma_);
    if (!pragma_->step("reading PRAGMA data_version")) return false;
    const std::int64_t now = pragma_->column_int(0);
    const bool changed = (last_ && *last_ != now) || (appeared && called_);
    last_ = now;
    called_ = true;
    return changed;
  }

 private:
  bool open_if_there() {
    if (!file_exists(path_)) return false;
    db_ = std::make_unique<Database>(path_, SQLITE_OPEN_READONLY, busy_timeout_ms_, immutable_);
    pragma_ = std::make_unique<Statement>(*db_, "PRAGMA data_version");
    return true;
  }

  fs::path path_;
  int busy_timeout_ms_;
  bool immutable_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<Statement> pragma_;
  std::optional<std::int64_t> last_;
  bool called_ = false;
};

}  // namespace

std::unique_ptr<LogWatcher> watch_data_version(std::filesystem::path path,
                                               const StoreOptions& options, bool immutable) {
  return std::make_unique<DataVersionWatcher>(std::move(path), options, immutable);
}

}  // namespace factum::detail
