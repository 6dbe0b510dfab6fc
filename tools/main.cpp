// tools/main.cpp — the `factum` program's entry: builds the command line from the command
// groups, parses it with CLI11 and runs the selected command through run_command, which turns
// every failure into a one-line message on stderr and a documented exit code (docs/cli.md).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli.hpp"
#include "output.hpp"
#include "run_command.hpp"

namespace {

constexpr const char* kFooter =
    "Exit status: 0 ok; 1 error (missing file, not a factum store, unknown stream or event, bad "
    "input, output not written); 2 usage (also a numeric option out of its range); 3 the log is "
    "damaged (verify found a break, a command met an event whose hash does not match, or the "
    "file is corrupt); 130 interrupted.\nEvery command but import, checkpoint reset, relay and "
    "ingest opens the store read-only. DB is a store file or a PostgreSQL URI (postgresql://...). "
    "See docs/cli.md.";

}  // namespace

int main(int argc, char** argv) {
  using namespace factum::cli;
  CLI::App app("factum: inspect, verify, export and import factum event stores", "factum");
  app.set_version_flag("--version", "factum " FACTUM_VERSION);
  app.require_subcommand(1);
  app.footer(kFooter);
  app.failure_message(usage_error_message);
  Action action;
  add_info_commands(app, action);
  add_read_commands(app, action);
  add_verify_command(app, action);
  add_anchor_command(app, action);
  add_personal_commands(app, action);
  add_audit_command(app, action);
  add_export_command(app, action);
  add_import_command(app, action);
  add_projection_commands(app, action);
#ifdef FACTUM_HAVE_KAFKA
  add_kafka_commands(app, action);
#endif
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
      print_error(error.what());
      return code == kOk ? kError : code;
    }
    return code;
  }
  return action ? run_command(action) : kUsage;
}
