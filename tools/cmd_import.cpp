// tools/cmd_import.cpp — `factum import DB [FILE] [--head HASH]`: loads a `factum export` (JSON
// Lines, from a file, a pipe or stdin) into a new store, keeping every event's position, id,
// recorded-at time and hash (EventStore::import_events checks each hash against the chain; an
// export whose lines were altered, swapped or cut is damaged, exit 3). The store is built under a
// temporary name beside DB and moved to DB once it verifies (import_target.hpp: no stale -wal
// may join it), then verified once more where it now stands; a failed or interrupted import
// leaves nothing behind. DB may also be a PostgreSQL URI whose schema holds no events
// (import_into_server).

#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string_view>

#include "base64.hpp"
#include "cli.hpp"
#include "event_json.hpp"
#include "import_target.hpp"
#include "line_reader.hpp"
#include "options.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "run_command.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

constexpr std::size_t kBatchEvents = 1000;
constexpr std::size_t kBatchBytes = 16u << 20;
// What a line holds besides its payload's base64: the envelope, metadata, hash and JSON syntax.
constexpr std::size_t kLineOverhead = 1u << 20;
// The largest --max-payload-size: SQLite's own limit on a value.
constexpr std::size_t kMaxPayloadSize = 1u << 30;

struct ImportOptions {
  std::string db;
  std::string input = "-";
  std::string head;
  std::string format = "jsonl";
  std::size_t max_payload_size = StoreOptions{}.max_payload_size;
  bool allow_prefix = false;
  bool quiet = false;
};

// The longest line an event with a payload of `max_payload` bytes can take in an export.
std::size_t max_line_length(std::size_t max_payload) {
  return (max_payload + 2) / 3 * 4 + kLineOverhead;
}

constexpr const char* kNothingWritten = "import interrupted; nothing was written";

// Events waiting to be imported in one transaction, with the line each came from.
struct Batch {
  std::vector<RecordedEvent> events;
  std::vector<std::uint64_t> lines;
  std::size_t bytes = 0;
  void clear() {
    events.clear();
    lines.clear();
    bytes = 0;
  }
};

// factum's message without its "factum: " prefix (the CLI adds its own).
std::string bare(const std::exception& e) {
  const std::string message = e.what();
  return message.rfind("factum: ", 0) == 0 ? message.substr(8) : message;
}

// Throws CliError (exit 3, naming the line) unless `e` continues the chain that ends at `head`:
// its position is the next one, and its hash is the SHA-256 of its fields and the head's hash
// (factum::hash_matches, as import_events checks it). An export whose lines were altered,
// swapped, repeated or cut, or that does not start at position 1, is damaged.
void require_in_place(RecordedEvent& e, const Head& head, std::uint64_t line) {
  if (e.position != head.position + 1) {
    throw CliError(line_prefix(line) + "cannot import the event at position " +
                       std::to_string(e.position) + ": the log ends at position " +
                       std::to_string(head.position) + ", so the next must be " +
                       std::to_string(head.position + 1) +
                       " (an export's lines must be whole and in order, from position 1)",
                   kDamaged);
  }
  e.previous_hash = head.hash;
  const bool matches = hash_matches(e);
  e.previous_hash = Hash{};
  if (!matches) {
    throw CliError(line_prefix(line) + "the event at position " + std::to_string(e.position) +
                       ": its hash does not match its fields and the previous event's hash "
                       "(the export was altered, or does not continue this log)",
                   kDamaged);
  }
}

// What an event the store refused (`error`) exits with: 3 (naming the line) when the event does
// not continue the chain ending at `head`, whatever the store said first (a changed stream id
// reads as a stream version out of sequence, two swapped lines as a position out of sequence);
// else the store's message, with exit 3 for a corrupt event and 1 for the rest (a stream id or
// payload over the limits, an id stored already).
[[noreturn]] void refused(RecordedEvent& e, const Head& head, std::uint64_t line,
                          const Error& error) {
  require_in_place(e, head, line);
  const bool corrupt = dynamic_cast<const CorruptEventError*>(&error) != nullptr;
  throw CliError(line_prefix(line) + bare(error), corrupt ? kDamaged : kError);
}

// Imports the batch; when it fails, imports its events one at a time to name the failing line.
// The chain is checked by import_events as it writes; an event it refuses is judged by refused.
void import_batch(EventStore& store, Batch& batch) {
  if (batch.events.empty()) return;
  try {
    store.import_events(batch.events);
  } catch (const Error&) {
    for (std::size_t i = 0; i < batch.events.size(); ++i) {
      const Head head = store.head();
      try {
        store.import_events({&batch.events[i], 1});
      } catch (const Error& e) {
        refused(batch.events[i], head, batch.lines[i], e);
      }
    }
    throw;  // not reached: one of them failed above
  }
  batch.clear();
}

