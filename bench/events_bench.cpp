// bench/events_bench.cpp — encoding and decoding typed events, against a hand-written baseline.
//
// Measures, in one run on one machine, how many events per second go through factum's payload
// archive (encode_payload / decode_payload), through EventRegistry::encode (which also builds
// the EventData) and EventRegistry::decode (which also checks the event's hash), and, for the
// record, through Boost's own binary and text archives, for one typical 5-field event of
// 60-100 bytes. Each is compared with a hand-written serializer measured in the same run:
// memcpy of the native integers and u32 length prefixes, read back with bounds checks. Cases
// run in rounds (--reps); the best run of each case counts, since the machine may be shared.
//
//   events_bench [--quick] [--json] [--seconds S] [--reps N] [--events N]
#include <sys/random.h>

#include <algorithm>
#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/archive/text_iarchive.hpp>
#include <boost/archive/text_oarchive.hpp>
#include <boost/serialization/string.hpp>
#include <boost/version.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <istream>
#include <memory>
#include <ostream>
#include <random>
#include <span>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "factum/factum.hpp"
#include "support.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using bench::json_number;

// The typical event: five fields, 60-100 bytes encoded.
struct MoneyTransferred {
  static constexpr std::string_view event_type = "bench.MoneyTransferred";
  static constexpr std::uint32_t schema_version = 1;
  std::string account;
  std::int64_t amount_minor = 0;
  std::uint16_t currency = 0;
  std::int64_t at_us = 0;
  std::string note;

  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& account& amount_minor& currency& at_us& note;
  }
  friend bool operator==(const MoneyTransferred&, const MoneyTransferred&) = default;
};

std::uint64_t g_sink = 0;  // keeps results alive

// ---------------------------------------------------------------------------------------------
// The baseline: what one would write by hand. Native integers by memcpy (the same bytes as
// little-endian on the machines factum runs on), strings with a u32 length prefix.

namespace baseline {

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

void encode(const MoneyTransferred& e, std::string& out) {
  out.clear();
  out.reserve(4 + e.account.size() + 8 + 2 + 8 + 4 + e.note.size());
  put_string(out, e.account);
  put(out, e.amount_minor);
  put(out, e.currency);
  put(out, e.at_us);
  put_string(out, e.note);
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <class T>
  T get() {
    if (sizeof(T) > in_.size() - at_) throw std::runtime_error("baseline: truncated");
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint32_t>();
    if (n > in_.size() - at_) throw std::runtime_error("baseline: truncated string");
    std::string s(in_.substr(at_, n));
    at_ += n;
    return s;
  }
  bool at_end() const { return at_ == in_.size(); }

 private:
  std::string_view in_;
  std::size_t at_ = 0;
};

MoneyTransferred decode(std::string_view in) {
  Reader r(in);
  MoneyTransferred e;
  e.account = r.get_string();
  e.amount_minor = r.get<std::int64_t>();
  e.currency = r.get<std::uint16_t>();
  e.at_us = r.get<std::int64_t>();
  e.note = r.get_string();
  if (!r.at_end()) throw std::runtime_error("baseline: bytes left over");
  return e;
}

}  // namespace baseline

// ---------------------------------------------------------------------------------------------
// Stream buffers for Boost's archives, so that they pay for no std::string copies: one appends
// to a reused string, the other reads a byte range in place.

class StringSink : public std::streambuf {
 public:
  explicit StringSink(std::string& out) : out_(out) {}

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof()))
      out_.push_back(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.append(s, static_cast<std::size_t>(n));
    return n;
  }

 private:
  std::string& out_;
};

class ViewSource : public std::streambuf {
 public:
  void reset(std::string_view in) {
    char* p = const_cast<char*>(in.data());
    setg(p, p, p + in.size());
  }
};

constexpr auto kBoostFlags = boost::archive::no_header | boost::archive::no_codecvt;

std::span<const std::byte> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// ---------------------------------------------------------------------------------------------
// Options

struct Config {
  double seconds = 0.1;       // length of one timed run
  int reps = 5;               // rounds; the best run of each case counts
  std::size_t events = 1024;  // distinct events cycled through
  bool json = false;
};

