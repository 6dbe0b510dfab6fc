// factum import builds exactly the store it says it built (issue 28, items 1, 7 and 21): no
// stale -wal, -shm or -journal joins the new file; the leftovers of a killed import are removed
// by the next one (and those of a running import are not); an export is read from any file, pipe
// or device; an export whose lines were altered or reordered is damaged (exit 3); numbers are
// decimal; and docs/cli.md states the line bound the program applies.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <thread>

#include "cli_fixture.hpp"

namespace factum::test {
namespace {

namespace fs = std::filesystem;

// The sample store and its export in sample.jsonl.
struct Exported : SampleStore {
  fs::path export_file = dir.file("sample.jsonl");
  Exported() { REQUIRE(run_cli({"export", file(), "-o", export_file.string()}).code == 0); }
};

// --- item 1: nothing joins the new file ------------------------------------------------------

TEST_CASE(
    "import refuses to build a store beside another store's -wal, which SQLite would replay") {
  Exported s;
  const fs::path copy = s.dir.file("copy.db");
  // Another store's log, committed into its WAL but not yet into its file, left under the
  // target's name (the target itself removed after a crash).
  const fs::path other = s.dir.file("other.db");
  EventStore store = EventStore::open(other, TempStore::fast_options());
  // The first commit creates the schema through the rollback journal; WAL holds the second.
  store.append("other-1", ExpectedVersion::any(), make_events(1));
  store.append("other-1", ExpectedVersion::any(), make_events(20));
  REQUIRE(fs::file_size(other.string() + "-wal") > 0);
  fs::copy_file(other.string() + "-wal", copy.string() + "-wal");
  const std::string stale = file_bytes(copy.string() + "-wal");

  const CliResult r = run_cli({"import", copy.string(), s.export_file.string()});
  CHECK(r.code == 1);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "copy.db-wal' exists"));
  CHECK_FALSE(contains(r.err, "verified"));
  CHECK_FALSE(fs::exists(copy));
  CHECK(file_bytes(copy.string() + "-wal") == stale);  // left as it was
}

TEST_CASE("import refuses to build a store beside a leftover -shm or -journal of its name") {
  Exported s;
  const fs::path copy = s.dir.file("copy.db");
  for (const char* suffix : {"-shm", "-journal"}) {
    CAPTURE(suffix);
    write_file(copy.string() + suffix, std::string(4096, '\x01'));
    const CliResult r = run_cli({"import", copy.string(), s.export_file.string()});
    CHECK(r.code == 1);
    CHECK(contains(r.err, std::string("copy.db") + suffix + "' exists"));
    CHECK_FALSE(fs::exists(copy));
    fs::remove(copy.string() + suffix);
  }
  CHECK(run_cli({"import", copy.string(), s.export_file.string()}).code == 0);
}

TEST_CASE("import leaves no companion file beside the store it moved into place") {
  Exported s;
  const fs::path copy = s.dir.file("copy.db");
  const CliResult r = run_cli({"import", copy.string(), s.export_file.string()});
  REQUIRE(r.code == 0);
  CHECK(files_starting(s.dir.path(), "copy.db") == std::vector<std::string>{"copy.db"});
  CHECK(all_events(copy) == all_events(s.path));
}

// --- item 7: the leftovers of a killed import --------------------------------------------------

// A FIFO in `dir` opened for writing (and reading, so that opening it never blocks): the stdin
// of an import that waits for more lines.
struct Fifo {
  fs::path path;
  int fd = -1;
  explicit Fifo(const fs::path& p) : path(p) {
    REQUIRE(mkfifo(p.c_str(), 0600) == 0);
    fd = open(p.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
  }
  ~Fifo() {
    if (fd >= 0) close(fd);
  }
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;
};

// The size of the first file in `dir` named `prefix`*`suffix`, 0 when there is none.
std::uintmax_t size_of_match(const fs::path& dir, const std::string& prefix,
                             const std::string& suffix) {
  for (const std::string& name : files_starting(dir, prefix)) {
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      std::error_code ec;
      return fs::file_size(dir / name, ec);
    }
  }
  return 0;
}

