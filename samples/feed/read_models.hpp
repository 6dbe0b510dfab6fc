// samples/feed/read_models.hpp — the feed's projections, read models in the store's file,
// run inline by FeedService (so a command's effect is visible when it returns):
//
//   feeds    feeds(user, post, author, at): each post fanned out to every follower of its
//            author AT THE TIME OF POSTING. The projection keeps its own copy of who follows
//            whom (feed_audience), folded in log order, so a rebuild from position 1 gives
//            the same rows. Following someone later does not backfill their older posts, and
//            unfollowing does not remove posts already delivered (fan-out on write: a feed
//            is a mailbox, as in most social networks' home timelines).
//   posts    posts(post, author, text, at, likes); text is '' once the author is forgotten
//            (Projection::forget; a rebuild decodes it as erased and writes '' again)
//   follows  users(user, joined) and follows(follower, followee, since)
//   profiles profiles(handle, name): display names; a forgotten user's row is deleted
//
// Only posts and profiles hold personal data (docs/erasure.md); the others hold user
// names, which are ids.
//
// Times are stored as integer microseconds since the Unix epoch (UTC): the events' `at`.
// Queries read the logical names (views on the serving generation, projection.hpp).
//
// Thread-safety: the engine calls each projection from one thread at a time; the registry
// must be fully registered before the projections run.
#pragma once

#include <factum/eventstore/event_registry.hpp>
#include <factum/projections/projection.hpp>

#include <memory>
#include <vector>

namespace feed {

// The four projections above, decoding events through `registry` (which must outlive them).
std::vector<std::shared_ptr<factum::Projection>> make_projections(
    const factum::EventRegistry& registry);

}  // namespace feed
