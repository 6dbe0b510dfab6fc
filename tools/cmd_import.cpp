// tools/cmd_import.cpp — `factum import DB [FILE] [--head HASH]`: loads a `factum export` (JSON
// Lines, from a file or stdin) into a new store, keeping every event's position, id, recorded-at
// time and hash (EventStore::import_events checks each hash against the chain), then verifies
// the whole store. The store is built in a temporary file beside DB and only moved to DB once
// it verifies, so a failed or interrupted import leaves nothing behind. DB may also be a
// PostgreSQL URI whose schema holds no events (import_into_server).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string_view>

#include "base64.hpp"
#include "cli.hpp"
#include "event_json.hpp"
#include "options.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

namespace fs = std::filesystem;

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

std::atomic<bool> g_interrupted{false};
void on_interrupt(int) { g_interrupted.store(true); }

// The temporary store file and its WAL companions, removed unless kept.
class TempStoreFile {
 public:
  explicit TempStoreFile(const std::string& target)
      : path_(target + ".import-" + std::to_string(getpid())) {
    remove_all();
  }
  ~TempStoreFile() {
    if (!kept_) remove_all();
  }
  TempStoreFile(const TempStoreFile&) = delete;
  TempStoreFile& operator=(const TempStoreFile&) = delete;
  const std::string& path() const noexcept { return path_; }

  // Moves the finished store to `target` without replacing a file created there meanwhile.
  void move_to(const std::string& target) {
    std::error_code ec;
    fs::create_hard_link(path_, target, ec);
    if (ec == std::errc::file_exists) throw CliError("'" + target + "' was created meanwhile");
    if (ec) {
      if (fs::exists(target)) throw CliError("'" + target + "' was created meanwhile");
      fs::rename(path_, target);  // a file system without hard links
    }
    kept_ = true;
    remove_all();
  }

 private:
  void remove_all() noexcept {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path_ + suffix, ec);
  }
  std::string path_;
  bool kept_ = false;
};

std::string line_prefix(std::uint64_t line) { return "line " + std::to_string(line) + ": "; }

