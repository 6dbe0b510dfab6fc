#include "support.hpp"

#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace bench {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Command line

void cli_defaults(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

const CLI::Validator& positive() {
  static const CLI::Validator v(
      [](std::string& input) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(input.c_str(), &end);
        if (input.empty() || end != input.c_str() + input.size() || errno == ERANGE ||
            !(value > 0)) {
          return "Value " + input + " is not a positive number";
        }
        return {};
      },
      "POSITIVE");
  return v;
}

CLI::Option* add_durability(CLI::App& app, factum::Durability& durability,
                            const std::string& description) {
  return app
      .add_option_function<std::string>(
          "--durability",
          [&durability](const std::string& v) {
            durability = v == "full" ? factum::Durability::full : factum::Durability::normal;
          },
          description)
      ->check(CLI::IsMember({"full", "normal"}));
}

void parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
}

// ---------------------------------------------------------------------------------------------
// Interruption

namespace {

void on_signal(int) { g_interrupted.store(true); }

}  // namespace

void catch_interrupts() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int run_reporting(std::string_view program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Interrupted&) {
    std::cerr << program << ": interrupted\n";
    return 130;
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 1;
  }
}

// ---------------------------------------------------------------------------------------------
// TempDir

TempDir::TempDir(const fs::path& parent, std::string_view prefix) {
  std::string name = (parent / (std::string(prefix) + "-XXXXXX")).string();
  if (mkdtemp(name.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary directory in " + parent.string() + ": " +
                             std::strerror(errno));
  }
  path_ = name;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

fs::path TempDir::fresh(std::string_view what) {
  return path_ / (std::string(what) + "-" + std::to_string(++count_) + ".db");
}

void TempDir::remove_db(const fs::path& file) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(file.string() + suffix, ec);
}

// ---------------------------------------------------------------------------------------------
// Time

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// ---------------------------------------------------------------------------------------------
// Numbers

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

}  // namespace bench
