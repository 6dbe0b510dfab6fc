// tools/import_target.hpp — where `factum import` builds a new store file and how it puts it in
// place (docs/cli.md, "import").
//
// The store is built under a temporary name beside the target, DB.import-<pid>, and moved to DB
// only once it is complete. Two things could make the file at DB hold another log than the one
// imported, and both are refused:
//
// - SQLite joins a file to whatever companions carry its name: a DB-wal left by another store
//   (a store file removed after a crash, say) is replayed into the new file when it is next
//   opened, and a hot DB-journal is rolled back into it. So the import refuses to start, and
//   to move its file into place, while DB-wal, DB-shm or DB-journal exists; and its own
//   temporary name must have none (they are removed first: that name is its process's own).
// - An import killed by SIGKILL leaves DB.import-<pid> (and its -wal and -shm) behind. Each
//   import first removes the leftovers of imports into the same DB whose process is gone; a
//   leftover whose process is still running (another import at work) is left alone.
//
// Thread-safety: used by one thread.
#pragma once

#include <string>
#include <vector>

namespace factum::cli {

// The companion files SQLite keeps beside a store file, by suffix.
inline constexpr const char* kCompanionSuffixes[] = {"-wal", "-shm", "-journal"};

// Removes the leftovers of earlier imports into `target` whose process is gone:
// `<target>.import-<pid>` and its companions, where no process <pid> runs. Returns the main file
// of each set removed.
std::vector<std::string> remove_dead_imports(const std::string& target);

class ImportTarget {
 public:
  // Refuses (CliError) when `target` exists (even as a dangling symbolic link) or one of its
  // companion files does; then reserves the temporary name, removing any files of that name
  // (left by an earlier process with this process's id). Throws CliError when they cannot be
  // removed.
  explicit ImportTarget(std::string target);
  // Removes the temporary file and its companions, unless moved into place.
  ~ImportTarget();
  ImportTarget(const ImportTarget&) = delete;
  ImportTarget& operator=(const ImportTarget&) = delete;

  // Where to build the store.
  const std::string& temp_path() const noexcept { return temp_; }
  // Moves the finished, closed store to the target. Throws CliError, leaving the target as it
  // was, when the temporary file still has a -wal (the store was not closed cleanly), or when
  // the target or one of its companions appeared meanwhile (a file at the target is never
  // replaced).
  void move_into_place();
  // Removes the file moved into place (after it failed its final check); its companions are
  // left alone.
  void remove_moved() noexcept;

 private:
  std::string target_;
  std::string temp_;
  bool moved_ = false;
};

}  // namespace factum::cli
