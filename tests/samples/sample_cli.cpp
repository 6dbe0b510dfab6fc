// tests/samples/sample_cli.cpp — shared helpers of the sample programs' end-to-end tests (see
// sample_cli.hpp).
#include "sample_cli.hpp"

#include <doctest/doctest.h>

#include <algorithm>

namespace factum::test {
namespace {

// The arguments as a shell would show them: each one quoted.
std::string shown(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) out += (out.empty() ? "'" : " '") + a + "'";
  return out;
}

}  // namespace

StoreFiles store_files(const std::filesystem::path& db) {
  const std::filesystem::path wal = db.string() + "-wal";
  StoreFiles files{slurp(db), std::nullopt};
  if (std::filesystem::exists(wal)) files.wal = slurp(wal);
  return files;
}

SampleFolder::SampleFolder(std::string program, std::filesystem::path binary)
    : program_(std::move(program)), binary_(std::move(binary)) {}

ProgramRun SampleFolder::run(const std::vector<std::string>& args) const {
  return run_other(binary_, args);
}

ProgramRun SampleFolder::run_other(const std::filesystem::path& binary,
                                   const std::vector<std::string>& args) const {
  std::vector<std::string> argv{binary.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, dir_.path());
}

ProgramRun SampleFolder::run_into(const std::filesystem::path& out_file,
                                  const std::vector<std::string>& args) const {
  std::vector<std::string> argv{binary_.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, dir_.path(), out_file);
}

std::string SampleFolder::ok(const std::vector<std::string>& args) const {
  const ProgramRun r = run(args);
  INFO(program_, " ", shown(args), "\n", r.err);
  REQUIRE(r.code == 0);
  return r.out;
}

bool has_control_byte(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n') || u == 0x7f;
  });
}

void check_one_line_error(const ProgramRun& r, const std::string& program, int code,
                          const std::string& part) {
  INFO("stderr: ", r.err);
  CHECK(r.code == code);
  CHECK(r.out.empty());
  CHECK(r.err.rfind(program + ": ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK((!r.err.empty() && r.err.back() == '\n'));
  CHECK_FALSE(has_control_byte(r.err));
  CHECK(contains(r.err, part));
}

void check_refusals(const SampleFolder& folder, const std::filesystem::path& db,
                    const std::vector<Refusal>& refusals) {
  REQUIRE(std::filesystem::exists(db));
  const StoreFiles before = store_files(db);
  for (const Refusal& refusal : refusals) {
    INFO(folder.program(), " ", shown(refusal.args));
    check_one_line_error(folder.run(refusal.args), folder.program(), refusal.code, refusal.message);
    CHECK(store_files(db) == before);
  }
}

}  // namespace factum::test
