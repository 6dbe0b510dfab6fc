// Must not compile: a typed append where event_registry.hpp is not included. The "headers" test
// headers.typed_append_needs_event_registry checks that the compiler refuses it with the
// static_assert of event_store.hpp, which names the header to include.
#include <factum/eventstore/event_store.hpp>
#include <string_view>

struct ThingOpened {
  static constexpr std::string_view event_type = "thing.Opened";
  template <class Archive>
  void serialize(Archive&, unsigned) {}
};

factum::AppendResult open_thing(factum::EventStore& store, const factum::EventRegistry& registry) {
  return store.append("thing-1", factum::ExpectedVersion::no_stream(), registry, ThingOpened{});
}
