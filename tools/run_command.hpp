// tools/run_command.hpp — where every failure of a command ends: the one-line message on stderr
// ("factum: <message>") and the exit code it maps to (docs/cli.md, "Exit status").
//
// Thread-safety: called from main's thread only (they write to stderr and stdout).
#pragma once

#include <string>

#include "cli.hpp"

namespace factum::cli {

// Prints "factum: <message>" on one line of stderr: a leading "factum: " (factum's own
// messages carry one) is not repeated, and line breaks become spaces.
void print_error(std::string message);

// Runs `action`, then flushes stdout, and returns the exit code. An exception from either does
// not escape: it is reported through print_error and mapped to its code: CliError to its own code,
// CorruptEventError to kDamaged (with a hint to run factum verify), a StorageError to kDamaged
// when the file is corrupt and kError otherwise, anything else (a factum::Error, a JSON error,
// std::bad_alloc, any std::exception) to kError. Output that did not reach stdout (a full disk)
// turns kOk into kError.
int run_command(const Action& action);

}  // namespace factum::cli
