// tools/run_command.hpp — where every failure of a command ends: the one-line message on stderr
// ("factum: <message>") and the exit code it maps to (docs/cli.md, "Exit status").
//
// Thread-safety: called from main's thread only (they write to stderr and stdout).
#pragma once

#include <string>

#include "cli.hpp"

namespace factum::cli {

// Prints "factum: <message>" on one line of stderr: a leading "factum: " (factum's own
// messages carry one) is not repeated, line breaks become spaces, and the rest goes through
// factum::printable (one_line), so a file name, an argument or a stored stream id in a message
// cannot drive the terminal.
void print_error(std::string message);

// What CLI11 prints for a usage error (App::failure_message): its message through one_line,
// then "Run with --help for more information.". CLI11 echoes arguments as they were typed
// ("The following arguments were not expected: ..."): this keeps them on one line, escaped.
std::string usage_error_message(const CLI::App* app, const CLI::Error& error);

// Runs `action`, then flushes stdout, and returns the exit code. An exception from either does
// not escape: it is reported through print_error and mapped to its code: CliError to its own code,
// CorruptEventError to kDamaged (with a hint to run factum verify), a StorageError to kDamaged
// when the file is corrupt and kError otherwise, anything else (a factum::Error, a JSON error,
// std::bad_alloc, any std::exception) to kError. Output that did not reach stdout (a full disk)
// turns kOk into kError.
int run_command(const Action& action);

// From now on SIGINT and SIGTERM only set a flag (interrupted_by_signal()): a long command
// (export, import) checks it between events, cleans up what it started and ends with
// kInterrupted.
void install_interrupt_handlers();
// Whether SIGINT or SIGTERM arrived since install_interrupt_handlers(). Async-signal-safe flag.
bool interrupted_by_signal() noexcept;

}  // namespace factum::cli
