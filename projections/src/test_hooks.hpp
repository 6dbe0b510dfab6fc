// Seams for tests that must stop a projection's thread at a chosen point, deterministically
// (no sleeps): set a hook, and the thread calls it there. Not for production use; with no hook
// set, each point costs one atomic load.
//
// Thread-safety: the setters from any thread; a hook runs on projection threads, possibly
// several at once, and must be thread-safe itself.
#pragma once

#include <functional>
#include <string>

namespace factum::detail {

// `hook(projection)` runs on a projection's thread after a batch of a store-target projection
// has read its events (outside any write transaction) and before the write transaction that
// applies them begins. An empty function removes the hook.
void set_after_batch_read(std::function<void(const std::string& projection)> hook);
void after_batch_read(const std::string& projection);

// `hook(projection)` runs on a projection's thread after the write transaction of a batch of a
// store-target projection has committed and before memory takes its decision (what status()
// shows of it). An empty function removes the hook.
void set_after_batch_commit(std::function<void(const std::string& projection)> hook);
void after_batch_commit(const std::string& projection);

}  // namespace factum::detail
