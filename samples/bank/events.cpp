// samples/bank/events.cpp — registration of the bank's events and small helpers on them.
#include "events.hpp"

namespace bank {

void register_events(factum::EventRegistry& registry) {
  registry.add<AccountOpened>()
      .add<Deposited>()
      .add<Withdrawn>()
      .add<TransferDebited>()
      .add<TransferCredited>()
      .add<TransferReversed>()
      .add<AccountClosed>();
  registry.upcast<AccountOpenedV1, AccountOpened>([](const AccountOpenedV1& old) {
    return AccountOpened{OwnerName::legacy(old.owner), old.overdraft_limit, old.at};
  });
  registry.validate();
}

std::vector<std::string> event_type_names() {
  return {std::string(AccountOpened::event_type),    std::string(Deposited::event_type),
          std::string(Withdrawn::event_type),        std::string(TransferDebited::event_type),
          std::string(TransferCredited::event_type), std::string(TransferReversed::event_type),
          std::string(AccountClosed::event_type)};
}

factum::Timestamp event_time(const BankEvent& event) {
  return std::visit([](const auto& e) { return e.at; }, event);
}

std::string owner_subject(std::string_view account_id) {
  return "owner:" + std::string(account_id);
}

std::optional<std::string> account_of_subject(std::string_view subject) {
  constexpr std::string_view kPrefix = "owner:";
  if (!subject.starts_with(kPrefix) || subject.size() == kPrefix.size()) return std::nullopt;
  return std::string(subject.substr(kPrefix.size()));
}

std::string reference_tag(std::string_view reference) {
  return "payment:" + std::string(reference);
}

std::string stream_of(std::string_view account_id) { return "account-" + std::string(account_id); }

std::string account_of(std::string_view stream_id) {
  const std::size_t dash = stream_id.find('-');
  return std::string(dash == std::string_view::npos ? stream_id : stream_id.substr(dash + 1));
}

}  // namespace bank
