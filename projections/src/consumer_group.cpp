#include "factum/projections/consumer_group.hpp"

#include "factum/eventstore/errors.hpp"

namespace factum {

std::uint32_t group_member_for(std::string_view stream, std::uint32_t members) noexcept {
  return members == 0 ? 0 : static_cast<std::uint32_t>(stable_hash(stream) % members);
}

std::string group_checkpoint_name(const ConsumerGroupOptions& options, std::uint32_t index) {
  return "group:" + options.group + "/" + std::to_string(index) + "of" +
         std::to_string(options.members);
}

Subscription join_group(EventStore& store, const ConsumerGroupOptions& options, std::uint32_t index,
                        Subscription::Handler handler) {
  if (options.group.empty() || options.category.empty()) {
    throw InvalidArgument("factum: a consumer group needs a name and a category");
  }
  if (options.members == 0 || index >= options.members) {
    throw InvalidArgument("factum: consumer group '" + options.group + "' has " +
                          std::to_string(options.members) + " members; there is no member " +
                          std::to_string(index));
  }
  SubscriptionOptions sub;
  sub.filter = SubscriptionFilter::category(options.category);
  sub.filter.partitions = options.members;
  sub.filter.partition = index;
  sub.checkpoint = group_checkpoint_name(options, index);
  sub.batch_size = options.batch_size;
  sub.poll_interval = options.poll_interval;
  sub.on_error = options.on_error;
  return Subscription(store, std::move(sub), std::move(handler));
}

}  // namespace factum
