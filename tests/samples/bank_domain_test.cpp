// tests/samples/bank_domain_test.cpp — the bank sample's domain rules through its API: the
// Account invariants, refused commands writing nothing, and the transfer saga with its
// compensation.
#include <doctest/doctest.h>

#include "bank_fixture.hpp"

using bank::Money;
using bank::Refused;
using bank::test::BankFixture;

namespace {

// Runs `fn`, which must throw Refused for `reason` naming `account`, and checks that it wrote
// nothing.
template <class Fn>
void check_refused(BankFixture& f, Fn&& fn, Refused::Reason reason, const std::string& account) {
  const factum::Position head = f.store().head_position();
  try {
    fn();
    FAIL("not refused");
  } catch (const Refused& e) {
    CHECK(e.reason() == reason);
    CHECK(e.account() == account);
    CHECK(std::string(e.what()).find(account) != std::string::npos);
  }
  CHECK(f.store().head_position() == head);
}

}  // namespace

TEST_CASE("an account opens once, opening it again is refused, naming it") {
  BankFixture f;
  f.bank.open("acc-1", "Ann", BankFixture::m("100"));
  const bank::Account a = f.bank.load("acc-1");
  CHECK(a.is_open());
  CHECK(a.owner() == "Ann");
  CHECK(a.overdraft_limit() == BankFixture::m("100"));
  check_refused(
      f, [&] { f.bank.open("acc-1", "Bob"); }, Refused::Reason::already_open, "acc-1");
}

TEST_CASE("commands on an unknown account are refused and write nothing") {
  BankFixture f;
  f.open_with("acc-1", "10");
  check_refused(
      f, [&] { f.bank.deposit("nobody", BankFixture::m("1")); }, Refused::Reason::unknown_account,
      "nobody");
  check_refused(
      f, [&] { f.bank.close("nobody"); }, Refused::Reason::unknown_account, "nobody");
  CHECK_FALSE(f.bank.load("nobody").exists());
}

TEST_CASE("malformed account ids, owners, memos and non-positive amounts are refused") {
  BankFixture f;
  f.open_with("acc-1", "10");
  check_refused(
      f, [&] { f.bank.open("bad/id", "Ann"); }, Refused::Reason::invalid, "bad/id");
  check_refused(
      f, [&] { f.bank.open("acc-2", ""); }, Refused::Reason::invalid, "acc-2");
  check_refused(
      f, [&] { f.bank.deposit("acc-1", Money{}); }, Refused::Reason::invalid, "acc-1");
  check_refused(
      f, [&] { f.bank.withdraw("acc-1", Money::from_minor(-5)); }, Refused::Reason::invalid,
      "acc-1");
  check_refused(
      f, [&] { f.bank.deposit("acc-1", BankFixture::m("1"), "two\nlines"); },
      Refused::Reason::invalid, "acc-1");
}

TEST_CASE("a withdrawal may use the overdraft limit but not go past it") {
  BankFixture f;
  f.open_with("acc-1", "100", "50");
  f.bank.withdraw("acc-1", BankFixture::m("150"));
  CHECK(f.bank.load("acc-1").balance() == BankFixture::m("0") - BankFixture::m("50"));
  check_refused(
      f, [&] { f.bank.withdraw("acc-1", BankFixture::m("0.01")); }, Refused::Reason::overdraft,
      "acc-1");
}

TEST_CASE("an account closes only with a zero balance") {
  BankFixture f;
  f.open_with("acc-1", "20");
  check_refused(
      f, [&] { f.bank.close("acc-1"); }, Refused::Reason::not_empty, "acc-1");
  f.bank.withdraw("acc-1", BankFixture::m("20"));
  f.bank.close("acc-1");
  CHECK(f.bank.load("acc-1").status() == "closed");
}

TEST_CASE("a closed account refuses everything but reads") {
  BankFixture f;
  f.open_with("acc-1", "0");
  f.open_with("acc-2", "10");
  f.bank.close("acc-1");
  const auto closed = Refused::Reason::closed;
  check_refused(
      f, [&] { f.bank.deposit("acc-1", BankFixture::m("1")); }, closed, "acc-1");
  check_refused(
      f, [&] { f.bank.withdraw("acc-1", BankFixture::m("1")); }, closed, "acc-1");
  check_refused(
      f, [&] { f.bank.transfer("acc-1", "acc-2", BankFixture::m("1")); }, closed, "acc-1");
  check_refused(
      f, [&] { f.bank.close("acc-1"); }, closed, "acc-1");
  CHECK(f.bank.account("acc-1")->status == "closed");
  CHECK(f.bank.statement("acc-1").size() == 2);
}