Json parse_json(const std::string& line, std::uint64_t number) {
  try {
    return Json::parse(line);
  } catch (const Json::parse_error&) {
    throw CliError(line_prefix(number) + "not a JSON object (is this a factum export?)");
  }
}

// When `line` has export's own layout, ending `,"payload":"<base64>","hash":"<64 hex>"}`: the
// payload decoded, and its base64 cut from the line (which keeps `"payload":""`), so a large
// payload is neither parsed as a JSON string nor held as text and bytes at once for long.
// nullopt (the line unchanged) otherwise: the JSON parser then reads it as any other line.
std::optional<Bytes> take_payload(std::string& line) {
  static constexpr std::string_view kPayload = R"(,"payload":")";
  static constexpr std::string_view kHash = R"(","hash":")";
  constexpr std::size_t kTail = kHash.size() + 64 + 2;  // the hash's hex digits and "}
  if (line.size() < kTail || line.compare(line.size() - 2, 2, "\"}") != 0) return std::nullopt;
  const std::size_t hash_at = line.size() - kTail;
  if (line.compare(hash_at, kHash.size(), kHash) != 0) return std::nullopt;
  const std::size_t at = line.rfind(kPayload, hash_at);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t begin = at + kPayload.size();
  // No quote between: the string that ends right before the top-level "hash" is the payload.
  std::optional<Bytes> bytes = base64_decode(std::string_view(line).substr(begin, hash_at - begin));
  if (!bytes) return std::nullopt;
  line.erase(begin, hash_at - begin);
  if (line.capacity() > 2 * line.size() + 4096) line.shrink_to_fit();
  return bytes;
}

RecordedEvent parse_event(const Json& j, std::uint64_t number) {
  try {
    return event_from_json(j);
  } catch (const CliError& e) {
    throw CliError(line_prefix(number) + e.what());
  }
}

// The store refuses it too; this says which option raises the limit.
void check_payload_size(const RecordedEvent& e, const ImportOptions& o, std::uint64_t number) {
  if (e.payload.size() <= o.max_payload_size) return;
  throw CliError(line_prefix(number) + "the event at position " + std::to_string(e.position) +
                 " has a payload of " + std::to_string(e.payload.size()) + " bytes; the limit is " +
                 std::to_string(o.max_payload_size) + " (--max-payload-size raises it)");
}

// The limits of a store opened with default options (the stream id length `read` accepts), but
// for the payload size, which --max-payload-size may raise.
StoreOptions import_store_options(const ImportOptions& o) {
  StoreOptions options;
  options.durability = Durability::normal;  // the file is synced when it is closed
  options.max_payload_size = o.max_payload_size;
  return options;
}

struct Loaded {
  std::uint64_t events = 0;
  Head head;
  std::vector<WrappedKey> keys;  // the subject key lines (export --with-keys)
  std::optional<ExportTrailer> trailer;
  std::uint64_t trailer_line = 0;
};

ExportTrailer parse_trailer(const Json& j, std::uint64_t number) {
  try {
    return trailer_from_json(j);
  } catch (const CliError& e) {
    throw CliError(line_prefix(number) + e.what());
  }
}

WrappedKey parse_key(const Json& j, std::uint64_t number) {
  try {
    return key_from_json(j);
  } catch (const CliError& e) {
    throw CliError(line_prefix(number) + e.what());
  }
}

// The subjects' keys of the export, added to `store` once its events are in (a subject whose
// forget the log holds gets none: add_wrapped_keys). An invalid key exits 1, adding none.
void add_keys(EventStore& store, const Loaded& loaded) {
  if (loaded.keys.empty()) return;
  try {
    add_wrapped_keys(store, loaded.keys);
  } catch (const InvalidArgument& e) {
    throw CliError("the export's subject keys: " + bare(e));
  }
}

