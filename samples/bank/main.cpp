// samples/bank/main.cpp — the command line of factum-bank: CLI11 subcommands, each handing its
// arguments to commands.hpp. Exit codes: 0 success; 1 an error (one line on stderr,
// "factum-bank: <message>", escaped), output that did not reach stdout (checked_stdout.hpp), or
// an audit that found differences; 2 a usage error (cli_errors.hpp).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <iostream>
#include <string>

#include "checked_stdout.hpp"
#include "cli_errors.hpp"
#include "commands.hpp"
#include "store_file.hpp"

namespace {

struct Args {
  std::string db = "bank.db";
  std::string kek;
  std::string account, owner, to, amount, memo, reference, limit = "0";
  std::size_t last = 0, top = 10;
  bool fresh = false, rebuild = false;
  bank::DemoOptions demo;
  std::function<int()> action;
};

CLI::App* command(CLI::App& app, const char* name, const char* what, Args& args,
                  std::function<int()> action) {
  CLI::App* sub = app.add_subcommand(name, what);
  sub->callback([&args, action = std::move(action)] { args.action = action; });
  return sub;
}

void account_arg(CLI::App* sub, Args& args) {
  sub->add_option("ACCOUNT", args.account, "the account's id, e.g. acc-1")->required();
}

void add_money_commands(CLI::App& app, Args& a) {
  auto* open = command(app, "open", "open an account", a,
                       [&a] { return bank::open_command(a.db, a.account, a.owner, a.limit); });
  account_arg(open, a);
  open->add_option("OWNER", a.owner, "the owner's name")->required();
  open->add_option("--limit", a.limit, "the overdraft limit, e.g. 500.00")->capture_default_str();
  auto* deposit = command(app, "deposit", "put money into an account", a, [&a] {
    return bank::deposit_command(a.db, a.account, a.amount, a.memo.empty() ? "deposit" : a.memo,
                                 a.reference);
  });
  auto* withdraw = command(app, "withdraw", "take money out of an account", a, [&a] {
    return bank::withdraw_command(a.db, a.account, a.amount, a.memo.empty() ? "withdrawal" : a.memo,
                                  a.reference);
  });
  for (CLI::App* sub : {deposit, withdraw}) {
    account_arg(sub, a);
    sub->add_option("AMOUNT", a.amount, "the amount, e.g. 100 or 100.50")->required();
    sub->add_option("--memo", a.memo, "what it is for");
  }
  auto* transfer = command(app, "transfer", "move money between accounts", a, [&a] {
    return bank::transfer_command(a.db, a.account, a.to, a.amount,
                                  a.memo.empty() ? "transfer" : a.memo, a.reference);
  });
  transfer->add_option("FROM", a.account, "the account to debit")->required();
  transfer->add_option("TO", a.to, "the account to credit")->required();
  transfer->add_option("AMOUNT", a.amount, "the amount, e.g. 100 or 100.50")->required();
  transfer->add_option("--memo", a.memo, "what it is for");
  for (CLI::App* sub : {deposit, withdraw, transfer}) {
    sub->add_option("--reference", a.reference,
                    "the payment's reference, used once across all accounts (e.g. INV-2024-0042)");
  }
  account_arg(command(app, "close", "close an account (its balance must be zero)", a,
                      [&a] { return bank::close_command(a.db, a.account); }),
              a);
  account_arg(command(app, "forget",
                      "forget the owner of a closed account: their name is erased, the balances "
                      "and the audit stay",
                      a, [&a] { return bank::forget_command(a.db, a.account); }),
              a);
}

void add_read_commands(CLI::App& app, Args& a) {
  account_arg(command(app, "balance", "show an account's balance", a,
                      [&a] { return bank::balance_command(a.db, a.account); }),
              a);
  auto* statement = command(app, "statement", "show an account's statement", a,
                            [&a] { return bank::statement_command(a.db, a.account, a.last); });
  account_arg(statement, a);
  statement->add_option("--last", a.last, "only the last N lines (0: all)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1000000}));
  command(app, "accounts", "list every account", a, [&a] { return bank::accounts_command(a.db); });
  command(app, "audit", "rebuild every account from its events and check the read models", a,
          [&a] { return bank::audit_command(a.db); });
  auto* replay =
      command(app, "replay-with-new-logic", "replay the history under a new fee and interest rule",
              a, [&a] { return bank::replay_command(a.db, a.top, a.rebuild); });
  replay->add_option("--top", a.top, "how many accounts to show")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1000000}));
  replay->add_flag("--rebuild", a.rebuild, "build the new rule's read model again from scratch");
}

void add_demo_command(CLI::App& app, Args& a) {
  auto* demo = command(app, "demo", "create a year of made-up history, then audit it", a,
                       [&a] { return bank::demo_command(a.db, a.demo, a.fresh); });
  demo->add_flag("--fresh", a.fresh,
                 "delete the store file first if it holds events (files only: on a PostgreSQL "
                 "URI the demo wants a schema without events)");
  demo->add_option("--accounts", a.demo.accounts, "accounts to open")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  demo->add_option("--operations", a.demo.operations, "operations to attempt")
      ->check(CLI::Range(0, 10000000))
      ->capture_default_str();
  demo->add_option("--seed", a.demo.seed, "random seed")->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  factum::samples::CheckedStdout out;  // what is printed must reach stdout, or exit 1
  CLI::App app{"factum-bank: accounts as event streams on factum, with read models and audit"};
  app.name("factum-bank");
  Args args;
  app.add_option("--db", args.db,
                 "the bank's store file, or a PostgreSQL URI (postgresql://...; the store lives "
                 "in its search_path's schema)")
      ->capture_default_str();
  CLI::Option* kek =
      app.add_option("--kek", args.kek,
                     "the key file (32 random bytes) that wraps the keys of the owners' names "
                     "(default: the store file's path + \".kek\", created when needed; a "
                     "PostgreSQL URI needs one)");
  app.require_subcommand(1);
  add_demo_command(app, args);
  add_money_commands(app, args);
  add_read_commands(app, args);
  int code = 0;
  try {
    app.parse(argc, argv);
    if (kek->count() > 0) bank::set_key_file(std::filesystem::path(args.kek));
    code = args.action();
  } catch (const CLI::ParseError& e) {
    code = factum::samples::report_parse_error(app, e, std::cout, std::cerr);
    if (code != 0) return code;  // its one line is said
  } catch (const std::exception& e) {
    std::cout.flush();
    return factum::samples::report_error(std::cerr, "factum-bank", e.what());
  }
  return out.finish("factum-bank", code, std::cerr);  // 0, or 1 for an audit that failed
}
