// The hash chain from its specification (see chain_hash.hpp).
#include "support/chain_hash.hpp"

#include <openssl/evp.h>

#include <stdexcept>
#include <string>

#include "support/raw_sql.hpp"

namespace factum::test {
namespace {

class Input {
 public:
  void bytes(const void* data, std::size_t size) {
    out_.append(static_cast<const char*>(data), size);
  }
  void u32(std::uint32_t v) { big_endian(v, 4); }
  void u64(std::uint64_t v) { big_endian(v, 8); }
  void text(const std::string& s) {
    u32(static_cast<std::uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void optional_id(const std::optional<EventId>& id) {
    out_ += id ? '\x01' : '\x00';
    if (id) bytes(id->bytes().data(), id->bytes().size());
  }
  const std::string& str() const { return out_; }

 private:
  void big_endian(std::uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  std::string out_;
};

std::string hex_of(const Hash& h) { return to_hex(h); }

}  // namespace

Hash chain_hash(const RecordedEvent& e) {
  Input in;
  in.bytes(e.previous_hash.data(), e.previous_hash.size());
  in.u64(e.position);
  in.text(e.stream_id);
  in.u64(e.stream_version);
  in.bytes(e.id.bytes().data(), e.id.bytes().size());
  in.text(e.type);
  in.u32(e.schema_version);
  in.u32(static_cast<std::uint32_t>(e.payload.size()));
  in.bytes(e.payload.data(), e.payload.size());
  in.optional_id(e.metadata.correlation_id);
  in.optional_id(e.metadata.causation_id);
  in.optional_id(e.metadata.compensates);
  in.text(e.metadata.actor);
  in.u32(static_cast<std::uint32_t>(e.metadata.values.size()));  // sorted by key (std::map)
  for (const auto& [key, value] : e.metadata.values) {
    in.text(key);
    in.text(value);
  }
  in.u64(static_cast<std::uint64_t>(e.recorded_at.time_since_epoch().count()));
  Hash out{};
  unsigned int size = 0;
  if (EVP_Digest(in.str().data(), in.str().size(), reinterpret_cast<unsigned char*>(out.data()),
                 &size, EVP_sha256(), nullptr) != 1 ||
      size != out.size()) {
    throw std::runtime_error("chain_hash: SHA-256 failed");
  }
  return out;
}

void set_recorded_at(const std::filesystem::path& file, Position position, std::int64_t us) {
  std::vector<RecordedEvent> events;
  {
    StoreOptions options;
    options.read_only = true;
    events = EventStore::open(file, options).read_all().to_vector();
  }
  std::string sql = kDropTriggers;
  Hash previous{};
  for (RecordedEvent& e : events) {
    if (e.position == position) e.recorded_at = Timestamp(std::chrono::microseconds(us));
    if (e.position >= position) {
      e.previous_hash = previous;
      e.hash = chain_hash(e);
      sql += "UPDATE events SET recorded_at = " +
             std::to_string(e.recorded_at.time_since_epoch().count()) + ", hash = X'" +
             hex_of(e.hash) + "' WHERE position = " + std::to_string(e.position) + ";";
    }
    previous = e.hash;
  }
  raw_exec(file, sql);
}

}  // namespace factum::test
