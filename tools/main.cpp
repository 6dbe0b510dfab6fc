// tools/main.cpp — the `factum` program: builds the command line from the command groups,
// parses it with CLI11, runs the selected command and turns every failure into a one-line
// message on stderr and a documented exit code (docs/cli.md).
#include <charconv>
#include <cmath>
#include <iostream>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.hpp"
#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_id.hpp"
#include "output.hpp"

namespace factum::cli {
namespace {

constexpr const char* kFooter =
    "Exit status: 0 ok; 1 error (missing file, not a factum store, unknown stream or event, bad "
    "input, output not written); 2 usage (also a numeric option out of its range); 3 the log is "
    "damaged (verify found a break, a command met an event whose hash does not match, or the "
    "file is corrupt); 130 interrupted.\nEvery command but import and checkpoint reset opens the "
    "store "
    "read-only. See docs/cli.md.";

// "factum: <message>" on one line (factum's own messages already start with "factum: ").
void print_error(std::string message) {
  if (message.rfind("factum: ", 0) == 0) message.erase(0, 8);
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::cerr << "factum: " << message << std::endl;
}

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

int run(const Action& action) {
  try {
    return run_and_flush(action);
  } catch (const CliError& e) {
    print_error(e.what());
    return e.code();
  } catch (const CorruptEventError& e) {
    print_error(std::string(e.what()) + " (run factum verify)");
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

// `text` for an error message: cut at 24 characters, so a 400-digit argument stays one line.
std::string shown_argument(const std::string& text) {
  return "'" + (text.size() > 24 ? text.substr(0, 24) + "..." : text) + "'";
}

}  // namespace

CLI::Validator whole_number(std::uint64_t min, std::uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
          return shown_argument(text) + " is not a whole number from " + std::to_string(min) +
                 " to " + std::to_string(max);
        }
        return {};
      },
      "");
}

CLI::Validator seconds(double max, const std::string& max_text) {
  return CLI::Validator(
      [max, max_text](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value) || value < 0 ||
            value > max) {
          return shown_argument(text) + " is not a number of seconds from 0 to " + max_text;
        }
        return {};
      },
      "");
}

CLI::Option* add_db_argument(CLI::App& command, std::string& path) {
  return command.add_option("DB", path, "The store file")->required();
}

CLI::Option* add_json_flag(CLI::App& command, bool& json) {
  return command.add_flag("--json", json, "Print JSON instead of a table (see docs/cli.md)");
}

const CLI::Validator& event_id_validator() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        try {
          EventId::parse(text);
          return {};
        } catch (const Error&) {
          return "'" + text + "' is not an event id (a UUID such as " +
                 "0190f5a2-7c3e-7a11-8b22-3c4d5e6f7081)";
        }
      },
      "UUID");
  return v;
}

const CLI::Validator& hash_validator() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        try {
          hash_from_hex(text);
          return {};
        } catch (const Error&) {
          return "'" + text + "' is not a SHA-256 hash (64 hexadecimal digits)";
        }
      },
      "HASH");
  return v;
}

}  // namespace factum::cli

int main(int argc, char** argv) {
  using namespace factum::cli;
  CLI::App app("factum: inspect, verify, export and import factum event stores", "factum");
  app.set_version_flag("--version", "factum " FACTUM_VERSION);
  app.require_subcommand(1);
  app.footer(kFooter);
  Action action;
  add_info_commands(app, action);
  add_read_commands(app, action);
  add_verify_command(app, action);
  add_audit_command(app, action);
  add_export_command(app, action);
  add_import_command(app, action);
  add_projection_commands(app, action);
  if (argc < 2) {  // like git: no command, the usage
    std::cerr << app.help();
    return kUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e) == 0 ? kOk : kUsage;
    try {
      flush_output(stdout);  // --help into a full disk
    } catch (const CliError& error) {
      std::cerr << "factum: " << error.what() << std::endl;
      return code == kOk ? kError : code;
    }
    return code;
  }
  return action ? run(action) : kUsage;
}
