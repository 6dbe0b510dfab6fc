// The factum command line tells the truth (issue 13): commands that show events check each
// event's hash, output errors are reported, numeric options are range-checked, damaged stores
// are called damaged, and checkpoint reset never skips events silently.
#include <atomic>
#include <regex>
#include <thread>

#include "cli_fixture.hpp"

namespace factum::test {
namespace {

// The sample store with a subscription checkpoint "mailer" at position 5.
struct CheckpointedStore : SampleStore {
  CheckpointedStore() {
    EventStore store = EventStore::open(path, TempStore::fast_options());
    CheckpointStore(store).save("mailer", 5);
  }
  Position checkpoint(const std::string& name) const {
    StoreOptions options;
    options.read_only = true;
    EventStore store = EventStore::open(path, options);
    return CheckpointStore(store).load(name);
  }
};

// --- commands that show events check them --------------------------------------------------

TEST_CASE("read and tail stop at an event whose hash does not match, exit 3 naming it") {
  SampleStore s;
  s.tamper("UPDATE events SET actor = 'mallory' WHERE position = 2;");
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"read", s.file(), "account-1"},
           {"read", s.file(), "account-1", "--json"},
           {"read", s.file(), "account-1", "--backward"},
           {"tail", s.file()},
           {"tail", s.file(), "--json"},
           {"tail", s.file(), "--follow", "--timeout", "5", "--json"}}) {
    CAPTURE(args);
    const CliResult r = run_cli(args);
    CHECK(r.code == 3);
    CHECK(one_line_error(r));
    CHECK(contains(r.err, "the event at position 2 does not match its hash"));
    CHECK_FALSE(contains(r.out, sid(2)));  // never printed as if it were intact
  }
  // The events before it are printed; the error names the first bad one.
  const CliResult r = run_cli({"read", s.file(), "account-1", "--json"});
  REQUIRE(lines_of(r.out).size() == 1);
  CHECK(Json::parse(lines_of(r.out)[0])["id"] == sid(1));
}

TEST_CASE("tail --follow stops at a new event whose hash does not match, exit 3") {
  SampleStore s;
  CliProcess tail(
      {"tail", s.file(), "-n", "1", "--follow", "--timeout", "15", "--interval", "20", "--json"});
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (tail.out_so_far().empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // A forged event 9, committed behind factum's back: event 8's row with a new id and version.
  s.tamper(
      "INSERT INTO events (position, stream_key, stream_version, event_id, type, schema_version, "
      "payload, correlation_id, causation_id, compensates, actor, extra, recorded_at, hash) "
      "SELECT 9, stream_key, 4, X'0190f5a27c3e7a118b22000000000999', type, schema_version, "
      "payload, correlation_id, causation_id, NULL, actor, extra, recorded_at, hash "
      "FROM events WHERE position = 8;");
  const CliResult r = tail.wait();
  CHECK(r.code == 3);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "position 9"));
  REQUIRE(lines_of(r.out).size() == 1);
  CHECK(Json::parse(lines_of(r.out)[0])["position"] == 8);
}

// --- output errors ---------------------------------------------------------------------------

CliResult run_into_dev_full(const std::vector<std::string>& args) {
  CliOptions options;
  options.output = "/dev/full";
  return run_cli(args, options);
}

TEST_CASE("commands writing into a full disk exit 1 and say why") {
  CheckpointedStore s;
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"read", s.file(), "account-1"},
                                             {"read", s.file(), "account-1", "--json"},
                                             {"tail", s.file()},
                                             {"tail", s.file(), "--json"},
                                             {"info", s.file()},
                                             {"info", s.file(), "--json"},
                                             {"verify", s.file()},
                                             {"verify", s.file(), "--json"},
                                             {"stats", s.file()},
                                             {"streams", s.file()},
                                             {"projections", s.file()},
                                             {"audit", s.file(), "--event", sid(1)},
                                             {"tail", s.file(), "-n", "0", "--follow"},
                                             {"--help"}}) {
    CAPTURE(args);
    const CliResult r = run_into_dev_full(args);
    CHECK(r.code == 1);
    CHECK(one_line_error(r));
    CHECK(contains(r.err, "cannot write to stdout: no space left on device"));
  }
}

