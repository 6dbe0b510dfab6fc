#include "anchor_json.hpp"

#include <charconv>
#include <map>

#include "hex.hpp"

namespace factum::detail {
namespace {

constexpr std::int64_t kFormat = 1;

[[noreturn]] void bad(const std::string& what) {
  throw AnchorError("factum: not an anchor: " + what);
}

template <std::size_t N>
std::array<std::uint8_t, N> unhex(std::string_view field, std::string_view text) {
  if (text.size() != 2 * N) {
    bad("\"" + std::string(field) + "\" must be " + std::to_string(2 * N) +
        " hexadecimal digits, not " + std::to_string(text.size()) + " characters");
  }
  const auto bytes = bytes_of_hex<N>(text);
  if (!bytes) bad("\"" + std::string(field) + "\" holds a character that is not hex");
  return *bytes;
}

// A flat JSON object of strings (without escapes) and integers, as anchor_to_json writes it.
class FlatObject {
 public:
  explicit FlatObject(std::string_view text) : s_(text) {
    skip();
    expect('{');
    skip();
    if (peek() == '}') bad("the object is empty");
    for (;;) {
      std::string key = string_token("a field name");
      skip();
      expect(':');
      skip();
      std::string value = peek() == '"' ? '"' + string_token("a value") : number_token();
      if (!fields_.emplace(key, std::move(value)).second) bad("\"" + key + "\" appears twice");
      skip();
      if (peek() == ',') {
        ++i_;
        skip();
        continue;
      }
      expect('}');
      skip();
      if (i_ != s_.size()) bad("text follows the object");
      return;
    }
  }

  // The string field `key` (removed from what is left).
  std::string text(const char* key) { return take(key, true); }
  // The integer field `key`.
  std::int64_t integer(const char* key) {
    const std::string t = take(key, false);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size()) {
      bad("\"" + std::string(key) + "\" is not a 64-bit integer");
    }
    return v;
  }
  void no_others() const {
    if (!fields_.empty()) bad("unknown field \"" + fields_.begin()->first + "\"");
  }

 private:
  std::string take(const char* key, bool is_string) {
    auto it = fields_.find(key);
    if (it == fields_.end()) bad("the field \"" + std::string(key) + "\" is missing");
    std::string v = std::move(it->second);
    fields_.erase(it);
    const bool quoted = !v.empty() && v[0] == '"';
    if (quoted != is_string) {
      bad("\"" + std::string(key) + "\" must be " + (is_string ? "a string" : "an integer"));
    }
    return quoted ? v.substr(1) : v;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c)
      bad(std::string("expected '") + c + "' at character " + std::to_string(i_ + 1));
    ++i_;
  }
  std::string string_token(const char* what) {
    if (peek() != '"')
      bad(std::string("expected ") + what + " at character " + std::to_string(i_ + 1));
    const std::size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '\\' || c < 0x20 || c >= 0x7f)
        bad("a string holds an escape or a control character");
      ++i_;
    }
    if (i_ == s_.size()) bad("a string is not closed");
    return std::string(s_.substr(start, i_++ - start));
  }
  std::string number_token() {
    const std::size_t start = i_;
    if (peek() == '-') ++i_;
    if (peek() == '0' && i_ + 1 < s_.size() && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9') {
      bad("a number has a leading zero (JSON has none)");
    }
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    if (i_ == start) bad("expected a value at character " + std::to_string(i_ + 1));
    return std::string(s_.substr(start, i_ - start));
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::map<std::string, std::string, std::less<>> fields_;
};

}  // namespace

std::string anchor_to_json(const Anchor& a) {
  return "{\"anchor\":" + std::to_string(kFormat) + ",\"position\":" + std::to_string(a.position) +
         ",\"head\":\"" + hex_of(a.head) + "\",\"time_ms\":" + std::to_string(a.time_ms) +
         ",\"previous\":\"" + hex_of(a.previous) + "\",\"signature\":\"" + hex_of(a.signature) +
         "\"}";
}

Anchor anchor_from_json(std::string_view line) {
  FlatObject o(line);
  if (const std::int64_t format = o.integer("anchor"); format != kFormat) {
    bad("format " + std::to_string(format) + " is not known (this factum reads format 1)");
  }
  Anchor a;
  const std::int64_t position = o.integer("position");
  if (position < 0) bad("\"position\" is negative");
  a.position = static_cast<Position>(position);
  a.head = unhex<32>("head", o.text("head"));
  a.time_ms = o.integer("time_ms");
  a.previous = unhex<32>("previous", o.text("previous"));
  a.signature = unhex<64>("signature", o.text("signature"));
  o.no_others();
  return a;
}

std::string rollback_to_json(const RollbackPayload& p) {
  return "{\"rollback\":1,\"anchor\":\"" + hex_of(p.anchor) +
         "\",\"anchor_position\":" + std::to_string(p.anchor_position) + "}";
}

std::optional<RollbackPayload> rollback_from_json(std::string_view text) {
  try {
    FlatObject o(text);
    if (o.integer("rollback") != 1) return std::nullopt;
    RollbackPayload p;
    p.anchor = unhex<32>("anchor", o.text("anchor"));
    const std::int64_t anchor_position = o.integer("anchor_position");
    if (anchor_position < 0) return std::nullopt;
    p.anchor_position = static_cast<Position>(anchor_position);
    o.no_others();
    return p;
  } catch (const AnchorError&) {
    return std::nullopt;
  }
}

}  // namespace factum::detail
