// tools/run_command.cpp — error reporting and exit-code mapping of the commands (see
// run_command.hpp).
#include "run_command.hpp"

#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <exception>
#include <iostream>
#include <new>
#include <nlohmann/json.hpp>

#include "factum/eventstore/errors.hpp"
#include "output.hpp"

namespace factum::cli {
namespace {

// Runs the command, then checks that all it printed reached stdout: an output error (a full
// disk, /dev/full) turns exit 0 into 1, and never goes unsaid.
int run_and_flush(const Action& action) {
  const int code = action();
  try {
    flush_output(stdout);
  } catch (const CliError& e) {
    print_error(e.what());
    return code == kOk ? kError : code;
  }
  return code;
}

}  // namespace

void print_error(std::string message) {
  if (message.rfind("factum: ", 0) == 0) message.erase(0, 8);
  std::cerr << "factum: " << one_line(std::move(message)) << std::endl;
}

std::string usage_error_message(const CLI::App* app, const CLI::Error& error) {
  std::string out = one_line(error.what()) + "\n";
  if (const CLI::Option* help = app->get_help_ptr()) {
    out += "Run with " + help->get_name() + " for more information.\n";
  }
  return out;
}

int run_command(const Action& action) {
  try {
    return run_and_flush(action);
  } catch (const CliError& e) {
    print_error(e.what());
    return e.code();
  } catch (const CorruptEventError& e) {
    print_error(std::string(e.what()) + " (run factum verify)");
    return kDamaged;
  } catch (const CorruptStoreError& e) {
    // A hole in the log (the checked walk of every read): a damaged log, as verify says.
    print_error(e.what());
    return kDamaged;
  } catch (const StorageError& e) {
    // A damaged file (SQLite: corrupt, malformed, a factum table missing) is a damaged log.
    print_error(e.what());
    return e.kind() == StorageError::Kind::corrupt ? kDamaged : kError;
  } catch (const Error& e) {
    print_error(e.what());
    return kError;
  } catch (const nlohmann::json::exception& e) {
    print_error(e.what());
    return kError;
  } catch (const std::bad_alloc&) {
    print_error("out of memory");
    return kError;
  } catch (const std::exception& e) {
    print_error(e.what());
    return kError;
  }
}

namespace {
std::atomic<bool> g_interrupted{false};
void on_interrupt(int) { g_interrupted.store(true); }
}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted_by_signal() noexcept { return g_interrupted.load(); }

}  // namespace factum::cli