TEST_CASE("tail --follow --json into a full disk stops at the first new event with exit 1") {
  SampleStore s;
  CliOptions options;
  options.output = "/dev/full";
  CliProcess tail(
      {"tail", s.file(), "-n", "0", "--follow", "--timeout", "15", "--interval", "20", "--json"},
      options);
  // Appends until tail has exited (it may start following after the first appends).
  std::atomic<bool> done{false};
  std::thread writer([&] {
    EventStore store = EventStore::open(s.path, TempStore::fast_options());
    while (!done.load()) {
      store.append("account-2", ExpectedVersion::any(), make_events(1, "late"));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const CliResult r = tail.wait(std::chrono::seconds(14));
  done = true;
  writer.join();
  CHECK(r.code == 1);
  CHECK(contains(r.err, "no space left on device"));
}

// --- numeric options -------------------------------------------------------------------------

TEST_CASE("numeric options out of range are usage errors with a short message") {
  CheckpointedStore s;
  const std::string f = s.file();
  const std::regex long_number("[0-9]{25}");
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"read", f, "account-1", "--from", "-1"},
           {"read", f, "account-1", "--from", "0"},
           {"read", f, "account-1", "--limit", "-1"},
           {"read", f, "account-1", "--limit", "99999999999999999999999"},
           {"read", f, "account-1", "--limit", "1.5"},
           {"read", f, "account-1", "--from", "9223372036854775808"},
           {"tail", f, "-n", "-5"},
           {"tail", f, "--lines", "18446744073709551616"},
           {"tail", f, "--follow", "--limit", "-1"},
           {"tail", f, "--follow", "--timeout", "1e10"},
           {"tail", f, "--follow", "--timeout", "NaN"},
           {"tail", f, "--follow", "--timeout", "inf"},
           {"tail", f, "--follow", "--timeout", "-1"},
           {"tail", f, "--follow", "--timeout", "1e400"},
           {"tail", f, "--follow", "--interval", "0"},
           {"tail", f, "--follow", "--interval", "1e400"},
           {"tail", f, "--follow", "--interval", "-20"},
           {"export", f, "--from", "-1"},
           {"export", f, "--to", "99999999999999999999999"},
           {"audit", f, "--position", "-1"},
           {"audit", f, "--position", "1", "--limit", "-1"},
           {"checkpoint", "reset", f, "mailer", "--to", "-1"}}) {
    CAPTURE(args);
    const auto started = std::chrono::steady_clock::now();
    const CliResult r = run_cli(args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(contains(r.err, " is not a "));
    CHECK(r.err.size() < 300);
    CHECK_FALSE(std::regex_search(r.err, long_number));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  }
  CHECK(s.checkpoint("mailer") == 5);
}

TEST_CASE("durations are decimal numbers in fixed notation: no exponent, no hexadecimal") {
  CheckpointedStore s;
  for (const char* bad : {"1e3", "1E0", "0x10", "0x1p3", "+2", " 2"}) {
    CAPTURE(bad);
    const CliResult r = run_cli({"tail", s.file(), "--follow", "--timeout", bad});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "is not a number of seconds from 0 to 31536000"));
  }
  const CliResult r =
      run_cli({"tail", s.file(), "-n", "0", "--follow", "--timeout", "0.05", "--interval", "10"});
  CHECK(r.code == 0);
}

TEST_CASE("numeric options in range are taken as given") {
  CheckpointedStore s;
  const CliResult limited = run_cli({"read", s.file(), "account-1", "--limit", "2", "--json"});
  CHECK(limited.code == 0);
  CHECK(lines_of(limited.out).size() == 2);
  const CliResult huge =
      run_cli({"read", s.file(), "account-1", "--limit", "9223372036854775807", "--json"});
  CHECK(huge.code == 0);
  CHECK(lines_of(huge.out).size() == 3);
  const CliResult none = run_cli({"tail", s.file(), "-n", "0", "--json"});
  CHECK(none.code == 0);
  CHECK(none.out.empty());
  const auto started = std::chrono::steady_clock::now();
  const CliResult timed =
      run_cli({"tail", s.file(), "-n", "0", "--follow", "--timeout", "0.5", "--interval", "20"});
  CHECK(timed.code == 0);
  CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(500));
}

