// Tags on events (tags.hpp): validation, the metadata value, the index table and its check.
#include "tags_index.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <optional>

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/event_store.hpp"

namespace factum {

void validate_tag(std::string_view tag) {
  if (tag.empty() || tag.size() > kMaxTagLength) {
    throw InvalidArgument("factum: a tag must be 1 to " + std::to_string(kMaxTagLength) +
                          " bytes, not " + std::to_string(tag.size()));
  }
  for (char c : tag) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x21 || u > 0x7e || c == ',') {
      throw InvalidArgument(
          "factum: a tag holds only printable ASCII other than space and ',' (e.g. "
          "\"username:alice\")");
    }
  }
}

void set_tags(Metadata& metadata, std::vector<std::string> tags) {
  for (const std::string& t : tags) validate_tag(t);
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  if (tags.size() > kMaxTagsPerEvent) {
    throw InvalidArgument("factum: an event has at most " + std::to_string(kMaxTagsPerEvent) +
                          " tags, not " + std::to_string(tags.size()));
  }
  if (tags.empty()) {
    metadata.values.erase(kTagsMetadataKey);
    return;
  }
  std::string text;
  for (const std::string& t : tags) {
    if (!text.empty()) text.push_back(',');
    text += t;
  }
  metadata.values[kTagsMetadataKey] = std::move(text);
}