// Reads the export, handing its events to `sink` a batch at a time (the sink empties the
// batch); `interrupted` is the message of a SIGINT/SIGTERM. Sets `events` and the trailer.
Loaded read_export(const ImportOptions& o, const char* label,
                   const std::function<void(Batch&)>& sink, const std::string& interrupted) {
  LineReader reader(o.input, max_line_length(o.max_payload_size));
  Progress bar(label, reader.size(), "bytes");
  Batch batch;
  Loaded loaded;
  std::string line;
  while (reader.next(line)) {
    if (interrupted_by_signal()) throw CliError(interrupted, kInterrupted);
    if (loaded.trailer) {
      throw CliError(line_prefix(reader.number()) + "follows the export's trailer (line " +
                     std::to_string(loaded.trailer_line) + "), which must be the last line");
    }
    std::optional<Bytes> payload = take_payload(line);
    Json j = parse_json(line, reader.number());
    if (is_trailer(j)) {
      loaded.trailer = parse_trailer(j, reader.number());
      loaded.trailer_line = reader.number();
      continue;
    }
    if (is_key_line(j)) {  // after the events: added once they are all in (add_keys)
      loaded.keys.push_back(parse_key(j, reader.number()));
      continue;
    }
    if (!loaded.keys.empty()) {
      throw CliError(line_prefix(reader.number()) +
                     "an event after the subject keys, which follow the last event");
    }
    RecordedEvent e = parse_event(j, reader.number());
    if (payload) {
      if (!e.payload.empty()) {
        throw CliError(line_prefix(reader.number()) + "field 'payload' appears twice");
      }
      e.payload = std::move(*payload);
    }
    check_payload_size(e, o, reader.number());
    batch.bytes += e.payload.size();
    batch.events.push_back(std::move(e));
    batch.lines.push_back(reader.number());
    ++loaded.events;
    if (batch.events.size() >= kBatchEvents || batch.bytes >= kBatchBytes) {
      sink(batch);
      bar.update(reader.bytes_read());
    }
  }
  sink(batch);
  bar.finish();
  return loaded;
}

// What an import into PostgreSQL checks of an export file before it writes anything: each event
// continues the chain (require_in_place), and its text fields can be PostgreSQL text (UTF-8
// without NUL; SQLite stores any bytes there). So a damaged, altered or cut-off export, or one a
// server cannot hold, is refused with nothing written.
class ChainCheck {
 public:
  void operator()(Batch& batch) {
    for (std::size_t i = 0; i < batch.events.size(); ++i) check(batch.events[i], batch.lines[i]);
    batch.clear();
  }
  const Head& head() const noexcept { return head_; }

 private:
  void check(RecordedEvent& e, std::uint64_t line) {
    require_in_place(e, head_, line);
    check_text(e.stream_id, "stream id", e, line);
    check_text(e.type, "type", e, line);
    check_text(e.metadata.actor, "actor", e, line);
    head_ = {e.position, e.hash};
  }
  static void check_text(const std::string& text, const char* field, const RecordedEvent& e,
                         std::uint64_t line) {
    if (is_utf8(text) && text.find('\0') == std::string::npos) return;
    throw CliError(line_prefix(line) + "the " + field + " of the event at position " +
                   std::to_string(e.position) +
                   " is not UTF-8 text without NUL bytes, which PostgreSQL cannot store (keep "
                   "this log in SQLite)");
  }
  Head head_;
};

// The export must end with a trailer that matches what was imported: without one it was cut off
// (or stopped at a damaged event), and only --allow-prefix accepts that.
void check_trailer(const Loaded& loaded, const ImportOptions& o) {
  if (!loaded.trailer) {
    if (o.allow_prefix) return;
    throw CliError("the export has no trailer after its " + std::to_string(loaded.events) +
                       " events: it was cut off, or its log is damaged (--allow-prefix imports "
                       "it anyway)",
                   kDamaged);
  }
  const ExportTrailer& t = *loaded.trailer;
  if (t.keys.value_or(0) != loaded.keys.size()) {
    throw CliError("line " + std::to_string(loaded.trailer_line) + ": the trailer names " +
                       std::to_string(t.keys.value_or(0)) + " subject keys, but the export holds " +
                       std::to_string(loaded.keys.size()),
                   kDamaged);
  }
  if (t.events != loaded.events || t.head_position != loaded.head.position ||
      t.head_hash != loaded.head.hash) {
    throw CliError("line " + std::to_string(loaded.trailer_line) + ": the trailer names " +
                       std::to_string(t.events) + " events ending at position " +
                       std::to_string(t.head_position) + " with hash " + to_hex(t.head_hash) +
                       ", but the export holds " + std::to_string(loaded.events) +
                       " ending at position " + std::to_string(loaded.head.position) +
                       " with hash " + to_hex(loaded.head.hash),
                   kDamaged);
  }
}