TEST_CASE("the next import removes what an import killed by SIGKILL left behind") {
  TempDir dir;
  const fs::path source = dir.file("source.db");
  EventStore::open(source, TempStore::fast_options())
      .append("bulk-1", ExpectedVersion::any(), make_events(2500));
  const fs::path exported = dir.file("source.jsonl");
  REQUIRE(run_cli({"export", source.string(), "-o", exported.string()}).code == 0);
  const std::vector<std::string> lines = lines_of(file_bytes(exported));
  const fs::path copy = dir.file("copy.db");
  {
    // An import reading from a pipe: it imports the first 2,000 events in two batches (the
    // first through the rollback journal as it creates the schema, the second into the WAL),
    // then waits for more.
    Fifo fifo(dir.file("input"));
    CliOptions options;
    options.input = fifo.path;
    CliProcess import({"import", copy.string(), "-"}, options);
    const std::string text = joined({lines.begin(), lines.begin() + 2200});
    std::thread writer([&] { (void)!write(fifo.fd, text.data(), text.size()); });
    writer.join();  // the import has read all but what the pipe holds
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (size_of_match(dir.path(), "copy.db.import-", "-wal") == 0 &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    import.signal(SIGKILL);
    CHECK(import.wait().code == 128 + SIGKILL);
  }
  REQUIRE(size_of_match(dir.path(), "copy.db.import-", "-wal") > 0);
  REQUIRE_FALSE(fs::exists(copy));

  const CliResult r = run_cli({"import", copy.string(), exported.string()});
  CHECK(r.code == 0);
  CHECK(contains(r.err, "removed '"));
  CHECK(contains(r.err, "left by an import that did not finish"));
  CHECK(files_starting(dir.path(), "copy.db") == std::vector<std::string>{"copy.db"});
  CHECK(all_events(copy).size() == 2500);
}

TEST_CASE("import leaves alone the temporary files of an import whose process still runs") {
  Exported s;
  const pid_t running = fork();
  REQUIRE(running >= 0);
  if (running == 0) {
    pause();  // stands for an import at work, until killed
    _exit(0);
  }
  const std::string leftover = s.dir.file("copy.db.import-" + std::to_string(running)).string();
  write_file(leftover, "in progress");
  write_file(leftover + "-wal", "in progress");
  const CliResult r = run_cli({"import", s.dir.file("copy.db").string(), s.export_file.string()});
  kill(running, SIGKILL);
  waitpid(running, nullptr, 0);
  CHECK(r.code == 0);
  CHECK_FALSE(contains(r.err, "removed"));
  CHECK(file_bytes(leftover) == "in progress");
  CHECK(file_bytes(leftover + "-wal") == "in progress");
}

// --- item 21: any input, exit codes, numbers, the documented bound ---------------------------

TEST_CASE("import reads an export from a named pipe, as <(cat export.jsonl) gives it") {
  Exported s;
  const fs::path pipe = s.dir.file("pipe");
  REQUIRE(mkfifo(pipe.c_str(), 0600) == 0);
  std::thread writer([&] {
    const int fd = open(pipe.c_str(), O_WRONLY);  // waits for the import to open it
    const std::string text = file_bytes(s.export_file);
    (void)!write(fd, text.data(), text.size());
    close(fd);
  });
  const CliResult r = run_cli({"import", s.dir.file("copy.db").string(), pipe.string()});
  // An import that never opened the pipe leaves the writer waiting: this opens it instead.
  const int unblock = open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  writer.join();
  close(unblock);
  CHECK(r.code == 0);
  CHECK(all_events(s.dir.file("copy.db")) == all_events(s.path));
}

TEST_CASE("import reads /dev/stdin when stdin is a pipe") {
  Exported s;
  const ProgramRun r = run_shell(
      "cat sample.jsonl | '" + std::string(FACTUM_CLI_PATH) + "' import copy.db /dev/stdin",
      s.dir.path());
  CHECK(r.code == 0);
  CHECK(all_events(s.dir.file("copy.db")) == all_events(s.path));
}

TEST_CASE("import of /dev/null reads an empty export: no trailer, exit 3, nothing created") {
  TempDir dir;
  const CliResult r = run_cli({"import", dir.file("copy.db").string(), "/dev/null"});
  CHECK(r.code == 3);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "no trailer after its 0 events"));
  CHECK(files_starting(dir.path(), "copy.db").empty());
}