std::vector<std::string> tags_of(const Metadata& metadata) {
  std::vector<std::string> out;
  const auto it = metadata.values.find(kTagsMetadataKey);
  if (it == metadata.values.end()) return out;
  std::string_view rest = it->second;
  for (;;) {
    const std::size_t comma = rest.find(',');
    const std::string_view tag = rest.substr(0, comma);
    validate_tag(tag);
    if (!out.empty() && !(out.back() < tag)) {
      throw InvalidArgument(std::string("factum: the metadata value ") + kTagsMetadataKey +
                            " is not a sorted list of distinct tags separated by ','");
    }
    out.emplace_back(tag);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (out.size() > kMaxTagsPerEvent) {
    throw InvalidArgument("factum: an event has at most " + std::to_string(kMaxTagsPerEvent) +
                          " tags, not " + std::to_string(out.size()));
  }
  return out;
}

namespace detail {

bool has_tags(const EventData& e) noexcept {
  return !e.metadata.values.empty() && e.metadata.values.contains(kTagsMetadataKey);
}

void ensure_tag_table(Sql& sql) {
  sql.execute(table_ddl(sql,
                        "CREATE TABLE IF NOT EXISTS factum_event_tags (tag TEXT NOT NULL, "
                        "position INTEGER NOT NULL, PRIMARY KEY (tag, position)) WITHOUT ROWID"));
}

void index_tags(Sql& sql, std::span<const RecordedEvent> events) {
  bool ensured = false;
  for (const RecordedEvent& e : events) {
    for (const std::string& tag : tags_of(e.metadata)) {
      if (!ensured) {
        ensure_tag_table(sql);
        ensured = true;
      }
      sql.execute("INSERT INTO factum_event_tags (tag, position) VALUES (?1, ?2)",
                  {tag, static_cast<std::int64_t>(e.position)});
    }
  }
}

void TagDigest::add(std::string_view tag, Position position) {
  std::string input(tag);
  input.push_back('\0');
  for (int i = 7; i >= 0; --i) input.push_back(static_cast<char>(position >> (8 * i)));
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(input.data(), input.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
    throw Error("factum: libcrypto failed to hash a tag");
  }
  for (std::size_t lane = 0; lane < sum.size(); ++lane) {
    std::uint64_t v = 0;
    std::memcpy(&v, digest.data() + 8 * lane, 8);
    sum[lane] += v;  // a multiset hash: the order of the rows does not matter
  }
  ++count;
}

namespace {

// The tags of a view's metadata (none without kTagsMetadataKey).
std::vector<std::string> tags_of_view(const EventView& v) {
  const std::optional<std::string_view> value = v.metadata_value(kTagsMetadataKey);
  if (!value) return {};
  Metadata m;
  m.values.emplace(kTagsMetadataKey, std::string(*value));
  return tags_of(m);
}

// The first position where the index and the log differ (the slow pass, after the digests
// differed): the index is read whole into memory, then the log walked once more.
Position first_difference(const EventStore& store, Position head) {
  std::map<Position, std::vector<std::string>> index;
  store.read_sql([&](Sql& sql) {
    sql.query("SELECT tag, position FROM factum_event_tags WHERE position <= ?1",
              {static_cast<std::int64_t>(head)}, [&](const SqlRow& row) {
                index[static_cast<Position>(row.integer(1))].push_back(row.text(0));
              });
  });
  for (auto& [position, tags] : index) std::sort(tags.begin(), tags.end());
  Position found = 0;
  store.visit_all(1, [&](const EventView& v) {
    if (v.position > head) return false;
    const auto it = index.find(v.position);
    if (!index.empty() && index.begin()->first < v.position) {
      found = index.begin()->first;  // an index row of no event, or of an untagged one
      return false;
    }
    const std::vector<std::string> tags = tags_of_view(v);
    if (it == index.end() ? !tags.empty() : it->second != tags) {
      found = v.position;
      return false;
    }
    if (it != index.end()) index.erase(it);
    return true;
  });
  if (found == 0 && !index.empty()) found = index.begin()->first;  // past the log's end
  return found;
}

// The first event up to `head` whose metadata bytes hold the tags key (a byte search in SQL,
// over the rows with metadata values only); 0 when none.
Position first_tagged(Sql& sql, Position head) {
  const bool postgres = sql.dialect() == SqlDialect::postgres;
  return static_cast<Position>(
      sql.query_integer(postgres ? "SELECT min(position) FROM events WHERE position <= ?1 AND "
                                   "extra IS NOT NULL AND "
                                   "position(CAST('factum.tags' AS bytea) IN extra) > 0"
                                 : "SELECT min(position) FROM events WHERE position <= ?1 AND "
                                   "extra IS NOT NULL AND "
                                   "instr(CAST(extra AS BLOB), CAST('factum.tags' AS BLOB)) > 0",
                        {static_cast<std::int64_t>(head)})
          .value_or(0));
}

}  // namespace

VerifyResult check_tag_index(const EventStore& store, Position head) {
  VerifyResult r;
  if (head == 0) return r;  // an empty log (maybe without tables yet)
  bool table = false;
  Position tagged = 0;
  store.read_sql([&](Sql& sql) {
    table = sql.object_type("factum_event_tags") == "table";
    if (!table) tagged = first_tagged(sql, head);
  });
  if (!table) {  // never tagged (the common case): no walk
    if (tagged == 0) return r;
    r.problem = VerifyResult::Problem::tag_index_mismatch;
    r.position = tagged;
    r.message = "the event at position " + std::to_string(tagged) +
                " has tags, but the store has no tag index (table factum_event_tags was dropped "
                "behind the library's back): queries by tag would miss events";
    return r;
  }
  // Up to `head`: appends made meanwhile (their events and index rows) are not compared.
  TagDigest log;
  store.visit_all(1, [&](const EventView& v) {
    if (v.position > head) return false;
    for (const std::string& tag : tags_of_view(v)) log.add(tag, v.position);
    ++r.events_checked;
    return true;
  });
  TagDigest index;
  {
    store.read_sql([&](Sql& sql) {
      sql.query("SELECT tag, position FROM factum_event_tags WHERE position <= ?1",
                {static_cast<std::int64_t>(head)}, [&](const SqlRow& row) {
                  index.add(row.text(0), static_cast<Position>(row.integer(1)));
                });
    });
  }
  if (log.count == index.count && log.sum == index.sum) return r;
  r.problem = VerifyResult::Problem::tag_index_mismatch;
  r.position = first_difference(store, head);
  r.message = "the tag index (table factum_event_tags) disagrees with the log at position " +
              std::to_string(r.position) + " (it holds " + std::to_string(index.count) +
              " rows, the log's events carry " + std::to_string(log.count) +
              " tags): it was changed behind the library's back, and queries by tag would "
              "miss or invent events";
  return r;
}

}  // namespace detail
}  // namespace factum
