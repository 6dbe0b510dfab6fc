// tools/cmd_export.cpp — `factum export DB [--from P] [--to P] [--with-keys] [-o FILE]`: the
// log as JSON Lines, one event per line (envelope, metadata, payload as base64, hash), in
// position order, in constant memory, then one trailer line (event count, head position and
// hash) written only when every event was exported: import tells a complete export from a cut
// one by it. Each event's hash link is checked on the way, so an export is always one
// `factum import` accepts; a damaged event stops it with exit 3, before the trailer. With
// --with-keys the subjects' data keys follow the events, still wrapped (docs/erasure.md).

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string_view>

#include "base64.hpp"
#include "cli.hpp"
#include "event_json.hpp"
#include "options.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "run_command.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

struct ExportOptions {
  std::string db;
  Position from = 1;
  Position to = 0;  // 0: the head
  std::string format = "jsonl";
  std::string output;  // empty or "-": stdout
  bool with_keys = false;
  bool quiet = false;
};

// Where the lines go: stdout; a new file, removed unless the export completes; or an existing
// pipe or device (`-o >(gzip > x)`, /dev/stdout), written as it is and never removed. An
// existing regular file or directory is refused.
class Output {
 public:
  explicit Output(const std::string& path) : path_(path == "-" ? std::string() : path) {
    if (path_.empty()) {
      file_ = stdout;
      return;
    }
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path_, ec);
    if (std::filesystem::is_directory(status)) throw CliError("'" + path_ + "' is a directory");
    if (std::filesystem::is_regular_file(status)) {
      throw CliError("'" + path_ + "' exists; not overwriting it");
    }
    owned_ = !std::filesystem::exists(status);
    file_ = std::fopen(path_.c_str(), owned_ ? "wbx" : "wb");
    if (file_ == nullptr) throw CliError("cannot create '" + path_ + "': " + std::strerror(errno));
  }
  ~Output() {
    if (file_ != stdout && file_ != nullptr) {
      std::fclose(file_);
      if (owned_ && !complete_) std::remove(path_.c_str());
    }
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  void write(const std::string& line) {
    put(line);
    put("\n");
  }
  // One event's line, its payload encoded a piece at a time (see event_line).
  void write(const EventView& e) {
    const EventLine line = event_line(e);
    put(line.before);
    base64_encode_pieces(e.payload, [this](std::string_view text) { put(text); });
    put(line.after);
    put("\n");
  }
  void complete() {
    if (std::fflush(file_) != 0) throw CliError("writing the export failed");
    complete_ = true;
  }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool owned_ = false;  // created here: removed unless complete
  bool complete_ = false;

  void put(std::string_view text) {
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size())
      throw CliError("writing the export failed");
  }
};

// Checks that `e` follows the previously exported event and that its hash matches.
void check_link(const EventView& e, Position expected, const std::optional<Hash>& previous) {
  if (e.position != expected) {
    throw CliError("the log skips from position " + std::to_string(expected - 1) + " to " +
                       std::to_string(e.position) + " (events were deleted; run factum verify)",
                   kDamaged);
  }
  if ((previous && e.previous_hash != *previous) || !hash_matches(e)) {
    throw CliError("the event at position " + std::to_string(e.position) +
                       " does not match its hash (run factum verify)",
                   kDamaged);
  }
}

int run_export(const ExportOptions& o) {
  const EventStore store = open_read_only(o.db);
  const Position head = store.head_position();
  const Position to = o.to == 0 ? head : std::min(o.to, head);
  if (o.to != 0 && o.to < o.from) throw CliError("--to is before --from", kUsage);
  install_interrupt_handlers();

  Output out(o.output);
  Progress bar("export", to >= o.from ? to - o.from + 1 : 0, "events");
  std::uint64_t count = 0;
  std::optional<Hash> previous;
  Hash last{};
  if (to >= o.from) {
    // Views: each event is written straight from the row, never copied whole.
    store.visit_all(o.from, [&](const EventView& e) {
      if (e.position > to) return false;
      if (interrupted_by_signal()) throw CliError("export interrupted", kInterrupted);
      check_link(e, o.from + count, previous);
      out.write(e);
      previous = last = e.hash;
      bar.update(++count);
      return true;
    });
  }
  if (count < (to >= o.from ? to - o.from + 1 : 0)) {
    throw CliError("the log ended at position " + std::to_string(o.from + count - 1) +
                       " before position " + std::to_string(to) + " (run factum verify)",
                   kDamaged);
  }
  // The subjects' keys, as the store wraps them (never unwrapped: the KEK is not needed and
  // does not travel), read after the events: a key made during the export is in it.
  std::optional<std::uint64_t> keys;
  if (o.with_keys) {
    const std::vector<WrappedKey> wrapped = wrapped_keys(store);
    for (const WrappedKey& k : wrapped) out.write(key_to_json(k).dump());
    keys = wrapped.size();
  }
  // Only now, with every event written and checked: a cut or damaged export has no trailer.
  const ExportTrailer trailer{count, count == 0 ? 0 : to, last, keys};
  out.write(trailer_to_json(trailer).dump());
  out.complete();
  bar.finish();
  if (!o.quiet) {
    if (count == 0) {
      std::cerr << "exported 0 events\n";
    } else {
      std::cerr << "exported " << count << " events, positions " << o.from << " to " << to
                << "; last hash " << to_hex(last) << '\n';
    }
    if (keys) std::cerr << "exported " << *keys << " subject keys, wrapped by their KEK\n";
  }
  return kOk;
}

}  // namespace

void add_export_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write the log as JSON Lines: envelopes, metadata, payload as base64, hashes");
  add_db_argument(*cmd, o->db);
  cmd->add_option("--from", o->from, "First position (default 1)")->transform(whole_number(1));
  cmd->add_option("--to", o->to, "Last position (default: the head)")->transform(whole_number(1));
  cmd->add_option("--format", o->format, "Output format (only jsonl)")
      ->check(CLI::IsMember({"jsonl"}));
  cmd->add_option("--output,-o", o->output,
                  "Write to FILE (a new file, or a pipe or device) instead of stdout");
  cmd->add_flag("--with-keys", o->with_keys,
                "Also write the subjects' data keys (personal data), wrapped by the KEK, which "
                "is not exported: without them the copy's personal values read as erased");
  cmd->add_flag("--quiet,-q", o->quiet, "No summary on stderr");
  cmd->callback([&action, o] { action = [o] { return run_export(*o); }; });
}

}  // namespace factum::cli
