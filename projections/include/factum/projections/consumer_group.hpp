// factum/projections/consumer_group.hpp — consumer groups (point to point): the N members of
// a named group share one category; each stream goes to exactly one member, so the events of
// a stream are handled by one member, in order, while the members work in parallel (threads
// or processes).
//
//   // in each of 4 worker processes, with its own index 0..3:
//   factum::Subscription member = factum::join_group(
//       store, {.group = "mailers", .category = "order", .members = 4}, index,
//       [](const factum::RecordedEvent& e) { send_mail(e); });
//
// The member of a stream is stable_hash(stream id) % members (FNV-1a: the same on every
// machine), so every member agrees without talking to the others. Each member keeps its own
// durable checkpoint ("group:<group>/<index>of<members>"): delivery is at least once, as for
// any checkpointed Subscription. Changing `members` moves streams between members; drain the
// group first (every member at the head), then start the new size.
//
// Thread-safety: as Subscription.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "factum/projections/subscription.hpp"

namespace factum {

struct ConsumerGroupOptions {
  std::string group{};           // the group's name (part of each member's checkpoint name)
  std::string category{};        // the category the members share
  std::uint32_t members = 1;     // N
  std::size_t batch_size = 256;  // as SubscriptionOptions
  std::chrono::milliseconds poll_interval{100};        // as SubscriptionOptions
  std::function<void(std::exception_ptr)> on_error{};  // as SubscriptionOptions
};

// The member (0..members-1) that handles `stream`.
std::uint32_t group_member_for(std::string_view stream, std::uint32_t members) noexcept;

// The checkpoint name of member `index`.
std::string group_checkpoint_name(const ConsumerGroupOptions& options, std::uint32_t index);

// Starts member `index` of the group. Throws InvalidArgument (empty group or category,
// members 0, index >= members), and what Subscription's constructor throws.
Subscription join_group(EventStore& store, const ConsumerGroupOptions& options, std::uint32_t index,
                        Subscription::Handler handler);

}  // namespace factum