// The trailer, and --head: the export is whole, and the log the caller expects.
void check_export_end(const Loaded& loaded, const ImportOptions& o) {
  check_trailer(loaded, o);
  if (!o.head.empty() && hash_from_hex(o.head) != loaded.head.hash) {
    throw CliError("the export ends at position " + std::to_string(loaded.head.position) +
                       " with hash " + to_hex(loaded.head.hash) + ", not the expected head " +
                       o.head + ": it was cut off or is another log",
                   kDamaged);
  }
}

void verify_imported(const EventStore& store, const Loaded& loaded) {
  VerifyOptions options;
  options.expected_head = loaded.head.hash;
  Progress bar("verify", loaded.head.position, "events");
  options.on_progress = [&bar](Position done) { bar.update(done); };
  const VerifyResult r = store.verify(options);
  bar.finish();
  if (!r.ok()) throw CliError("the imported store does not verify: " + r.message, kDamaged);
}

// The final check, of the file as it now stands at DB: its head is the export's, and it
// verifies. When it does not (something joined the file on its way into place), the file is
// removed again.
void verify_in_place(ImportTarget& target, const Loaded& loaded, const ImportOptions& o) {
  try {
    // Not read-only: a read-only connection leaves a -shm and an empty -wal behind when it
    // closes; this one removes them (nothing is written: the store is complete).
    const EventStore store = open_writable(o.db);
    const Head head = store.head();
    if (head != loaded.head) {
      throw CliError("the store at '" + o.db + "' ends at position " +
                         std::to_string(head.position) + " with hash " + to_hex(head.hash) +
                         ", not at the export's " + std::to_string(loaded.head.position) + " " +
                         to_hex(loaded.head.hash),
                     kDamaged);
    }
    verify_imported(store, loaded);
  } catch (const std::exception& e) {
    target.remove_moved();
    const auto* cli = dynamic_cast<const CliError*>(&e);
    throw CliError(std::string(e.what()) + " (after it was moved into place; removed it)",
                   cli ? cli->code() : kDamaged);
  }
}

void print_summary(const Loaded& loaded, const ImportOptions& o) {
  if (o.quiet) return;
  std::cerr << one_line("imported " + std::to_string(loaded.events) + " events into '" +
                        shown_location(o.db) + "'; head " + std::to_string(loaded.head.position) +
                        " " + to_hex(loaded.head.hash) +
                        (loaded.keys.empty()
                             ? std::string()
                             : " and " + std::to_string(loaded.keys.size()) + " subject keys") +
                        "; verified" +
                        (loaded.trailer ? "" : " (a prefix: the export had no trailer)"))
            << '\n';
}

// A note on stderr ("factum import: ..."), one line, escaped.
void print_note(const std::string& message) {
  std::cerr << "factum import: " << one_line(message) << '\n';
}

// The events the store at `uri` holds (its head position); nullopt when there is no store
// there yet. Opened read-only: nothing is created or written.
std::optional<Position> events_on_server(const std::string& uri) {
  StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  try {
    return EventStore::open(uri, options).head_position();
  } catch (const StorageError& e) {
    if (e.kind() == StorageError::Kind::not_a_store) return std::nullopt;
    throw;
  }
}

[[noreturn]] void refuse_events(const ImportOptions& o, Position events) {
  throw CliError("'" + shown_location(o.db) + "' holds " + std::to_string(events) +
                 " events already; import loads into an empty store and changed nothing (give "
                 "it a new schema: ?options=-csearch_path%3D<schema>)");
}

// Imports the batch through import_log's `import`, an event at a time, so that a refused event
// is named by its line; `last` follows the events imported.
void import_lines(const EventStore::ImportBatches& import, Batch& batch, Head& last) {
  for (std::size_t i = 0; i < batch.events.size(); ++i) {
    RecordedEvent& e = batch.events[i];
    try {
      import({&e, 1});
    } catch (const Error& error) {
      refused(e, last, batch.lines[i], error);
    }
    last = {e.position, e.hash};
  }
  batch.clear();
}

// After a failed import into a server: what the schema now holds, on stderr.
void report_server_failure(const EventStore& store, const ImportOptions& o) {
  std::optional<Position> kept;
  try {
    kept = store.head_position();
  } catch (const std::exception&) {
    // The server is out of reach: the commit may or may not have happened.
  }
  const std::string db = shown_location(o.db);
  if (!kept) {
    print_note("'" + db +
               "' could not be asked what it holds: if the failure came during the commit, the "
               "whole log may be there (check with factum verify)");
  } else if (*kept > 0) {
    print_note("'" + db + "' holds " + std::to_string(*kept) +
               " events after the failure: drop the schema's tables (or the schema) before "
               "importing again");
  } else {
    print_note("nothing was imported into '" + db + "'");
  }
}

