#include "factum/eventstore/event_store.hpp"

#include <limits>

#include "anchoring.hpp"
#include "keyring.hpp"
#include "postgres_target.hpp"
#include "query_index.hpp"
#include "storage.hpp"
#include "tags_index.hpp"
#include "validation.hpp"

namespace factum {
namespace detail {

// What an EventStore shares with its ranges: the backend, the options, the signal.
class StoreImpl {
 public:
  StoreImpl(const std::filesystem::path& path, const StoreOptions& options)
      : path_(path), options_(options), storage_(open_storage(path, options)) {
    if (!options_.read_page_size) options_.read_page_size = storage_->default_read_page_size();
    start_keyring();
    start_anchoring();
  }
  StoreImpl(std::shared_ptr<const PgTarget> target, const StoreOptions& options)
      : path_(target->shown),
        options_(options),
        storage_(open_postgres_storage(std::move(target), options)) {
    if (!options_.read_page_size) options_.read_page_size = storage_->default_read_page_size();
    start_keyring();
    start_anchoring();
  }

  // `hook`, when given, runs inside the append's transaction in place of the on_appending slots
  // (it runs them itself).
  std::vector<AppendResult> append(std::span<const AppendView> appends,
                                   const AppendHook* hook_override = nullptr,
                                   const AppendCondition* condition = nullptr) {
    validate(appends);
    if (condition != nullptr) validate_query(condition->fail_if_events_match);
    // Copies of the committed events are made only when a slot is connected. A slot connected
    // while the append is in flight (a subscription that has just read the log without its
    // events) must still be told of the commit: then the events are read back by position.
    std::vector<RecordedEvent> committed;
    AppendSink sink;
    if (!signal_.empty()) sink.events = &committed;
    const AppendHook* hook = hook_override != nullptr ? hook_override
                             : appending_.empty()     ? nullptr
                                                      : &hook_;
    // Events with personal values commit only while their subjects' keys are in the store: a
    // key cached before a forget (here or in another process) never seals a value stored after
    // it (personal.hpp, kSubjectsMetadataKey).
    // Events with tags (tags.hpp) are indexed in the same transaction.
    // A condition (query.hpp) is checked in each hook, against the events stored before the
    // first one this append writes. The hook runs after each stream append that writes, once
    // per attempt of the transaction (a group commit may start one over): an attempt is known
    // by its first events' position, which never grows from one hook to the next within it.
    // When nothing else runs in the hook (no slots, no override), the backend is told what it
    // does (AppendChecks) and may do it in its own statements: PostgreSQL does, in the round
    // trips the append makes anyway, where the hook's statements would cost one each.
    AppendHook checked;
    AppendChecks checks;  // what `checked` does, when it does nothing else
    const bool personal = any_event_has(appends, kSubjectsMetadataKey);
    const bool tagged = any_event_has(appends, kTagsMetadataKey);
    Position first = 0;  // of the current attempt
    // The tag table is made (when missing) once per hook, before the condition reads it and
    // the tags go in: CREATE TABLE IF NOT EXISTS is one statement where a look-up of the
    // table's name in the catalog would be one too, and a slow one on PostgreSQL.
    const bool table =
        tagged || (condition != nullptr && needs_tag_table(condition->fail_if_events_match));
    if (personal || tagged || condition != nullptr) {
      checked = [hook, personal, tagged, table, condition, &first](AppendTransaction& tx) {
        if (table) ensure_tag_table(tx.sql());
        if (condition != nullptr) {
          const Position front = tx.events().front().position;
          if (first == 0 || front <= first) first = front;  // a new attempt
          check_condition(tx.sql(), *condition, first);
        }
        if (personal) require_keys(tx.sql(), tx.events());
        if (tagged) index_tags(tx.sql(), tx.events());
        if (hook != nullptr) (*hook)(tx);
      };
      if (hook == nullptr) checks = {tagged, condition, table, personal};
      hook = &checked;
    }
    const bool native = checks.tags || checks.condition != nullptr || checks.keys;
    auto results = storage_->append(appends, sink, hook, native ? &checks : nullptr);
    if (sink.first_written != 0 && anchorer_) {
      anchorer_->appended(sink.last_written - sink.first_written + 1);
    }
    if (sink.first_written == 0 || signal_.empty()) return results;
    if (sink.events == nullptr) read_back(sink, committed);
    signal_(committed);
    return results;
  }

