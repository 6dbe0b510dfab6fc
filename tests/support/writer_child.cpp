// A writer process for the multi-process and crash tests. It appends to a store and reports
// every append on stdout, each line with one write(2) straight to the file descriptor, so a
// reported line survives the process being killed right after it.
//
//   writer_child crash <store> <threads> <seed> <cue fd>
//     Opens the store with Durability::full and writes "R" to <cue fd> (the parent's cue that
//     the store is open), then from <threads> threads appends batches of 1..5 events (sizes and
//     streams drawn from <seed>) to streams crash-0..crash-2 with ExpectedVersion::any(), until
//     killed. Around each append it writes
//       BEGIN <stream> <id>...                                   (before calling append)
//       ACK <first id> <first position> <last position> <stream version>   (after it returned)
//     After the first ACK line is written it writes "A" to <cue fd> and closes it (the cue that
//     an append has been acknowledged).
//   writer_child race <store> <writer> <count> <streams> [<threads>]
//     Waits for stdin to reach end of file (the parent's start signal), opens (or creates) the
//     store, then appends <count> single events, the i-th to stream race-<(writer + i) % streams>,
//     each with the exact version it just read, re-reading and retrying on ConcurrencyError. With
//     <threads> (default 1) threads, started together, thread t appends the i-th events with
//     i % threads == t. Writes "ACK <stream> <version> <position> <id>" per append and
//     "CONFLICTS <n>" (all threads' retries) at the end.
//
// Exit status: 0 done, 1 an exception (its message on stderr), 2 bad arguments.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <factum/factum.hpp>
#include <latch>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace factum;

// Writes the whole line with write(2): no stdio buffer that a kill could lose.
void emit(std::string line) {
  line.push_back('\n');
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDOUT_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("writer_child: cannot write to stdout");
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

EventData make_event(const std::string& type, const std::string& payload) {
  EventData e;
  e.type = type;
  e.payload = to_bytes(payload);
  return e;
}

// Writes the one-byte cue `c` to the parent's pipe.
void send_cue(int fd, char c) {
  ssize_t n = 0;
  while ((n = ::write(fd, &c, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) throw std::runtime_error("writer_child: cannot write to the cue fd");
}

// One thread of crash mode: appends until the process is killed (or a minute passes, so a
// child whose parent died does not run forever). The first thread to see an append
// acknowledged sends the cue "A" and closes `cue_fd` (set to -1).
void crash_loop(EventStore& store, std::uint64_t seed, std::atomic<int>& cue_fd) {
  std::mt19937_64 rng(seed);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string stream = "crash-" + std::to_string(rng() % 3);
    std::vector<EventData> batch(1 + rng() % 5);
    std::string begin = "BEGIN " + stream;
    for (EventData& e : batch) {
      e = make_event("crash.Appended", std::to_string(rng()));
      begin += ' ';  // not `" " + ...`: GCC 12 -O3 raises a false -Wrestrict on that
      begin += e.id.to_string();
    }
    emit(begin);
    const AppendResult r = store.append(stream, ExpectedVersion::any(), batch);
    emit("ACK " + batch.front().id.to_string() + " " + std::to_string(r.first_position) + " " +
         std::to_string(r.last_position) + " " + std::to_string(r.stream_version));
    if (cue_fd.load(std::memory_order_relaxed) >= 0) {
      if (const int fd = cue_fd.exchange(-1); fd >= 0) {
        send_cue(fd, 'A');
        ::close(fd);
      }
    }
  }
}

int run_crash(const std::string& path, int threads, std::uint64_t seed, int cue_fd) {
  StoreOptions options;
  options.durability = Durability::full;
  EventStore store = EventStore::open(path, options);
  send_cue(cue_fd, 'R');
  std::atomic<int> first_ack_fd{cue_fd};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&store, &first_ack_fd, seed, t] {
      try {
        crash_loop(store, seed * 1000 + static_cast<std::uint64_t>(t), first_ack_fd);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "writer_child crash: %s\n", e.what());
        std::_Exit(1);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  return 0;
}

void wait_for_stdin_eof() {
  char buffer[64];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n == 0) return;
    if (n < 0 && errno != EINTR) throw std::runtime_error("writer_child: cannot read stdin");
  }
}

// One thread of race mode: appends the i-th events, i = first, first + step, ... < count.
// Returns how many appends it retried after a ConcurrencyError.
std::uint64_t race_loop(EventStore& store, int writer, int first, int step, int count,
                        int streams) {
  std::uint64_t conflicts = 0;
  for (int i = first; i < count; i += step) {
    const std::string stream = "race-" + std::to_string((writer + i) % streams);
    const EventData e =
        make_event("race.Appended", std::to_string(writer) + "/" + std::to_string(i));
    for (;;) {
      const StreamVersion v = store.stream_version(stream);
      std::this_thread::yield();  // widens the window in which another writer may get ahead
      try {
        const AppendResult r = store.append(stream, ExpectedVersion::exact(v), e);
        emit("ACK " + stream + " " + std::to_string(r.stream_version) + " " +
             std::to_string(r.first_position) + " " + e.id.to_string());
        break;
      } catch (const ConcurrencyError&) {
        ++conflicts;
      }
    }
  }
  return conflicts;
}

int run_race(const std::string& path, int writer, int count, int streams, int threads) {
  if (threads < 1) throw std::invalid_argument("race: <threads> must be at least 1");
  StoreOptions options;
  options.durability = Durability::normal;
  wait_for_stdin_eof();
  EventStore store = EventStore::open(path, options);
  std::atomic<std::uint64_t> conflicts{0};
  std::latch ready(threads);  // the threads start appending together
  std::mutex error_mu;
  std::exception_ptr error;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      ready.arrive_and_wait();
      try {
        conflicts += race_loop(store, writer, t, threads, count, streams);
      } catch (...) {
        const std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (std::thread& w : workers) w.join();
  if (error) std::rethrow_exception(error);
  emit("CONFLICTS " + std::to_string(conflicts.load()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  try {
    if (args.size() == 6 && args[1] == "crash") {
      return run_crash(args[2], std::stoi(args[3]), std::stoull(args[4]), std::stoi(args[5]));
    }
    if ((args.size() == 6 || args.size() == 7) && args[1] == "race") {
      return run_race(args[2], std::stoi(args[3]), std::stoi(args[4]), std::stoi(args[5]),
                      args.size() == 7 ? std::stoi(args[6]) : 1);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "writer_child: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: writer_child crash <store> <threads> <seed> <cue fd>\n"
               "       writer_child race <store> <writer> <count> <streams> [<threads>]\n");
  return 2;
}
