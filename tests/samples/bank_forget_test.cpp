// tests/samples/bank_forget_test.cpp — factum-bank and personal data (issue 31): owners' names
// are stored encrypted under the subject "owner:<account>"; `forget ACCOUNT` erases a closed
// account's owner from every output that showed the name, keeps every balance and a passing
// audit, and refuses an open account. Runs the binary (FACTUM_BANK_BIN); a store of the
// schema-1 layout is written through the library.
#include <doctest/doctest.h>

#include <factum/eventstore/personal.hpp>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "events.hpp"
#include "personal_store.hpp"
#include "program_folder.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace {

using Run = factum::test::ProgramRun;
using factum::test::contains;
using factum::test::slurp;

constexpr const char* kAnn = "Ann Smith";

class Folder : public factum::test::BankFolder {
 public:
  std::string stored_bytes() const { return factum::test::stored_bytes(db()); }
  std::string payloads() const { return factum::test::stored_payloads(db()); }
};

// acc-1 (Ann Smith) pays everything to acc-2 (Bob Jones) and is closed; acc-2 stays open.
void closed_and_open(const Folder& f) {
  f.ok({"open", "acc-1", kAnn});
  f.ok({"deposit", "acc-1", "100"});
  f.ok({"open", "acc-2", "Bob Jones"});
  f.ok({"transfer", "acc-1", "acc-2", "100"});
  f.ok({"close", "acc-1"});
}

}  // namespace

TEST_CASE(
    "forget ACCOUNT erases a closed account's owner, and balances, statements and audit stay") {
  Folder f;
  closed_and_open(f);
  CHECK(contains(f.ok({"accounts"}), kAnn));
  CHECK(contains(f.ok({"statement", "acc-1"}), "owner Ann Smith"));
  const std::string payloads = f.payloads();
  CHECK_FALSE(contains(payloads, kAnn));
  CHECK_FALSE(contains(payloads, "Bob Jones"));
  CHECK(contains(payloads, "owner:acc-1"));  // the subject, an id, is plain
  const std::string audit_before = f.ok({"audit"});
  CHECK(contains(audit_before, "audit: OK"));

  const std::string said = f.ok({"forget", "acc-1"});
  CHECK(contains(said, "forgot the owner of acc-1 (subject owner:acc-1"));
  CHECK(contains(said, "acc-1  <erased>  balance 0.00"));

  const std::string accounts = f.ok({"accounts"});
  CHECK_FALSE(contains(accounts, kAnn));
  CHECK(contains(accounts, "<erased>"));
  CHECK(contains(accounts, "Bob Jones"));  // the other owner is untouched
  CHECK(contains(accounts, "100.00"));     // acc-2's balance
  const std::string statement = f.ok({"statement", "acc-1"});
  CHECK_FALSE(contains(statement, kAnn));
  CHECK(contains(statement, "Statement of acc-1 (<erased>, closed): 4 lines"));
  CHECK(contains(statement, "owner <erased>"));
  CHECK(contains(f.ok({"balance", "acc-2"}), "balance 100.00"));
  CHECK(contains(f.ok({"replay-with-new-logic"}), "<erased>"));
  const std::string audit_after = f.ok({"audit"});
  CHECK(contains(audit_after, "audit: OK"));
  CHECK(contains(audit_after, "hash chain intact"));
  CHECK_FALSE(contains(f.stored_bytes(), kAnn));
}

TEST_CASE("forget refuses an open account, saying why, and unknown or forgotten owners") {
  Folder f;
  closed_and_open(f);
  f.refused({"forget", "acc-2"},
            "account acc-2 is open: the bank keeps the name of whom it holds money for while "
            "the account is open; close it first");
  f.refused({"forget", "acc-9"}, "no account acc-9");
  f.refused({"forget", "bad id!"}, "invalid account id");
  f.ok({"forget", "acc-1"});
  f.refused({"forget", "acc-1"}, "the owner of account acc-1 was forgotten already");
  CHECK(contains(f.ok({"balance", "acc-2"}), "Bob Jones"));
  CHECK(contains(f.ok({"audit"}), "audit: OK"));
}

TEST_CASE("the key file is made beside the store, and without it a store with keys is refused") {
  Folder f;
  closed_and_open(f);
  const std::filesystem::path kek = f.db().string() + ".kek";
  REQUIRE(std::filesystem::exists(kek));
  CHECK(std::filesystem::file_size(kek) == 32);
  CHECK((std::filesystem::status(kek).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
  std::filesystem::rename(kek, f.db().string() + ".moved");
  f.refused({"balance", "acc-2"}, "is missing");
  CHECK(contains(f.ok({"--kek", f.db().string() + ".moved", "balance", "acc-2"}), "Bob Jones"));
  f.refused({"--db", "postgresql://nobody@127.0.0.1:1/none", "accounts"}, "needs --kek FILE");
}

TEST_CASE("a store of the schema-1 layout opens, audits, and refuses to forget a plain name") {
  Folder f;
  {
    auto store = factum::EventStore::open(f.db());
    factum::EventRegistry old;
    old.add<bank::AccountOpenedV1>().add<bank::AccountClosed>();
    store.append("account-old", factum::ExpectedVersion::no_stream(), old,
                 bank::AccountOpenedV1{"Olga Plain", bank::Money{}, {}});
    store.append("account-old", factum::ExpectedVersion::exact(1), old, bank::AccountClosed{});
  }
  CHECK(contains(f.ok({"balance", "old"}), "Olga Plain"));
  CHECK(contains(f.ok({"audit"}), "audit: OK"));
  f.refused({"forget", "old"}, "opened before factum-bank kept owner names as personal data");
  f.ok({"open", "acc-1", kAnn});
  f.ok({"close", "acc-1"});
  f.ok({"forget", "acc-1"});
  CHECK(contains(f.ok({"audit"}), "audit: OK"));
}