TEST_CASE("whole-number options read a leading zero as decimal, never as octal") {
  TempDir dir;
  const std::filesystem::path path = dir.file("store.db");
  EventStore::open(path, TempStore::fast_options())
      .append("bulk-1", ExpectedVersion::any(), make_events(12));
  CHECK(
      lines_of(run_cli({"read", path.string(), "bulk-1", "--limit", "010", "--json"}).out).size() ==
      10);
  CHECK(lines_of(run_cli({"tail", path.string(), "-n", "010", "--json"}).out).size() == 10);
  const CliResult r = run_cli({"export", path.string(), "--from", "010", "-q"});
  REQUIRE(r.code == 0);
  CHECK(Json::parse(lines_of(r.out).at(0))["position"] == 10);
}

// --- damaged stores ------------------------------------------------------------------------

void truncate_file(const std::filesystem::path& file, std::uintmax_t size) {
  std::filesystem::resize_file(file, size);
}

TEST_CASE("a truncated store is damaged, exit 3, never 'not a SQLite database'") {
  for (std::uintmax_t size : {50u, 1000u, 8192u}) {
    CAPTURE(size);
    SampleStore s;
    truncate_file(s.path, size);
    for (const char* command : {"info", "verify", "tail"}) {
      CAPTURE(command);
      const CliResult r = run_cli({command, s.file()});
      CHECK(r.code == 3);
      CHECK(one_line_error(r));
      CHECK(contains(r.err, "damaged"));
      CHECK_FALSE(contains(r.err, "not a SQLite database"));
    }
  }
}

TEST_CASE("a store with overwritten pages is damaged, exit 3") {
  SampleStore s;
  {
    std::fstream f(s.path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string garbage(3 * 4096, '\x5a');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  for (const char* command : {"verify", "tail", "stats"}) {
    CAPTURE(command);
    const CliResult r = run_cli({command, s.file()});
    CHECK(r.code == 3);
    CHECK(one_line_error(r));
    CHECK(contains(r.err, "damaged"));
  }
}

TEST_CASE("a store whose streams table was dropped is damaged, exit 3, without raw SQL") {
  SampleStore s;
  s.tamper("DROP TABLE streams;");
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"verify", s.file()}, {"info", s.file()}, {"read", s.file(), "account-1"}}) {
    CAPTURE(args);
    const CliResult r = run_cli(args);
    CHECK(r.code == 3);
    CHECK(one_line_error(r));
    CHECK(contains(r.err, "is damaged: its table 'streams' is missing"));
    CHECK_FALSE(contains(r.err, "no such table"));
  }
}

TEST_CASE("a device given as the store is not a regular file, exit 1") {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"checkpoint", "reset", "/dev/null", "mailer"}, {"info", "/dev/null"}}) {
    CAPTURE(args);
    const CliResult r = run_cli(args);
    CHECK(r.code == 1);
    CHECK(one_line_error(r));
    CHECK(contains(r.err, "'/dev/null' is not a regular file"));
    CHECK_FALSE(contains(r.err, "WAL"));
  }
}

// --- checkpoint reset --------------------------------------------------------------------------

TEST_CASE("checkpoint reset refuses to move a checkpoint forward unless --forward") {
  CheckpointedStore s;
  CliResult r = run_cli({"checkpoint", "reset", s.file(), "mailer", "--to", "7"});
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "skip events 6 to 7"));
  CHECK(contains(r.err, "--forward"));
  CHECK(s.checkpoint("mailer") == 5);
  r = run_cli({"checkpoint", "reset", s.file(), "mailer", "--to", "5"});  // where it is
  CHECK(r.code == 0);
  r = run_cli({"checkpoint", "reset", s.file(), "mailer", "--to", "7", "--forward"});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "reset from 5 to 7"));
  CHECK(s.checkpoint("mailer") == 7);
}

}  // namespace
}  // namespace factum::test
