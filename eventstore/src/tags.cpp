// Tags on events (tags.hpp): validation, the metadata value, the index table and its check.
#include "tags_index.hpp"

#include "id_list.hpp"

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
  detail::sort_unique(tags);
  if (tags.size() > kMaxTagsPerEvent) {
    throw InvalidArgument("factum: an event has at most " + std::to_string(kMaxTagsPerEvent) +
                          " tags, not " + std::to_string(tags.size()));
  }
  if (tags.empty()) {
    metadata.values.erase(kTagsMetadataKey);
    return;
  }
  metadata.values[kTagsMetadataKey] = detail::join_ids(tags);
}

std::vector<std::string> tags_of(const Metadata& metadata) {
  const auto it = metadata.values.find(kTagsMetadataKey);
  if (it == metadata.values.end()) return {};
  std::vector<std::string> out = detail::split_ids(it->second, validate_tag);
  if (std::adjacent_find(out.begin(), out.end(), std::greater_equal<>()) != out.end()) {
    throw InvalidArgument(std::string("factum: the metadata value ") + kTagsMetadataKey +
                          " is not a sorted list of distinct tags separated by ','");
  }
  if (out.size() > kMaxTagsPerEvent) {
    throw InvalidArgument("factum: an event has at most " + std::to_string(kMaxTagsPerEvent) +
                          " tags, not " + std::to_string(out.size()));
  }
  return out;
}

namespace detail {

std::string tag_table_ddl(SqlDialect dialect) {
  return table_ddl(dialect,
                   "CREATE TABLE IF NOT EXISTS factum_event_tags (tag TEXT NOT NULL, "
                   "position INTEGER NOT NULL, PRIMARY KEY (tag, position)) WITHOUT ROWID");
}

void ensure_tag_table(Sql& sql) { sql.execute(tag_table_ddl(sql.dialect())); }

void index_tags(Sql& sql, std::span<const RecordedEvent> events) {
  // Multi-row inserts of up to kRows rows: one statement (on PostgreSQL one round trip) for the
  // tags of a whole batch, instead of one per tag.
  constexpr std::size_t kRows = 256;
  std::vector<SqlValue> params;
  const auto flush = [&] {
    if (params.empty()) return;
    sql.execute(insert_tags_sql(params.size() / 2), params);
    params.clear();
  };
  for (const RecordedEvent& e : events) {
    for (const std::string& tag : tags_of(e.metadata)) {
      params.emplace_back(tag);
      params.emplace_back(static_cast<std::int64_t>(e.position));
      if (params.size() == 2 * kRows) flush();
    }
  }
  flush();
}

std::string insert_tags_sql(std::size_t rows) {
  std::string sql = "INSERT INTO factum_event_tags (tag, position) VALUES ";
  for (std::size_t i = 0; i < rows; ++i) {
    if (i > 0) sql += ", ";
    sql += "(?" + std::to_string(2 * i + 1) + ", ?" + std::to_string(2 * i + 2) + ")";
  }
  return sql;
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

// The first position up to `walked` where the index and the log differ (the slow pass, after
// the digests differed): the index is read whole into memory, then the log walked once more.
Position first_difference(const EventStore& store, Position walked) {
  std::map<Position, std::vector<std::string>> index;
  store.read_sql([&](Sql& sql) {
    sql.query("SELECT tag, position FROM factum_event_tags WHERE position <= ?1",
              {static_cast<std::int64_t>(walked)}, [&](const SqlRow& row) {
                index[static_cast<Position>(row.integer(1))].push_back(row.text(0));
              });
  });
  for (auto& [position, tags] : index) std::sort(tags.begin(), tags.end());
  Position found = 0;
  store.visit_all(1, [&](const EventView& v) {
    if (v.position > walked) return false;
    const auto it = index.find(v.position);
    if (!index.empty() && index.begin()->first < v.position) {
      found = index.begin()->first;  // an index row of no event, or of an untagged one
      return false;
    }
    std::vector<std::string> tags;
    try {
      tags = tags_of_view(v);
    } catch (const InvalidArgument&) {
      found = v.position;  // a malformed tags value: no index can agree with it
      return false;
    }
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

}  // namespace

void TagDigest::add(const EventView& event) {
  const std::optional<std::string_view> value = event.metadata_value(kTagsMetadataKey);
  if (!value) return;
  if (first == 0) first = event.position;
  try {
    for (const std::string& tag : tags_of_view(event)) add(tag, event.position);
  } catch (const InvalidArgument&) {
    malformed = true;
  }
}

VerifyResult check_tag_index(const EventStore& store, const TagDigest& log, Position walked) {
  VerifyResult r;
  if (walked == 0) return r;  // an empty log (maybe without tables yet)
  bool table = false;
  TagDigest index;
  store.read_sql([&](Sql& sql) {
    table = sql.object_type("factum_event_tags") == "table";
    if (!table) return;
    sql.query("SELECT tag, position FROM factum_event_tags WHERE position <= ?1",
              {static_cast<std::int64_t>(walked)}, [&](const SqlRow& row) {
                index.add(row.text(0), static_cast<Position>(row.integer(1)));
              });
  });
  if (!log.malformed && log.count == index.count && log.sum == index.sum) return r;
  r.problem = VerifyResult::Problem::tag_index_mismatch;
  if (!table) {
    r.position = log.first;
    r.message = "the event at position " + std::to_string(log.first) +
                " has tags, but the store has no tag index (table factum_event_tags was dropped "
                "behind the library's back): queries by tag would miss events";
    return r;
  }
  r.position = first_difference(store, walked);
  r.message = "the tag index (table factum_event_tags) disagrees with the log at position " +
              std::to_string(r.position) + " (it holds " + std::to_string(index.count) +
              " rows, the log's events carry " + std::to_string(log.count) +
              " tags): it was changed behind the library's back, and queries by tag would "
              "miss or invent events";
  return r;
}

}  // namespace detail
}  // namespace factum