// Reads the export line by line, from a file (with its size, for the progress bar) or stdin.
// A line is bounded: one longer than `max_line` bytes is refused as soon as it passes the bound,
// without reading the rest of it into memory.
class LineReader {
 public:
  LineReader(const std::string& path, std::size_t max_line) : max_line_(max_line) {
    if (path == "-") {
      file_ = stdin;
      return;
    }
    if (!fs::is_regular_file(path)) throw CliError("'" + path + "': no such file");
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) throw CliError("cannot read '" + path + "'");
    owned_ = true;
    size_ = static_cast<std::uint64_t>(fs::file_size(path));
  }
  ~LineReader() {
    if (owned_) std::fclose(file_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next non-blank line; false at the end.
  bool next(std::string& line) {
    while (read_line(line)) {
      if (line.find_first_not_of(" \t\r") != std::string::npos) return true;
    }
    return false;
  }
  std::uint64_t number() const noexcept { return number_; }
  std::uint64_t bytes_read() const noexcept { return read_; }
  std::uint64_t size() const noexcept { return size_; }

 private:
  // One line without its '\n'; false at the end of the input.
  bool read_line(std::string& line) {
    line.clear();
    bool any = false;
    for (;;) {
      if (pos_ == end_ && !refill()) {
        if (any) ++number_;
        return any;
      }
      any = true;
      const char* start = buffer_.data() + pos_;
      const void* nl = std::memchr(start, '\n', end_ - pos_);
      const std::size_t n = nl ? static_cast<const char*>(nl) - start : end_ - pos_;
      if (line.size() + n > max_line_) {
        throw CliError(line_prefix(number_ + 1) + "longer than " + std::to_string(max_line_) +
                       " bytes, the most an event with a payload of the import's limit takes "
                       "(is this a factum export? see --max-payload-size)");
      }
      reserve(line, n);
      line.append(start, n);
      pos_ += n;
      read_ += n;
      if (nl) {
        ++pos_;
        ++read_;
        ++number_;
        return true;
      }
    }
  }
  // A line past 1 MiB gets room for the longest line at once: the pages are only touched as
  // they are written, and the string is never doubled (its old and new copies resident
  // together) on the way to the payload size.
  void reserve(std::string& line, std::size_t n) const {
    if (line.size() + n > line.capacity() && line.size() + n > kLargeLine) {
      line.reserve(max_line_);
    }
  }
  bool refill() {
    if (buffer_.empty()) buffer_.resize(1u << 16);
    pos_ = 0;
    end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
    if (end_ == 0 && std::ferror(file_)) throw CliError("reading the export failed");
    return end_ > 0;
  }

  static constexpr std::size_t kLargeLine = 1u << 20;
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  std::size_t max_line_;
  std::vector<char> buffer_;
  std::size_t pos_ = 0;
  std::size_t end_ = 0;
  std::uint64_t size_ = 0;
  std::uint64_t number_ = 0;
  std::uint64_t read_ = 0;
};

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

// Imports the batch; when it fails, imports its events one at a time to name the failing line.
void import_batch(EventStore& store, Batch& batch) {
  if (batch.events.empty()) return;
  try {
    store.import_events(batch.events);
  } catch (const Error&) {
    for (std::size_t i = 0; i < batch.events.size(); ++i) {
      try {
        store.import_events({&batch.events[i], 1});
      } catch (const CorruptEventError& e) {
        throw CliError(line_prefix(batch.lines[i]) + bare(e), kDamaged);
      } catch (const Error& e) {
        throw CliError(line_prefix(batch.lines[i]) + bare(e));
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
    if (g_interrupted.load()) throw CliError(interrupted, kInterrupted);
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

Loaded load(EventStore& store, const ImportOptions& o,
            const std::string& interrupted = "import interrupted; nothing was written") {
  Loaded loaded = read_export(
      o, "import", [&store](Batch& batch) { import_batch(store, batch); }, interrupted);
  loaded.head = store.head();
  return loaded;
}

// What an import into PostgreSQL checks before it writes anything: each event follows the one
// before it (its position, and its hash over its fields and the previous hash, as
// import_events checks them) and its text fields can be PostgreSQL text (UTF-8 without NUL;
// SQLite stores any bytes there). So a damaged, altered or cut-off export, or one a server
// cannot hold, is refused with nothing written.
class ChainCheck {
 public:
  void operator()(Batch& batch) {
    for (std::size_t i = 0; i < batch.events.size(); ++i) check(batch.events[i], batch.lines[i]);
    batch.clear();
  }
  const Head& head() const noexcept { return head_; }

 private:
  void check(RecordedEvent& e, std::uint64_t line) {
    if (e.position != head_.position + 1) {
      throw CliError(line_prefix(line) + "the event at position " + std::to_string(e.position) +
                     " does not follow position " + std::to_string(head_.position) +
                     " (an import starts at position 1 and skips none)");
    }
    check_text(e.stream_id, "stream id", e, line);
    check_text(e.type, "type", e, line);
    check_text(e.metadata.actor, "actor", e, line);
    e.previous_hash = head_.hash;
    if (!hash_matches(e)) {
      throw CliError(line_prefix(line) + "the event at position " + std::to_string(e.position) +
                         ": its hash does not match its fields and the previous event's hash "
                         "(the export was altered, or does not continue this log)",
                     kDamaged);
    }
    e.previous_hash = Hash{};
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

void verify_imported(const EventStore& store, const Loaded& loaded, const ImportOptions& o) {
  check_export_end(loaded, o);
  VerifyOptions options;
  options.expected_head = loaded.head.hash;
  Progress bar("verify", loaded.head.position, "events");
  options.on_progress = [&bar](Position done) { bar.update(done); };
  const VerifyResult r = store.verify(options);
  bar.finish();
  if (!r.ok()) throw CliError("the imported store does not verify: " + r.message, kDamaged);
}

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void print_summary(const Loaded& loaded, const ImportOptions& o) {
  if (o.quiet) return;
  std::cerr << one_line("imported " + std::to_string(loaded.events) + " events into '" +
                        shown_location(o.db) + "'; head " + std::to_string(loaded.head.position) +
                        " " + to_hex(loaded.head.hash) + "; verified" +
                        (loaded.trailer ? "" : " (a prefix: the export had no trailer)"))
            << '\n';
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
    const RecordedEvent& e = batch.events[i];
    try {
      import({&e, 1});
    } catch (const CorruptEventError& error) {
      throw CliError(line_prefix(batch.lines[i]) + bare(error), kDamaged);
    } catch (const Error& error) {
      throw CliError(line_prefix(batch.lines[i]) + bare(error));
    }
    last = {e.position, e.hash};
  }
  batch.clear();
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
  if (o.input != "-") {
    ChainCheck check;
    Loaded checked =
        read_export(o, "check", std::ref(check), "import interrupted; nothing was written");
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
          o, "import", [&](Batch& batch) { import_lines(import, batch, last); },
          "import interrupted; nothing was written");
      loaded.head = last;
      check_export_end(loaded, o);
    });
    verify_imported(store, loaded, o);
  } catch (...) {
    std::optional<Position> kept;
    try {
      kept = store.head_position();
    } catch (const std::exception&) {
      // The server is out of reach: the commit may or may not have happened.
    }
    if (!kept) {
      std::cerr << "factum import: '" << printable(shown_location(o.db))
                << "' could not be asked what it holds: if the failure came during the commit, "
                   "the whole log may be there (check with factum verify)\n";
    } else if (*kept > 0) {
      std::cerr << "factum import: '" << printable(shown_location(o.db)) << "' holds " << *kept
                << " events after the failure: drop the schema's tables (or the schema) before "
                   "importing again\n";
    } else {
      std::cerr << "factum import: nothing was imported into '" << printable(shown_location(o.db))
                << "'\n";
    }
    throw;
  }
  print_summary(loaded, o);
  return kOk;
}

int run_import(const ImportOptions& o) {
  if (is_server_location(o.db)) return import_into_server(o);
  if (fs::exists(fs::symlink_status(o.db))) {
    throw CliError("'" + o.db + "' exists; import creates a new store (choose another name)");
  }
  install_interrupt_handlers();

  TempStoreFile temp(o.db);
  Loaded loaded;
  {
    EventStore store = EventStore::open(temp.path(), import_store_options(o));
    loaded = load(store, o);
    verify_imported(store, loaded, o);
  }  // closed: the WAL is checkpointed into the file
  temp.move_to(o.db);
  print_summary(loaded, o);
  return kOk;
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
      ->check(CLI::Range(std::size_t{1}, kMaxPayloadSize));
  cmd->add_flag("--quiet,-q", o->quiet, "No summary on stderr");
  cmd->callback([&action, o] { action = [o] { return run_import(*o); }; });
}

}  // namespace factum::cli
