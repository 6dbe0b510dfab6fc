// docs/examples/events_example.cpp — the complete program of docs/events.md: typed events,
// an upcaster and an alias for history written by older code, typed append, typed reads with
// a visitor, caused_by, unknown and corrupt events. It checks its own results and exits 1 on
// any mismatch (ctest runs it, label "docs").
#include <factum/factum.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace shop {

enum class Currency : std::uint16_t { eur = 978, usd = 840 };  // fixed underlying type

struct Money {  // a nested struct: no event_type, no version of its own
  std::int64_t minor = 0;
  Currency currency = Currency::eur;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& minor& currency;
  }
  friend bool operator==(const Money&, const Money&) = default;
};

struct CartOpened {
  static constexpr std::string_view event_type = "shop.CartOpened";  // schema version 1
  std::string customer;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& customer;
  }
};

// The current layout of an item added to a cart: version 2.
struct ItemAdded {
  static constexpr std::string_view event_type = "shop.ItemAdded";
  static constexpr std::uint32_t schema_version = 2;
  std::string sku;
  std::uint32_t quantity = 1;
  Money unit_price;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& sku& quantity& unit_price;
  }
};

// How version 1 code wrote it, under its old name: one item, a price in euro cents.
struct ProductAddedV1 {
  static constexpr std::string_view event_type = "shop.ProductAdded";
  static constexpr std::uint32_t schema_version = 1;
  std::string sku;
  std::int64_t price_cents = 0;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& sku& price_cents;
  }
};

struct CartCheckedOut {
  static constexpr std::string_view event_type = "shop.CartCheckedOut";
  std::chrono::sys_time<std::chrono::microseconds> at{};  // explicit period: portable
  std::vector<std::string> coupons;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& at& coupons;
  }
};

struct OrderPlaced {
  static constexpr std::string_view event_type = "shop.OrderPlaced";
  std::string cart;
  Money total;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar& cart& total;
  }
};

using CartEvent = std::variant<CartOpened, ItemAdded, CartCheckedOut>;

// What this version of the code knows, and how older history becomes today's events.
void register_events(factum::EventRegistry& registry) {
  registry.add<CartOpened>().add<ItemAdded>().add<CartCheckedOut>().add<OrderPlaced>();
  registry.alias<ItemAdded>("shop.ProductAdded");  // renamed in version 2
  registry.upcast<ProductAddedV1, ItemAdded>([](const ProductAddedV1& old) {
    return ItemAdded{old.sku, 1, Money{old.price_cents, Currency::eur}};
  });
  registry.validate();  // a gap in an upcaster chain fails here, at start-up
}

}  // namespace shop

