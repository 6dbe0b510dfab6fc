// bench/scale.hpp — the pieces of factum_bench's scale case: does a batch, or a page, cost more
// when the log is large? The same work timed on a log of 10,000 events and on one of 1,000,000
// (docs/performance.md, "Costs that do not grow with the log"). Backend-neutral: everything
// goes through EventStore. On a shared machine the two sides are timed in turns, one batch or
// one page each, so that both see the same load.
//
// Thread-safety: none; the stores are used from the calling thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "factum/factum.hpp"

namespace bench {

// Appends events like `model` (each with a fresh id) to `store` until its head is at least
// `events`: 1,000 per call (append_multi), 10 to each of 100 streams, round-robin over 1,000
// streams "scale-0" ... "scale-999".
void fill_to(factum::EventStore& store, std::uint64_t events, const factum::EventData& model);

// Events per second on each of two stores, measured in turns.
struct PairedRates {
  double small = 0;
  double large = 0;
};

// `batches` appends of 100 events like `model` to each store, alternating between the stores,
// each to a new stream "batch-<run>-<n>" (expecting no stream): the writer looks up the stream
// and every event id in the log before it writes, so that a look-up whose plan read the log
// whole would show here.
PairedRates append_batches(factum::EventStore& small, factum::EventStore& large,
                           std::size_t batches, const factum::EventData& model,
                           const std::string& run);

// `pages` reads of one page (`page_size` events, one visit_all each) of each store's whole log,
// one after the other as a reader catching up reads them, each from a position drawn at random
// (seeded with `seed`) among those that leave all the pages before the head; alternating
// between the stores.
PairedRates read_pages(factum::EventStore& small, factum::EventStore& large, std::size_t pages,
                       std::size_t page_size, std::uint64_t seed);

}  // namespace bench