Config parse(int argc, char** argv) {
  Config c;
  bool quick = false;
  CLI::App app("measures encoding and decoding of typed events", "events_bench");
  bench::cli_defaults(app);
  app.add_flag("--quick", quick, "0.05 s x 1 round per case (a smoke run)");
  app.add_flag("--json", c.json, "print the results as JSON instead of a table");
  CLI::Option* seconds = bench::add_positive(app, "--seconds", c.seconds,
                                             "length of one timed run (default 0.1)", "S");
  CLI::Option* reps = bench::add_positive(app, "--reps", c.reps,
                                          "rounds over all cases, best run counts (default 5)");
  bench::add_positive(app, "--events", c.events, "distinct events cycled through (default 1024)");
  bench::parse_or_exit(app, argc, argv);
  if (quick) {  // explicit values win over --quick's
    if (seconds->count() == 0) c.seconds = 0.05;
    if (reps->count() == 0) c.reps = 1;
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// The events, and their encodings in every format

std::vector<MoneyTransferred> make_events(std::size_t n) {
  static constexpr const char* kNotes[] = {
      "monthly rent, flat 4B", "invoice 2026-12-%06u, net 30 days", "refund of order %u",
      "salary December 2026, employee %u, ref. payroll batch 12"};
  static constexpr std::uint16_t kCurrencies[] = {978, 840, 392};
  std::mt19937_64 rng(42);
  std::vector<MoneyTransferred> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "account-%06u", static_cast<unsigned>(rng() % 1000000));
    out[i].account = buf;
    out[i].amount_minor = static_cast<std::int64_t>(rng() % 10'000'000) - 2'000'000;
    out[i].currency = kCurrencies[i % 3];
    out[i].at_us = 1'796'214'559'620'741 + static_cast<std::int64_t>(i) * 1'000'003;
    std::snprintf(buf, sizeof buf, kNotes[i % 4], static_cast<unsigned>(rng() % 1000000));
    out[i].note = buf;
  }
  return out;
}

std::string boost_binary(const MoneyTransferred& e) {
  std::string out;
  StringSink sink(out);
  boost::archive::binary_oarchive oa(sink, kBoostFlags);
  oa << e;
  return out;
}

std::string boost_text(const MoneyTransferred& e) {
  std::string out;
  StringSink sink(out);
  std::ostream os(&sink);
  {
    boost::archive::text_oarchive oa(os, kBoostFlags);
    oa << e;
  }
  return out;
}

MoneyTransferred from_boost_binary(std::string_view in) {
  ViewSource source;
  source.reset(in);
  boost::archive::binary_iarchive ia(source, kBoostFlags);
  MoneyTransferred e;
  ia >> e;
  return e;
}

MoneyTransferred from_boost_text(std::string_view in) {
  ViewSource source;
  source.reset(in);
  std::istream is(&source);
  boost::archive::text_iarchive ia(is, kBoostFlags);
  MoneyTransferred e;
  ia >> e;
  return e;
}

// Everything the cases read, prepared once and checked to round-trip.
struct Corpus {
  std::vector<MoneyTransferred> events;
  std::vector<std::string> baseline, factum, binary, text;
  std::vector<factum::RecordedEvent> recorded;  // stored by a real store: valid hashes
  factum::EventRegistry registry;

  explicit Corpus(std::size_t n) : events(make_events(n)) {
    registry.add<MoneyTransferred>();
    for (const MoneyTransferred& e : events) {
      baseline.emplace_back();
      baseline::encode(e, baseline.back());
      factum.push_back(factum::encode_payload(e));
      binary.push_back(boost_binary(e));
      text.push_back(boost_text(e));
    }
    bench::TempDir dir(fs::temp_directory_path(), "factum-events-bench");
    {
      auto store = factum::EventStore::open(dir.path() / "events.db");
      std::vector<factum::EventData> batch;
      for (const MoneyTransferred& e : events) batch.push_back(registry.encode(e));
      store.append("transfer-1", factum::ExpectedVersion::no_stream(), batch);
      recorded = store.read_stream("transfer-1").to_vector();
    }
    check();
  }

  // Every decoder gives back every event: the timed loops then only sink a checksum.
  void check() const {
    for (std::size_t i = 0; i < events.size(); ++i) {
      const bool ok = baseline::decode(baseline[i]) == events[i] &&
                      factum::decode_payload<MoneyTransferred>(bytes_of(factum[i])) == events[i] &&
                      registry.decode<MoneyTransferred>(recorded.at(i)) == events[i] &&
                      from_boost_binary(binary[i]) == events[i] &&
                      from_boost_text(text[i]) == events[i];
      if (!ok) throw std::runtime_error("event " + std::to_string(i) + " does not round-trip");
    }
  }