TEST_CASE("import of an export whose stream id was changed exits 3 naming the line") {
  Exported s;
  auto lines = lines_of(file_bytes(s.export_file));
  Json second = Json::parse(lines[1]);
  second["stream"] = "account-9";
  lines[1] = second.dump();
  write_file(s.dir.file("changed.jsonl"), joined(lines));
  const CliResult r =
      run_cli({"import", s.dir.file("copy.db").string(), s.dir.file("changed.jsonl").string()});
  CHECK(r.code == 3);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "line 2: the event at position 2: its hash does not match"));
  CHECK(files_starting(s.dir.path(), "copy.db").empty());
}

TEST_CASE("import of an export with two lines swapped exits 3 naming the line") {
  Exported s;
  auto lines = lines_of(file_bytes(s.export_file));
  std::swap(lines[1], lines[2]);
  write_file(s.dir.file("swapped.jsonl"), joined(lines));
  const CliResult r =
      run_cli({"import", s.dir.file("copy.db").string(), s.dir.file("swapped.jsonl").string()});
  CHECK(r.code == 3);
  CHECK(one_line_error(r));
  CHECK(contains(r.err, "line 2: cannot import the event at position 3"));
  CHECK(files_starting(s.dir.path(), "copy.db").empty());
}

TEST_CASE("import --max-payload-size reads decimal digits only: 010 is ten, 0x10 is refused") {
  TempDir dir;
  const fs::path source = dir.file("source.db");
  EventStore::open(source, TempStore::fast_options())
      .append("small-1", ExpectedVersion::any(), make_event("test.Nine", "123456789"));
  const fs::path exported = dir.file("source.jsonl");
  REQUIRE(run_cli({"export", source.string(), "-o", exported.string()}).code == 0);
  CliResult r = run_cli(
      {"import", dir.file("a.db").string(), exported.string(), "--max-payload-size", "010"});
  CHECK(r.code == 0);  // ten bytes allowed: the 9-byte payload fits
  for (const char* bad : {"0x10", "1e3", "+9", " 9"}) {
    CAPTURE(bad);
    r = run_cli(
        {"import", dir.file("b.db").string(), exported.string(), "--max-payload-size", bad});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "is not a whole number from 1 to 1073741824"));
  }
}

TEST_CASE("the line bound import reports is the one docs/cli.md states") {
  TempDir dir;
  write_file(dir.file("long.jsonl"), std::string(8u << 20, 'x'));  // 8 MiB, no newline
  const CliResult r =
      run_cli({"import", dir.file("copy.db").string(), dir.file("long.jsonl").string()});
  CHECK(r.code == 1);
  std::smatch m;
  const std::regex bound("longer than ([0-9]+) bytes");
  REQUIRE(std::regex_search(r.err, m, bound));
  const std::string docs = file_bytes(fs::path(FACTUM_DOCS_DIR) / "cli.md");
  CHECK(contains(docs, "longer than " + m[1].str() + " bytes"));
  // And the number in the prose, with thousands separators.
  std::string grouped = m[1].str();
  for (int at = static_cast<int>(grouped.size()) - 3; at > 0; at -= 3) grouped.insert(at, ",");
  CHECK(contains(docs, "(" + grouped));
}

}  // namespace
}  // namespace factum::test
