// samples/bank/commands.hpp — what each factum-bank subcommand does, once its command line is
// parsed (main.cpp): open the store, run the Bank, print the result on stdout.
//
// Each returns the process's exit code (0, or 1 for an audit that finds differences) and
// throws for every error (a malformed amount, an unknown account, a refused command, a file
// that is not a bank): main prints the message on one line and exits 1. Commands that fail
// write nothing: input is checked before the store is opened or written, commands are refused
// by the aggregate before they are saved, and a missing file is never created except by
// `open` and `demo`. The one error that leaves events behind is a transfer whose target
// refuses the credit: its debit and the compensating reversal are part of the history.
//
// Thread-safety: one command per process.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "demo.hpp"

namespace bank {

int demo_command(const std::filesystem::path& db, const DemoOptions& options, bool fresh);
int open_command(const std::filesystem::path& db, const std::string& account,
                 const std::string& owner, const std::string& limit);
int deposit_command(const std::filesystem::path& db, const std::string& account,
                    const std::string& amount, const std::string& memo,
                    const std::string& reference = {});
int withdraw_command(const std::filesystem::path& db, const std::string& account,
                     const std::string& amount, const std::string& memo,
                     const std::string& reference = {});
// `reference` (deposit, withdraw, transfer): the payment's reference, used once across all
// accounts (Bank::deposit); none when empty.
int transfer_command(const std::filesystem::path& db, const std::string& from,
                     const std::string& to, const std::string& amount, const std::string& memo,
                     const std::string& reference = {});
int close_command(const std::filesystem::path& db, const std::string& account);
// Forgets the owner of a closed account (Bank::forget): the name is erased, balances stay.
int forget_command(const std::filesystem::path& db, const std::string& account);
int balance_command(const std::filesystem::path& db, const std::string& account);
int statement_command(const std::filesystem::path& db, const std::string& account,
                      std::size_t last);
int accounts_command(const std::filesystem::path& db);
int audit_command(const std::filesystem::path& db);
int replay_command(const std::filesystem::path& db, std::size_t top, bool rebuild);

}  // namespace bank