  static double average_size(const std::vector<std::string>& encoded) {
    double total = 0;
    for (const auto& s : encoded) total += static_cast<double>(s.size());
    return total / static_cast<double>(encoded.size());
  }
};

// ---------------------------------------------------------------------------------------------
// Cases

struct Case {
  std::string key;                       // stable name (JSON)
  std::string op;                        // "encode", "decode" or "id"
  std::string name;                      // table name
  double bytes = 0;                      // average encoded size
  std::function<void(std::size_t)> run;  // processes event i
  std::vector<double> runs;              // events/s of each timed run

  double best() const { return runs.empty() ? 0 : *std::max_element(runs.begin(), runs.end()); }
};

// Runs `c` over the events, whole passes at a time, for about `seconds`; events per second.
double timed(Case& c, std::size_t n, double seconds) {
  for (std::size_t i = 0; i < n; ++i) c.run(i);  // warm-up pass
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  std::uint64_t done = 0;
  Clock::time_point now;
  do {
    for (std::size_t i = 0; i < n; ++i) c.run(i);
    done += n;
    now = Clock::now();
  } while (now < deadline);
  return static_cast<double>(done) / std::chrono::duration<double>(now - start).count();
}

std::vector<Case> make_cases(const Corpus& k) {
  std::vector<Case> cases;
  auto add = [&](std::string key, std::string op, std::string name, double bytes,
                 std::function<void(std::size_t)> run) {
    cases.push_back({std::move(key), std::move(op), std::move(name), bytes, std::move(run), {}});
  };
  const double raw_size = Corpus::average_size(k.baseline);
  const double factum_size = Corpus::average_size(k.factum);
  const double binary_size = Corpus::average_size(k.binary);
  const double text_size = Corpus::average_size(k.text);
  auto out = std::make_shared<std::string>();
  auto sink = std::make_shared<StringSink>(*out);
  auto os = std::make_shared<std::ostream>(sink.get());
  auto source = std::make_shared<ViewSource>();
  auto is = std::make_shared<std::istream>(source.get());

  add("encode_baseline", "encode", "memcpy baseline, reused buffer", raw_size, [&k, out](auto i) {
    baseline::encode(k.events[i], *out);
    g_sink += out->size();
  });
  add("encode_archive", "encode", "PayloadOArchive, reused buffer", factum_size, [&k, out](auto i) {
    out->clear();
    factum::PayloadOArchive ar(*out);
    ar << k.events[i];
    g_sink += out->size();
  });
  add("encode_payload", "encode", "encode_payload (new string)", factum_size,
      [&k](auto i) { g_sink += factum::encode_payload(k.events[i]).size(); });
  add("encode_registry", "encode", "EventRegistry::encode (EventData)", factum_size,
      [&k](auto i) { g_sink += k.registry.encode(k.events[i]).payload.size(); });
  add("encode_boost_binary", "encode", "boost binary_oarchive, reused buf", binary_size,
      [&k, out, sink](auto i) {
        out->clear();
        boost::archive::binary_oarchive oa(*sink, kBoostFlags);
        oa << k.events[i];
        g_sink += out->size();
      });
  add("encode_boost_text", "encode", "boost text_oarchive, reused buf", text_size,
      [&k, out, os](auto i) {
        out->clear();
        {
          boost::archive::text_oarchive oa(*os, kBoostFlags);
          oa << k.events[i];
        }
        g_sink += out->size();
      });

  add("decode_baseline", "decode", "memcpy baseline, bounds-checked", raw_size, [&k](auto i) {
    const MoneyTransferred e = baseline::decode(k.baseline[i]);
    g_sink += static_cast<std::uint64_t>(e.amount_minor) + e.note.size();
  });
  add("decode_payload", "decode", "decode_payload", factum_size, [&k](auto i) {
    const auto e = factum::decode_payload<MoneyTransferred>(bytes_of(k.factum[i]));
    g_sink += static_cast<std::uint64_t>(e.amount_minor) + e.note.size();
  });
  add("decode_registry", "decode", "EventRegistry::decode (+hash check)", factum_size,
      [&k](auto i) {
        const auto e = k.registry.decode<MoneyTransferred>(k.recorded[i]);
        g_sink += static_cast<std::uint64_t>(e.amount_minor) + e.note.size();
      });
  add("hash_matches", "decode", "hash_matches alone (SHA-256)", factum_size,
      [&k](auto i) { g_sink += factum::hash_matches(k.recorded[i]) ? 1 : 0; });
  add("decode_boost_binary", "decode", "boost binary_iarchive, in place", binary_size,
      [&k, source](auto i) {
        source->reset(k.binary[i]);
        boost::archive::binary_iarchive ia(*source, kBoostFlags);
        MoneyTransferred e;
        ia >> e;
        g_sink += static_cast<std::uint64_t>(e.amount_minor) + e.note.size();
      });
  add("decode_boost_text", "decode", "boost text_iarchive, in place", text_size,
      [&k, source, is](auto i) {
        source->reset(k.text[i]);
        is->clear();
        boost::archive::text_iarchive ia(*is, kBoostFlags);
        MoneyTransferred e;
        ia >> e;
        g_sink += static_cast<std::uint64_t>(e.amount_minor) + e.note.size();
      });

  // Event ids: EventId::generate checks the fork generation (one relaxed atomic load) before
  // each id; the baseline asks the kernel for 16 random bytes per id, the other fork-safe way.
  add("id_baseline", "id", "getrandom(16 bytes) per id", 16, [](auto) {
    std::uint64_t bytes[2];
    if (getrandom(bytes, sizeof bytes, 0) == static_cast<ssize_t>(sizeof bytes)) g_sink += bytes[0];
  });
  add("id_generate", "id", "EventId::generate (fork-safe)", 16,
      [](auto) { g_sink += factum::EventId::generate().bytes()[15]; });
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Report

double baseline_of(const std::vector<Case>& cases, const std::string& op) {
  for (const Case& c : cases) {
    if (c.op == op && c.key == op + "_baseline") return c.best();
  }
  return 0;
}

void print_table(const Config& c, const std::vector<Case>& cases) {
  std::printf(
      "events_bench: a 5-field event (2 strings, 3 integers), %zu distinct events, Boost %d.%d,\n"
      "best of %d x %.2f s per case; ratio = events/s / the baseline's events/s\n\n",
      c.events, BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, c.reps, c.seconds);
  std::printf("%-7s %-36s %12s %9s %8s %6s\n", "op", "case", "events/s", "ns/event", "bytes/ev",
              "ratio");
  for (const Case& k : cases) {
    const double base = baseline_of(cases, k.op);
    std::printf("%-7s %-36s %12.0f %9.1f %8.1f %6.2f\n", k.op.c_str(), k.name.c_str(), k.best(),
                1e9 / k.best(), k.bytes, base > 0 ? k.best() / base : 0);
  }
}

void print_json(const Config& c, const std::vector<Case>& cases) {
  std::string out = "{\n";
  out += "  \"boost\": \"" + std::to_string(BOOST_VERSION / 100000) + "." +
         std::to_string(BOOST_VERSION / 100 % 1000) + "\",\n";
  out += "  \"events\": " + std::to_string(c.events) + ",\n";
  out += "  \"seconds_per_run\": " + json_number(c.seconds) + ",\n";
  out += "  \"reps\": " + std::to_string(c.reps) + ",\n";
  out += "  \"cases\": [\n";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    const double base = baseline_of(cases, k.op);
    std::string runs = "[";
    for (std::size_t r = 0; r < k.runs.size(); ++r) {
      runs += (r > 0 ? ", " : "") + json_number(k.runs[r]);
    }
    out += "    {\"case\": \"" + k.key + "\", \"op\": \"" + k.op +
           "\", \"events_per_s\": " + json_number(k.best()) +
           ", \"bytes_per_event\": " + json_number(k.bytes) +
           ", \"ratio_to_baseline\": " + (base > 0 ? json_number(k.best() / base) : "null") +
           ", \"runs\": " + runs + "]}" + (i + 1 < cases.size() ? ",\n" : "\n");
  }
  out += "  ]\n}\n";
  std::fputs(out.c_str(), stdout);
}

int run(const Config& c) {
  std::cerr << "events_bench: preparing " << c.events << " events\n";
  const Corpus corpus(c.events);
  std::vector<Case> cases = make_cases(corpus);
  for (int rep = 0; rep < c.reps; ++rep) {
    std::cerr << "events_bench: round " << rep + 1 << " of " << c.reps << "\n";
    for (Case& k : cases) k.runs.push_back(timed(k, c.events, c.seconds));
  }
  if (c.json) {
    print_json(c, cases);
  } else {
    print_table(c, cases);
  }
  return g_sink == 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Config config = parse(argc, argv);
  return bench::run_reporting("events_bench", [&] { return run(config); });
}
