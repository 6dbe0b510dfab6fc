// Seams for tests that must stop a projection's thread at a chosen point, deterministically
// (no sleeps): set a hook, and the thread calls it there. Not for production use; with no hook
// set, each point costs one atomic load.
//
// Thread-safety: set_after_batch_read() from any thread; the hook runs on projection threads,
// possibly several at once, and must be thread-safe itself.
#pragma once

#include <functional>
#include <string>

namespace factum::detail {

// `hook(projection)` runs on a projection's thread after a batch of a store-target projection
// has read its events (outside any write transaction) and before the write transaction that
// applies them begins. An empty function removes the hook.
void set_after_batch_read(std::function<void(const std::string& projection)> hook);
void after_batch_read(const std::string& projection);

}  // namespace factum::detail