namespace {

int failures = 0;

void check(bool ok, std::string_view what) {
  std::cout << (ok ? "ok:     " : "FAILED: ") << what << '\n';
  if (!ok) ++failures;
}

std::filesystem::path fresh_directory() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("factum-events-example-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  return dir;
}

void run(factum::EventStore& store) {
  using namespace shop;
  {
    // History written by version 1 of the code, which knew only these two types.
    factum::EventRegistry v1;
    v1.add<CartOpened>().add<ProductAddedV1>();
    store.append("cart-7", factum::ExpectedVersion::no_stream(), v1, CartOpened{"ada"},
                 ProductAddedV1{"tea-250g", 450});
  }

  factum::EventRegistry registry;
  register_events(registry);

  // Typed append: each event is encoded with a fresh id; the metadata goes on each of them.
  factum::Metadata by_ada;
  by_ada.actor = "ada";
  store.append("cart-7", factum::ExpectedVersion::exact(2), registry, by_ada,
               ItemAdded{"mug", 2, Money{900, Currency::eur}},
               CartCheckedOut{factum::Timestamp(std::chrono::microseconds(1'796'214'559'620'741)),
                              {"WELCOME10"}});

  // Typed read: one alternative per type, dispatched with a visitor. The version 1 event
  // comes back as today's ItemAdded.
  std::string customer;
  std::int64_t total = 0;
  std::uint32_t items = 0;
  std::optional<factum::RecordedEvent> checkout;
  for (const auto& d : registry.typed<CartEvent>(store.read_stream("cart-7"))) {
    std::visit(factum::overloaded{
                   [&](const CartOpened& e) { customer = e.customer; },
                   [&](const ItemAdded& e) {
                     total += e.unit_price.minor * e.quantity;
                     items += e.quantity;
                   },
                   [&](const CartCheckedOut&) { checkout = d.envelope; },
               },
               d.event);
  }
  check(customer == "ada", "the cart belongs to ada");
  check(items == 3 && total == 450 + 2 * 900, "3 items for 22.50 EUR, the old event upcast");
  check(checkout.has_value(), "the checkout was read");
  if (!checkout) return;

  // One event, as one type: decode<E>.
  const CartCheckedOut c = registry.decode<CartCheckedOut>(*checkout);
  check(c.coupons == std::vector<std::string>{"WELCOME10"}, "decode<CartCheckedOut>");

  // An effect of the checkout, in another stream, linked to its cause.
  store.append("order-7", factum::ExpectedVersion::no_stream(), registry,
               factum::caused_by(*checkout), OrderPlaced{"cart-7", Money{total, Currency::eur}});
  const factum::RecordedEvent order = store.read_stream("order-7").to_vector().at(0);
  check(order.metadata.causation_id == checkout->id, "the order's causation id is the checkout");
  check(order.metadata.correlation_id == checkout->id, "... and so is its correlation id");
  check(order.metadata.actor == "ada", "... and the actor carries over");

  // A reader that handles only some types: skip the others, or be told about them.
  int opened = 0;
  for (const auto& d :
       registry.typed<std::variant<CartOpened>>(store.read_all(), factum::UnknownEvents::skip)) {
    opened += std::holds_alternative<CartOpened>(d.event) ? 1 : 0;
  }
  check(opened == 1, "UnknownEvents::skip leaves the other types out");
  try {
    for (const auto& d : registry.typed<std::variant<CartOpened>>(store.read_all())) (void)d;
    check(false, "UnknownEventTypeError by default");
  } catch (const factum::UnknownEventTypeError& e) {
    check(e.type() == "shop.ProductAdded", "UnknownEventTypeError names the type");
  }

  // Altered bytes are caught by the event's hash before anything is decoded.
  factum::RecordedEvent altered = *checkout;
  altered.payload.back() = std::byte{'X'};
  try {
    (void)registry.decode<CartCheckedOut>(altered);
    check(false, "CorruptEventError for altered bytes");
  } catch (const factum::CorruptEventError& e) {
    check(e.position() == checkout->position, "CorruptEventError names the position");
  }

  // A retry that must be recognised as one: encode once, and resend the same EventData.
  const std::vector<factum::EventData> batch{
      registry.encode(CartOpened{"bob"}),
      registry.encode(ItemAdded{"tea-250g", 1, Money{450, Currency::eur}})};
  const auto first = store.append("cart-8", factum::ExpectedVersion::no_stream(), batch);
  const auto again = store.append("cart-8", factum::ExpectedVersion::no_stream(), batch);
  check(again == first && store.stream_version("cart-8") == 2, "a resent batch is stored once");

  check(store.verify().ok(), "the hash chain is intact");
}

}  // namespace

int main() {
  const std::filesystem::path dir = fresh_directory();
  try {
    auto store = factum::EventStore::open(dir / "shop.db");
    run(store);
  } catch (const std::exception& e) {
    std::cout << "FAILED: " << e.what() << '\n';
    ++failures;
  }
  std::filesystem::remove_all(dir);
  std::cout << (failures == 0 ? "all checks passed\n" : "some checks failed\n");
  return failures == 0 ? 0 : 1;
}
