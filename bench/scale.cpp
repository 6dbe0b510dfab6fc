#include "scale.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"

namespace bench {
namespace {

constexpr std::size_t kStreams = 1000;

// `count` copies of `model`, each with a fresh id.
std::vector<factum::EventData> batch_of(const factum::EventData& model, std::size_t count) {
  std::vector<factum::EventData> out(count, model);
  for (factum::EventData& e : out) e.id = factum::EventId::generate();
  return out;
}

std::string stream(std::size_t i) { return "scale-" + std::to_string(i % kStreams); }

}  // namespace

void fill_to(factum::EventStore& store, std::uint64_t events, const factum::EventData& model) {
  // Calls of 1,000 events: 10 to each of 100 streams, every stream written by the time the log
  // holds 10,000 events, so that the timed appends find their streams stored at any size.
  for (std::size_t call = 0; store.head_position() < events; ++call) {
    check_interrupt();
    std::uint64_t left = events - store.head_position();
    std::vector<factum::StreamAppend> appends;
    for (std::size_t i = 0; i < 100 && left > 0; ++i) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, 10));
      appends.push_back(
          {stream(call * 100 + i), factum::ExpectedVersion::any(), batch_of(model, n)});
      left -= n;
    }
    store.append_multi(appends);
  }
}

PairedRates append_batches(factum::EventStore& small, factum::EventStore& large,
                           std::size_t batches, const factum::EventData& model,
                           const std::string& run) {
  std::vector<std::vector<factum::EventData>> ready;
  for (std::size_t i = 0; i < 2 * batches; ++i) ready.push_back(batch_of(model, 100));
  Clock::duration spent[2]{};
  for (std::size_t i = 0; i < 2 * batches; ++i) {
    check_interrupt();
    const std::size_t side = (i + i / 2) % 2;  // small, large, large, small, ...
    factum::EventStore& store = side == 0 ? small : large;
    const auto start = Clock::now();
    store.append("batch-" + run + "-" + std::to_string(i / 2), factum::ExpectedVersion::no_stream(),
                 ready[i]);
    spent[side] += Clock::now() - start;
  }
  const auto rate = [&](Clock::duration d) {
    return static_cast<double>(batches * 100) / std::chrono::duration<double>(d).count();
  };
  return {rate(spent[0]), rate(spent[1])};
}

namespace {

// A reader of one page after another of a store's whole log, from a random start.
class PageReader {
 public:
  PageReader(factum::EventStore& store, std::size_t pages, std::size_t page_size,
             std::mt19937_64& rng)
      : store_(store), page_size_(page_size) {
    const factum::Position head = store.head_position();
    const std::uint64_t span = static_cast<std::uint64_t>(pages) * page_size;
    if (head < span) throw std::runtime_error("scale: the log is shorter than the pages to read");
    from_ = std::uniform_int_distribution<factum::Position>(1, head - span + 1)(rng);
  }
  // Reads the next page; returns how long it took.
  Clock::duration next() {
    std::size_t n = 0;
    const auto start = Clock::now();
    store_.visit_all(from_, [&](const factum::EventView& e) {
      bytes_ += e.payload.size();
      return ++n < page_size_;
    });
    const auto took = Clock::now() - start;
    if (n != page_size_) throw std::runtime_error("scale: a page came back short");
    if (bytes_ == 0) throw std::runtime_error("scale: the pages held no payload");
    from_ += n;
    return took;
  }

 private:
  factum::EventStore& store_;
  std::size_t page_size_;
  factum::Position from_ = 1;
  std::uint64_t bytes_ = 0;  // looked at, so that the reads are not optimised away
};

}  // namespace

PairedRates read_pages(factum::EventStore& small, factum::EventStore& large, std::size_t pages,
                       std::size_t page_size, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  PageReader readers[2] = {PageReader(small, pages, page_size, rng),
                           PageReader(large, pages, page_size, rng)};
  Clock::duration spent[2]{};
  for (std::size_t i = 0; i < 2 * pages; ++i) {
    check_interrupt();
    const std::size_t side = (i + i / 2) % 2;  // small, large, large, small, ...
    spent[side] += readers[side].next();
  }
  const auto rate = [&](Clock::duration d) {
    return static_cast<double>(pages * page_size) / std::chrono::duration<double>(d).count();
  };
  return {rate(spent[0]), rate(spent[1])};
}

}  // namespace bench