  // Whether an event of `appends` has the metadata value `key`.
  static bool any_event_has(std::span<const AppendView> appends, const char* key) {
    for (const AppendView& a : appends) {
      for (const EventData& e : a.events) {
        if (!e.metadata.values.empty() && e.metadata.values.contains(key)) return true;
      }
    }
    return false;
  }

  // The events of positions first_written..last_written, read from the log.
  void read_back(const AppendSink& sink, std::vector<RecordedEvent>& out) const {
    out.reserve(sink.last_written - sink.first_written + 1);
    for (const RecordedEvent& e : range({PageQuery::Kind::all, {}, sink.first_written})) {
      if (e.position > sink.last_written) break;
      out.push_back(e);
    }
  }

  void validate(std::span<const AppendView> appends) const {
    for (const AppendView& a : appends) validate_batch(a.stream, a.events, options_);
    if (appends.size() == 1) {
      const std::span<const EventData> batch = appends.front().events;
      check_unique_ids({&batch, 1}, {&appends.front().stream, 1});
      return;
    }
    std::vector<std::span<const EventData>> batches;
    std::vector<std::string_view> streams;
    for (const AppendView& a : appends) {
      batches.push_back(a.events);
      streams.push_back(a.stream);
    }
    check_unique_ids(batches, streams);
  }

  EventRange range(PageQuery query) const {
    return EventRange(make_cursor(storage_, std::move(query), *options_.read_page_size));
  }

  std::uint64_t visit(PageQuery query, const ViewVisitor& fn) const {
    return visit_pages(*storage_, std::move(query), *options_.read_page_size, fn);
  }

  // What anchoring reads of this store: its head and, through the checked walk, its event at
  // a position (a page of one event: at open and at each anchor only that one is wanted).
  AnchoredLog anchored_log() {
    return {
        [this] { return storage_->head(); },
        [this](Position p) {
          return hash_at(EventRange(make_cursor(storage_, {PageQuery::Kind::all, {}, p}, 1)), p);
        },
        [this] {
          std::vector<RecordedEvent> events;
          for (const RecordedEvent& e :
               range({PageQuery::Kind::stream_forward, std::string(kAnchorStream), 1})) {
            events.push_back(e);
          }
          return events;
        },
        [this](ExpectedVersion expected, const EventData& e) {
          const AppendView view{kAnchorStream, expected, {&e, 1}};
          return append({&view, 1}).front();
        }};
  }

  // StoreOptions::anchoring: the check against the newest anchor (which may record an
  // accepted rollback, then anchored at once), then the anchoring thread.
  void start_anchoring() {
    const AnchoringOptions& a = options_.anchoring;
    if (!a.key || !a.sink) return;
    const bool accepted = a.check_at_open && check_at_open(anchored_log(), a, path_.string());
    if (a.every_events == 0 && a.every.count() == 0 && !a.at_close) return;
    anchorer_ = std::make_unique<Anchorer>(a, [this] {
      return anchor_log(anchored_log(), *options_.anchoring.key, *options_.anchoring.sink);
    });
    if (accepted) anchorer_->anchor_soon();
  }

  // StoreOptions::personal_data: the keyring, when there is a key provider.
  void start_keyring() {
    const PersonalDataOptions& p = options_.personal_data;
    if (!p.key_provider) return;
    keyring_state_ = std::make_shared<Keyring::State>(storage_, p, path_.string());
    keyring_ = std::make_shared<const Keyring>(keyring_state_);
    if (p.previous_key_provider) keyring_->rewrap(*p.previous_key_provider);
    keyring_state_->check_provider();
  }

  ForgetResult forget(std::string_view subject) {
    validate_subject(subject);  // no key provider needed: deleting a key needs no secret
    EventData e;
    e.type = std::string(kSubjectForgottenType);
    e.payload = to_bytes(forgotten_payload(subject));
    const std::int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    bool was_known = false;
    const AppendHook hook = [&](AppendTransaction& tx) {
      was_known = forget_key(tx.sql(), subject, now);
      if (!appending_.empty()) appending_(tx);
    };
    const AppendView view{kSubjectsStream, ExpectedVersion::any(), {&e, 1}};
    const AppendResult r = append({&view, 1}, &hook).front();
    if (keyring_state_) keyring_state_->forgotten(subject);
    ForgetResult out;
    out.position = r.last_position;
    out.was_known = was_known;
    out.purged = storage_->purge();
    return out;
  }

