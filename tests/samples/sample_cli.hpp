// tests/samples/sample_cli.hpp — what the end-to-end tests of the three sample programs
// (factum-bank, factum-orders, factum-feed) share: running a program in a folder of its own,
// the bytes of a store's files, and the checks of a one-line error and of refused commands
// that must leave the store byte for byte as it was.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace factum::test {

// The bytes of a store file and of its -wal file (none after a program closed the store
// cleanly: the last connection checkpoints the WAL and deletes it). "Unchanged" means both.
struct StoreFiles {
  std::string db;
  std::optional<std::string> wal;
  friend bool operator==(const StoreFiles&, const StoreFiles&) = default;
};
StoreFiles store_files(const std::filesystem::path& db);

// A sample program and a temporary folder to run it in.
class SampleFolder {
 public:
  // `program` is the name it prints ("factum-bank"), `binary` its path.
  SampleFolder(std::string program, std::filesystem::path binary);

  // Runs the program with `args` (no shell: any bytes pass as they are) in the folder.
  ProgramRun run(const std::vector<std::string>& args) const;
  // Runs the program with its stdout the file `out_file` (e.g. /dev/full); `out` is empty.
  ProgramRun run_into(const std::filesystem::path& out_file,
                      const std::vector<std::string>& args) const;
  // Runs a command that must succeed (exit 0); returns its stdout.
  std::string ok(const std::vector<std::string>& args) const;
  // Runs another program in the same folder.
  ProgramRun run_other(const std::filesystem::path& binary,
                       const std::vector<std::string>& args) const;

  std::filesystem::path file(const std::string& name) const { return dir_.file(name); }
  const std::string& program() const noexcept { return program_; }

 private:
  std::string program_;
  std::filesystem::path binary_;
  TempDir dir_;
};

// True when `text` holds a control byte (below 0x20, or 0x7f) other than a newline.
bool has_control_byte(const std::string& text);

// Checks that `r` printed nothing on stdout and one line on stderr, "<program>: ..." holding
// `part` and no control byte, and exited with `code`.
void check_one_line_error(const ProgramRun& r, const std::string& program, int code,
                          const std::string& part);

// A command a program must refuse.
struct Refusal {
  std::vector<std::string> args;
  int code = 1;         // 1: refused; 2: a usage error
  std::string message;  // a part of its one-line error
};

// Runs each refusal in `folder`, on the store `db` that a successful command made, and checks
// its one-line error and that the store's files are byte for byte as they were.
void check_refusals(const SampleFolder& folder, const std::filesystem::path& db,
                    const std::vector<Refusal>& refusals);

}  // namespace factum::test