TEST_CASE("a balance never passes the largest amount") {
  BankFixture f;
  f.open_with("acc-1", "999999999999.99");
  check_refused(
      f, [&] { f.bank.deposit("acc-1", BankFixture::m("0.01")); }, Refused::Reason::balance_limit,
      "acc-1");
}

TEST_CASE("a transfer debits the source and credits the target, its legs tied by metadata") {
  BankFixture f;
  f.open_with("acc-1", "100");
  f.open_with("acc-2", "5");
  const bank::TransferResult t = f.bank.transfer("acc-1", "acc-2", BankFixture::m("30"), "rent");
  REQUIRE(t.completed());
  CHECK_FALSE(t.reversal_id);
  CHECK(f.bank.load("acc-1").balance() == BankFixture::m("70"));
  CHECK(f.bank.load("acc-2").balance() == BankFixture::m("35"));
  const auto debit = f.store().read_event(t.debit_id);
  const auto credit = f.store().read_event(*t.credit_id);
  REQUIRE(debit);
  REQUIRE(credit);
  CHECK(debit->stream_id == "account-acc-1");
  CHECK(debit->type == "bank.TransferDebited");
  CHECK(credit->stream_id == "account-acc-2");
  CHECK(credit->type == "bank.TransferCredited");
  CHECK(debit->metadata.correlation_id == t.transfer_id);
  CHECK(credit->metadata.correlation_id == t.transfer_id);
  CHECK(credit->metadata.causation_id == t.debit_id);
  CHECK(debit->metadata.actor == "test");
}

TEST_CASE("a transfer to a closed account is reversed by an event that compensates the debit") {
  BankFixture f;
  f.open_with("acc-1", "100");
  f.open_with("acc-2", "0");
  f.bank.close("acc-2");
  const factum::Position head = f.store().head_position();
  const bank::TransferResult t = f.bank.transfer("acc-1", "acc-2", BankFixture::m("30"));
  CHECK_FALSE(t.completed());
  REQUIRE(t.reversal_id);
  CHECK(t.refusal.find("acc-2 is closed") != std::string::npos);
  CHECK(f.store().head_position() == head + 2);  // the debit and its reversal
  CHECK(f.bank.load("acc-1").balance() == BankFixture::m("100"));
  const auto reversal = f.store().read_event(*t.reversal_id);
  REQUIRE(reversal);
  CHECK(reversal->type == "bank.TransferReversed");
  CHECK(reversal->stream_id == "account-acc-1");
  CHECK(reversal->metadata.compensates == t.debit_id);
  CHECK(reversal->metadata.causation_id == t.debit_id);
  CHECK(reversal->metadata.correlation_id == t.transfer_id);
  const std::vector<factum::RecordedEvent> found = f.store().compensations_of(t.debit_id);
  REQUIRE(found.size() == 1);
  CHECK(found.front().id == *t.reversal_id);
}

TEST_CASE("a transfer the target cannot hold is reversed too") {
  BankFixture f;
  f.open_with("acc-1", "100");
  f.open_with("acc-2", "999999999999.99");
  const bank::TransferResult t = f.bank.transfer("acc-1", "acc-2", BankFixture::m("1"));
  CHECK_FALSE(t.completed());
  CHECK(f.bank.load("acc-1").balance() == BankFixture::m("100"));
}

TEST_CASE("a transfer is refused before anything is written when it cannot start") {
  BankFixture f;
  f.open_with("acc-1", "100");
  f.open_with("acc-2", "0");
  check_refused(
      f, [&] { f.bank.transfer("acc-1", "acc-9", BankFixture::m("1")); },
      Refused::Reason::unknown_account, "acc-9");
  check_refused(
      f, [&] { f.bank.transfer("acc-1", "acc-2", BankFixture::m("100.01")); },
      Refused::Reason::overdraft, "acc-1");
  check_refused(
      f, [&] { f.bank.transfer("acc-1", "acc-1", BankFixture::m("1")); }, Refused::Reason::invalid,
      "acc-1");
}

TEST_CASE("snapshots are a cache: deleting them changes no loaded account") {
  BankFixture f;
  f.open_with("acc-1", "1");
  for (int i = 0; i < 120; ++i) f.bank.deposit("acc-1", BankFixture::m("1"));
  factum::SnapshotStore snapshots(f.store());
  CHECK(snapshots.count("account-acc-1") > 0);
  const Money before = f.bank.load("acc-1").balance();
  snapshots.delete_all();
  CHECK(f.bank.load("acc-1").balance() == before);
  CHECK(before == BankFixture::m("121"));
}
