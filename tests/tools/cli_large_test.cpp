// The factum command line on stores large enough to matter: verify and export walk the log in
// constant memory, and draw a progress bar on stderr only when stderr is a terminal.
#include "cli_fixture.hpp"

namespace factum::test {
namespace {

// A store of `events` events over 100 streams, appended 500 at a time, each with a payload of
// `payload_size` bytes and an actor.
std::filesystem::path large_store(const TempDir& dir, const std::string& name, int events,
                                  std::size_t payload_size = 120) {
  const std::filesystem::path path = dir.file(name);
  EventStore store = EventStore::open(path, TempStore::fast_options());
  std::vector<EventData> batch;
  for (int n = 0; n < events; ++n) {
    EventData e;
    e.type = "bulk.Recorded";
    std::string payload = "{\"n\":" + std::to_string(n) + ",\"note\":\"";
    payload.resize(payload_size - 2, 'x');
    e.payload = to_bytes(payload + "\"}");
    e.metadata.actor = "loader";
    batch.push_back(std::move(e));
    if (batch.size() == 500 || n + 1 == events) {
      store.append("bulk-" + std::to_string(n % 100), ExpectedVersion::any(), batch);
      batch.clear();
    }
  }
  return path;
}

// The measure the memory tests below rely on: a program's whole peak, its own. It once sampled
// /proc while the program ran, so a program that ended before the first sample (a short import
// on a loaded machine) measured 0; and the kernel's own figure for a child started by
// posix_spawn (a vfork) starts at the parent's peak. Here the program ends before it is waited
// for, and the test process holds 512 MiB that must not be counted (the program's own peak is a
// few MB, ~140 MB under AddressSanitizer).
TEST_CASE("a run's measured peak memory is its own, also when it ended before it was waited for") {
  std::vector<char> ballast(512u << 20);
  for (std::size_t i = 0; i < ballast.size(); i += 4096) ballast[i] = static_cast<char>(i >> 12);
  CliProcess p({"--version"}, measured());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const CliResult r = p.wait();
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "factum "));
  INFO("peak RSS of factum --version: " << r.peak_rss_kib << " KiB");
  CHECK(r.peak_rss_kib > 1024);
  CHECK(r.peak_rss_kib < 384 * 1024);
  CHECK(ballast[4096] == 1);
}

// 10,000 events against 100,000: an export of the larger store writes about 70 MB, which a
// program that held the log (or its output) in memory would add to its peak; one that streams
// it needs the same few MB for both (SQLite's page cache, one page of events, buffers).
TEST_CASE("verify and export of 10x more events need no more memory") {
  TempDir dir;
  const auto small = large_store(dir, "small.db", 10'000, 400);
  const auto large = large_store(dir, "large.db", 100'000, 400);
  constexpr long kSlackKib = 16 * 1024;

  const CliResult verify_small = run_cli({"verify", small.string()}, measured());
  const CliResult verify_large = run_cli({"verify", large.string()}, measured());
  REQUIRE(verify_small.code == 0);
  REQUIRE(verify_large.code == 0);
  CHECK(contains(verify_large.out, "ok: 100000 events"));
  INFO("verify peak RSS: small " << verify_small.peak_rss_kib << " KiB, large "
                                 << verify_large.peak_rss_kib << " KiB");
  CHECK(verify_small.peak_rss_kib > 0);
  CHECK(verify_large.peak_rss_kib < verify_small.peak_rss_kib + kSlackKib);

  const auto out_small = dir.file("small.jsonl");
  const auto out_large = dir.file("large.jsonl");
  const CliResult export_small =
      run_cli({"export", small.string(), "-o", out_small.string()}, measured());
  const CliResult export_large =
      run_cli({"export", large.string(), "-o", out_large.string()}, measured());
  REQUIRE(export_small.code == 0);
  REQUIRE(export_large.code == 0);
  CHECK(contains(export_large.err, "exported 100000 events"));
  REQUIRE(std::filesystem::file_size(out_large) > 3 * kSlackKib * 1024);
  INFO("export peak RSS: small " << export_small.peak_rss_kib << " KiB, large "
                                 << export_large.peak_rss_kib << " KiB");
  CHECK(export_large.peak_rss_kib < export_small.peak_rss_kib + kSlackKib);
}

// The bar is redrawn at most ten times a second, starting 0.1 s into the walk, as
// "\r<label> [###...] 42% n/total events  rate/s  eta Ns" and erased with "\r\033[K" at the end.
// Each walk here takes 0.2 s or more on a fast machine (verify ~700,000 events/s, export
// ~140,000, import ~60,000 in a release build), so the bar is drawn at least once.
TEST_CASE("verify, export and import draw a progress bar only when stderr is a terminal") {
  TempDir dir;
  const auto store = large_store(dir, "store.db", 150'000);
  CliOptions terminal;
  terminal.stderr_terminal = true;
  terminal.deadline = std::chrono::minutes(5);

  const CliResult verify = run_cli({"verify", store.string()}, terminal);
  CHECK(verify.code == 0);
  CHECK(contains(verify.out, "ok: 150000 events"));
  CHECK(contains(verify.err, "\rverify ["));
  CHECK(contains(verify.err, "/150,000 events"));
  CHECK(verify.err.rfind("\r\033[K") + 4 == verify.err.size());  // erased: nothing after it

  const CliResult piped = run_cli({"verify", store.string()});
  CHECK(piped.code == 0);
  CHECK(piped.err.empty());

  const CliResult exported = run_cli(
      {"export", store.string(), "--to", "40000", "-o", dir.file("out.jsonl").string()}, terminal);
  CHECK(exported.code == 0);
  CHECK(contains(exported.err, "\rexport ["));
  CHECK(contains(exported.err, "exported 40000 events"));

  const CliResult imported =
      run_cli({"import", dir.file("copy.db").string(), dir.file("out.jsonl").string()}, terminal);
  CHECK(imported.code == 0);
  CHECK(contains(imported.err, "\rimport ["));
  CHECK(contains(imported.err, " bytes "));
}

}  // namespace
}  // namespace factum::test