// Into a PostgreSQL store (docs/postgres.md): the schema must hold no events (import never
// merges logs). An export read from a file is checked whole first (ChainCheck, its trailer,
// --head), so a bad export writes nothing, not even the store's tables. The events are then
// imported in one transaction (EventStore::import_log), whose end checks the trailer and --head
// again (the only check of an export read from stdin) before the commit; then the store is
// verified. So a failure (a bad export, the server, the connection, an interrupt) leaves the
// schema without events, unless the connection broke during the commit itself (the message
// then counts what the schema holds).
int import_into_server(const ImportOptions& o) {
  install_interrupt_handlers();
  if (const auto events = events_on_server(o.db); events && *events != 0) refuse_events(o, *events);
  if (is_rereadable_input(o.input)) {  // read twice: checked whole first, with nothing written
    ChainCheck check;
    Loaded checked = read_export(o, "check", std::ref(check), kNothingWritten);
    checked.head = check.head();
    check_export_end(checked, o);
  }
  StoreOptions options = import_store_options(o);
  options.durability = Durability::full;  // every batch is on the server's disk once committed
  EventStore store = EventStore::open(o.db, options);
  if (const Position events = store.head_position(); events != 0) refuse_events(o, events);
  Loaded loaded;
  try {
    store.import_log([&](const EventStore::ImportBatches& import) {
      Head last;
      loaded = read_export(
          o, "import", [&](Batch& batch) { import_lines(import, batch, last); }, kNothingWritten);
      loaded.head = last;
      check_export_end(loaded, o);
    });
    add_keys(store, loaded);
    verify_imported(store, loaded);
  } catch (...) {
    report_server_failure(store, o);
    throw;
  }
  print_summary(loaded, o);
  return kOk;
}

// Into a new file (docs/cli.md, "import"): built under a temporary name (ImportTarget), a batch
// at a time; the export's end checked; the store verified, closed, moved into place, and
// verified again there.
int import_into_file(const ImportOptions& o) {
  install_interrupt_handlers();
  ImportTarget target(o.db);
  for (const std::string& removed : remove_dead_imports(o.db)) {
    if (!o.quiet) {
      print_note("removed '" + removed +
                 "' and its -wal, -shm, -journal, left by an import that did not finish (its "
                 "process is gone)");
    }
  }
  Loaded loaded;
  {
    EventStore store = EventStore::open(target.temp_path(), import_store_options(o));
    loaded = read_export(
        o, "import", [&store](Batch& batch) { import_batch(store, batch); }, kNothingWritten);
    loaded.head = store.head();
    check_export_end(loaded, o);
    add_keys(store, loaded);
    verify_imported(store, loaded);
  }  // closed: the WAL is checkpointed into the file
  target.move_into_place();
  verify_in_place(target, loaded, o);
  print_summary(loaded, o);
  return kOk;
}

int run_import(const ImportOptions& o) {
  return is_server_location(o.db) ? import_into_server(o) : import_into_file(o);
}

}  // namespace

void add_import_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "import", "Load an export into a new store, keeping ids, order and hashes, and verify it");
  cmd->add_option("DB", o->db,
                  "The new store file (must not exist), or a PostgreSQL URI whose schema holds "
                  "no events")
      ->required();
  cmd->add_option("FILE", o->input, "The export (JSON Lines); '-' or none: stdin");
  cmd->add_option("--head", o->head,
                  "Fail unless the export ends with this hash (the last hash export printed): "
                  "catches a cut-off export")
      ->check(hash_validator());
  cmd->add_option("--format", o->format, "Input format (only jsonl)")
      ->check(CLI::IsMember({"jsonl"}));
  cmd->add_flag("--allow-prefix", o->allow_prefix,
                "Accept an export without its trailer (cut off, or stopped at a damaged event): "
                "import the events it holds");
  cmd->add_option("--max-payload-size", o->max_payload_size,
                  "Largest payload accepted, in bytes (default 4194304, the store's default; at "
                  "most 1 GiB); it also bounds the length of a line")
      ->transform(whole_number(1, kMaxPayloadSize));
  cmd->add_flag("--quiet,-q", o->quiet, "No summary on stderr");
  cmd->callback([&action, o] { action = [o] { return run_import(*o); }; });
}

}  // namespace factum::cli
