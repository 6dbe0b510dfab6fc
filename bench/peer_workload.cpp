// bench/peer_workload.cpp — factum on the workload of bench/peers/run.sh, so that factum and
// the peer PostgreSQL event stores are measured in the same run, in turns (issue 33 item 4).
//
//   peer_workload --store URI|FILE --peer NAME --case append1|append100|append1_procs
//                 [--events N] [--streams N] [--processes P] [--connections C]
//
// The store (a postgresql:// URI of an empty database, or a SQLite file that does not exist
// yet) is written with N events of the peers' payload (the 200-byte JSON of common.mjs) over
// N / 100 streams account-0 ...; every append checks the stream's expected version:
//   append1        N appends of one event, the streams in turn, one transaction each;
//   append100      N / 100 appends of 100 events, one per stream; then, untimed, ANALYZE on
//                  PostgreSQL (as the peers get), and:
//   read_streams   every stream read whole (read_stream, every event copied out);
//   read_all       the whole log in position order (read_all, every event copied out);
//   append1_procs  P forked processes x C connections (an EventStore each, a thread each),
//                  N single-event appends in all, each connection to streams of its own.
// Each result is a JSON line {"peer": NAME, "case": ..., "events": ..., "seconds": ...,
// "eps": ...} as the peers' scripts print, read by bench/peers/summarize.mjs.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "factum/factum.hpp"
#include "support.hpp"

namespace {

using bench::Clock;

// common.mjs's payload: {"pad":"<190 letters>"} from the same linear congruential generator.
std::string payload_json() {
  std::uint64_t seed = 42;
  const std::string letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string pad;
  for (int i = 0; i < 190; ++i) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    pad += letters[seed % letters.size()];
  }
  return "{\"pad\":\"" + pad + "\"}";
}

factum::EventData deposited(const factum::Bytes& payload) {
  factum::EventData e;
  e.type = "Deposited";
  e.payload = payload;
  return e;
}

std::string stream_name(std::size_t i) { return "account-" + std::to_string(i); }

void report(const std::string& peer, const char* kase, std::size_t events, double seconds) {
  std::printf(
      "{\"peer\": \"%s\", \"case\": \"%s\", \"events\": %zu, \"seconds\": %s, \"eps\": %s}\n",
      peer.c_str(), kase, events, bench::json_number(seconds).c_str(),
      bench::json_number(static_cast<double>(events) / seconds).c_str());
  std::fflush(stdout);
}

void check(const char* what, std::size_t got, std::size_t want) {
  if (got != want) {
    throw std::runtime_error(std::string(what) + ": read " + std::to_string(got) +
                             " events, expected " + std::to_string(want));
  }
}

struct Config {
  std::string store;
  std::string peer = "factum";
  std::string kase;
  std::size_t events = 100000;
  std::size_t streams = 0;  // 0: events / 100
  std::size_t processes = 4;
  std::size_t connections = 4;
};

factum::EventStore open_store(const Config& c) {
  factum::StoreOptions o;
  o.durability = factum::Durability::full;
  return factum::EventStore::open(c.store, o);
}

void append1(const Config& c, const factum::Bytes& payload) {
  factum::EventStore store = open_store(c);
  std::vector<std::uint64_t> version(c.streams, 0);
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < c.events; ++i) {
    const std::size_t s = i % c.streams;
    store.append(stream_name(s), factum::ExpectedVersion::exact(version[s]), deposited(payload));
    ++version[s];
  }
  report(c.peer, "append1", c.events, bench::seconds_since(t0));
}

void append100(const Config& c, const factum::Bytes& payload) {
  factum::EventStore store = open_store(c);
  std::vector<factum::EventData> batch(100);
  auto t0 = Clock::now();
  for (std::size_t i = 0; i < c.events / 100; ++i) {
    for (auto& e : batch) e = deposited(payload);
    store.append(stream_name(i % c.streams), factum::ExpectedVersion::no_stream(), batch);
  }
  report(c.peer, "append100", c.events, bench::seconds_since(t0));
  // Untimed, as for the peers: ANALYZE, as autovacuum would run it on a live server. It also
  // sets the new rows' hint bits, which the first read of each row would set otherwise (a
  // stream's first read cost 5-15x its second, EXPLAIN ANALYZE).
  store.write_sql([](factum::Sql& sql) {
    if (sql.dialect() == factum::SqlDialect::postgres) sql.execute("ANALYZE");
  });

  t0 = Clock::now();
  std::size_t n = 0;
  for (std::size_t s = 0; s < c.streams; ++s) {
    for (const factum::RecordedEvent& e : store.read_stream(stream_name(s)))
      n += e.payload.size() == 200 ? 1 : 0;
  }
  check("read_streams", n, c.events);
  report(c.peer, "read_streams", c.events, bench::seconds_since(t0));

  t0 = Clock::now();
  n = 0;
  for (const factum::RecordedEvent& e : store.read_all()) n += e.payload.size() == 200 ? 1 : 0;
  check("read_all", n, c.events);
  report(c.peer, "read_all", c.events, bench::seconds_since(t0));
}