  std::filesystem::path path_;
  StoreOptions options_;
  std::shared_ptr<Storage> storage_;
  std::shared_ptr<Keyring::State> keyring_state_;
  std::shared_ptr<const Keyring> keyring_;
  EventStore::AppendedSignal signal_;
  EventStore::AppendingSignal appending_;
  AppendHook hook_ = [this](AppendTransaction& tx) { appending_(tx); };
  // Last: stopped (and its closing anchor made) while the storage is still open.
  std::unique_ptr<Anchorer> anchorer_;
};

}  // namespace detail

namespace {

std::int64_t clamp(std::uint64_t v) {
  return static_cast<std::int64_t>(std::min<std::uint64_t>(
      v, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
}

void validate_category(std::string_view category) {
  if (category.empty()) throw InvalidArgument("factum: a category must not be empty");
  for (char c : category) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '-') {
      throw InvalidArgument("factum: category '" + std::string(category) +
                            "' contains a dash or a control character");
    }
  }
}

}  // namespace

EventStore EventStore::open(const std::filesystem::path& path, const StoreOptions& options) {
  return EventStore(std::make_shared<detail::StoreImpl>(path, options));
}

EventStore EventStore::open(const PostgresOptions& where, const StoreOptions& options) {
  auto target = std::make_shared<const detail::PgTarget>(detail::pg_target(where));
  return EventStore(std::make_shared<detail::StoreImpl>(std::move(target), options));
}

EventStore::EventStore(std::shared_ptr<detail::StoreImpl> impl) : impl_(std::move(impl)) {}
EventStore::EventStore(EventStore&&) noexcept = default;
EventStore& EventStore::operator=(EventStore&&) noexcept = default;
EventStore::~EventStore() = default;

AppendResult EventStore::append(std::string_view stream, ExpectedVersion expected,
                                std::span<const EventData> events) {
  const detail::AppendView view{stream, expected, events};
  return impl_->append({&view, 1}).front();
}

AppendResult EventStore::append(std::string_view stream, ExpectedVersion expected,
                                const EventData& event) {
  return append(stream, expected, std::span<const EventData>(&event, 1));
}

AppendResult EventStore::append(std::string_view stream, ExpectedVersion expected,
                                std::span<const EventData> events,
                                const AppendCondition& condition) {
  const detail::AppendView view{stream, expected, events};
  return impl_->append({&view, 1}, nullptr, &condition).front();
}

namespace {

// The views of append_multi's `appends` (InvalidArgument when there are none).
std::vector<detail::AppendView> views_of(std::span<const StreamAppend> appends) {
  if (appends.empty()) throw InvalidArgument("factum: append_multi was given no streams");
  std::vector<detail::AppendView> views;
  views.reserve(appends.size());
  for (const StreamAppend& a : appends) views.push_back({a.stream, a.expected, a.events});
  return views;
}

}  // namespace

std::vector<AppendResult> EventStore::append_multi(std::span<const StreamAppend> appends) {
  return impl_->append(views_of(appends));
}

std::vector<AppendResult> EventStore::append_multi(std::span<const StreamAppend> appends,
                                                   const AppendCondition& condition) {
  return impl_->append(views_of(appends), nullptr, &condition);
}

EventRange EventStore::read_stream(std::string_view stream, StreamVersion from_version) const {
  detail::validate_stream_id(stream, impl_->options_);
  return impl_->range({detail::PageQuery::Kind::stream_forward, std::string(stream),
                       std::max<StreamVersion>(from_version, 1)});
}

EventRange EventStore::read_stream_backward(std::string_view stream,
                                            StreamVersion from_version) const {
  detail::validate_stream_id(stream, impl_->options_);
  const StreamVersion from =
      from_version == 0 ? static_cast<StreamVersion>(clamp(~0ULL)) : from_version;
  return impl_->range({detail::PageQuery::Kind::stream_backward, std::string(stream), from});
}

EventRange EventStore::read_category(std::string_view category, Position from_position) const {
  validate_category(category);
  return impl_->range({detail::PageQuery::Kind::category, std::string(category),
                       std::max<Position>(from_position, 1)});
}

EventRange EventStore::read_all(Position from_position) const {
  return impl_->range({detail::PageQuery::Kind::all, {}, std::max<Position>(from_position, 1)});
}

std::uint64_t EventStore::visit_stream_views(std::string_view stream, StreamVersion from_version,
                                             const detail::ViewVisitor& fn) const {
  detail::validate_stream_id(stream, impl_->options_);
  return impl_->visit({detail::PageQuery::Kind::stream_forward, std::string(stream),
                       std::max<StreamVersion>(from_version, 1)},
                      fn);
}

std::uint64_t EventStore::visit_category_views(std::string_view category, Position from_position,
                                               const detail::ViewVisitor& fn) const {
  validate_category(category);
  return impl_->visit({detail::PageQuery::Kind::category, std::string(category),
                       std::max<Position>(from_position, 1)},
                      fn);
}

std::uint64_t EventStore::visit_all_views(Position from_position,
                                          const detail::ViewVisitor& fn) const {
  return impl_->visit({detail::PageQuery::Kind::all, {}, std::max<Position>(from_position, 1)}, fn);
}

StreamVersion EventStore::stream_version(std::string_view stream) const {
  detail::validate_stream_id(stream, impl_->options_);
  return impl_->storage_->stream_version(stream);
}

Position EventStore::head_position() const { return head().position; }

Head EventStore::head() const { return impl_->storage_->head(); }

std::optional<RecordedEvent> EventStore::read_event(const EventId& id) const {
  return impl_->storage_->read_event(id);
}

std::vector<RecordedEvent> EventStore::compensations_of(const EventId& id) const {
  return impl_->storage_->compensations_of(id);
}

std::string_view problem_name(VerifyResult::Problem problem) noexcept {
  using P = VerifyResult::Problem;
  switch (problem) {
    case P::none:
      return "none";
    case P::hash_mismatch:
      return "hash_mismatch";
    case P::position_gap:
      return "position_gap";
    case P::malformed_row:
      return "malformed_row";
    case P::truncated:
      return "truncated";
    case P::head_mismatch:
      return "head_mismatch";
    case P::unchained_row:
      return "unchained_row";
    case P::behind_anchor:
      return "behind_anchor";
    case P::anchor_mismatch:
      return "anchor_mismatch";
    case P::bad_anchor:
      return "bad_anchor";
    case P::tag_index_mismatch:
      return "tag_index_mismatch";
  }
  return "unknown";
}

VerifyResult EventStore::verify() const { return verify(VerifyOptions{}); }

VerifyResult EventStore::verify(const Hash& expected_head) const {
  VerifyOptions options;
  options.expected_head = expected_head;
  return verify(options);
}

VerifyResult EventStore::verify(const VerifyOptions& options) const {
  detail::TagDigest log;  // the tags of the events the walk checked
  VerifyResult r = impl_->storage_->verify(options, log);
  if (!r.ok()) return r;
  // The chain covers the tags; the index of them (tags.hpp) is checked against it.
  VerifyResult tags = detail::check_tag_index(*this, log, r.events_checked);
  if (tags.ok()) return r;
  tags.events_checked = r.events_checked;
  return tags;
}

void EventStore::write_sql(const std::function<void(Sql&)>& fn) { impl_->storage_->write_sql(fn); }

void EventStore::read_sql(const std::function<void(Sql&)>& fn) const {
  impl_->storage_->read_sql(fn);
}

void detail::StoreAccess::read_own_sql(const EventStore& store,
                                       const std::function<void(Sql&)>& fn) {
  store.impl_->storage_->read_own_sql(fn);
}

EventStore::AppendedSignal& EventStore::on_appended() { return impl_->signal_; }

EventStore::AppendingSignal& EventStore::on_appending() { return impl_->appending_; }

std::shared_ptr<const Keyring> EventStore::keyring() const { return impl_->keyring_; }

ForgetResult EventStore::forget(std::string_view subject) { return impl_->forget(subject); }

std::unique_ptr<LogWatcher> EventStore::watch() const { return impl_->storage_->watch(); }

const std::filesystem::path& EventStore::path() const noexcept { return impl_->path_; }

const StoreOptions& EventStore::options() const noexcept { return impl_->options_; }

}  // namespace factum
