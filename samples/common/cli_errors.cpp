// samples/common/cli_errors.cpp — one-line errors and exit codes (see cli_errors.hpp).
#include "cli_errors.hpp"

#include <CLI/CLI.hpp>
#include <factum/factum.hpp>

namespace factum::samples {

std::string error_line(std::string_view program, std::string_view message) {
  constexpr std::string_view kLibraryPrefix = "factum: ";
  if (message.starts_with(kLibraryPrefix)) message.remove_prefix(kLibraryPrefix.size());
  return std::string(program) + ": " + printable(message);
}

int report_error(std::ostream& err, std::string_view program, std::string_view message) {
  err << error_line(program, message) << std::endl;
  return kExitError;
}

int report_parse_error(CLI::App& app, const CLI::ParseError& error, std::ostream& out,
                       std::ostream& err) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return app.exit(error, out, err);  // --help, of the program or of a subcommand
  }
  const std::string program = app.get_name();
  const std::vector<std::string> extra = app.remaining();
  const std::string what = app.get_subcommands().empty() && !extra.empty()
                               ? "unknown command '" + extra.front() + "'"
                               : std::string(error.what());
  err << error_line(program, what + " (see " + program + " --help)") << std::endl;
  return kExitUsage;
}

}  // namespace factum::samples