// One process's C connections, each appending `per_connection` single events to streams of
// its own (connection k of process p: streams p.k.0 ...).
void process_appends(const Config& c, std::size_t process, std::size_t per_connection,
                     const factum::Bytes& payload, int ready_fd, int go_fd) {
  std::vector<factum::EventStore> stores;
  for (std::size_t k = 0; k < c.connections; ++k) stores.push_back(open_store(c));
  const char byte = 'r';
  if (::write(ready_fd, &byte, 1) != 1) throw std::runtime_error("cannot signal the parent");
  char go = 0;
  if (::read(go_fd, &go, 1) != 1) throw std::runtime_error("the parent is gone");
  std::vector<std::jthread> threads;
  for (std::size_t k = 0; k < c.connections; ++k) {
    threads.emplace_back([&, k] {
      const std::size_t streams = 10;
      std::vector<std::uint64_t> version(streams, 0);
      const std::string prefix =
          "account-p" + std::to_string(process) + "c" + std::to_string(k) + "s";
      for (std::size_t i = 0; i < per_connection; ++i) {
        const std::size_t s = i % streams;
        stores[k].append(prefix + std::to_string(s), factum::ExpectedVersion::exact(version[s]),
                         deposited(payload));
        ++version[s];
      }
    });
  }
}

void append1_procs(const Config& c, const factum::Bytes& payload) {
  const std::size_t per_connection = c.events / (c.processes * c.connections);
  if (per_connection == 0) throw std::runtime_error("--events is below one per connection");
  int ready[2];
  int go[2];
  if (::pipe(ready) != 0 || ::pipe(go) != 0) throw std::runtime_error("pipe failed");
  std::vector<pid_t> children;
  for (std::size_t p = 0; p < c.processes; ++p) {
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      int status = 0;
      try {
        process_appends(c, p, per_connection, payload, ready[1], go[0]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "peer_workload: process %zu: %s\n", p, e.what());
        status = 1;
      }
      std::fflush(stderr);
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (std::size_t p = 0; p < c.processes; ++p) {
    char byte = 0;
    if (::read(ready[0], &byte, 1) != 1) throw std::runtime_error("a process failed to start");
  }
  const auto t0 = Clock::now();
  const std::string go_bytes(c.processes, 'g');
  if (::write(go[1], go_bytes.data(), go_bytes.size()) != static_cast<ssize_t>(go_bytes.size())) {
    throw std::runtime_error("cannot start the processes");
  }
  bool failed = false;
  for (const pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failed = failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  const double seconds = bench::seconds_since(t0);
  if (failed) throw std::runtime_error("an appending process failed");
  const std::size_t total = per_connection * c.processes * c.connections;
  check("append1_procs head", open_store(c).head_position(), total);
  report(c.peer, "append1_procs", total, seconds);
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app("peer_workload: factum on the workload of bench/peers/run.sh");
  bench::cli_defaults(app);
  app.add_option("--store", c.store, "an empty store: a postgresql:// URI or a new SQLite file")
      ->required();
  app.add_option("--peer", c.peer, "the name of the results' rows (default factum)");
  app.add_option("--case", c.kase, "append1, append100 (then the reads) or append1_procs")
      ->required()
      ->check(CLI::IsMember({"append1", "append100", "append1_procs"}));
  bench::add_positive(app, "--events", c.events, "events (default 100000; a multiple of 100)");
  bench::add_positive(app, "--streams", c.streams, "streams (default events / 100)");
  bench::add_positive(app, "--processes", c.processes, "append1_procs: processes (default 4)");
  bench::add_positive(app, "--connections", c.connections,
                      "append1_procs: connections per process (default 4)");
  bench::parse_or_exit(app, argc, argv);
  if (c.streams == 0) c.streams = std::max<std::size_t>(1, c.events / 100);
  bench::catch_interrupts();
  return bench::run_reporting("peer_workload", [&] {
    const factum::Bytes payload = factum::to_bytes(payload_json());
    if (payload.size() != 200) throw std::runtime_error("the payload is not 200 bytes");
    if (c.kase == "append1") append1(c, payload);
    if (c.kase == "append100") append100(c, payload);
    if (c.kase == "append1_procs") append1_procs(c, payload);
    return 0;
  });
}
