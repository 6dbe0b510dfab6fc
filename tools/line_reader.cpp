// tools/line_reader.cpp — reading an export line by line (see line_reader.hpp).
#include "line_reader.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "cli.hpp"

namespace factum::cli {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string line_prefix(std::uint64_t line) { return "line " + std::to_string(line) + ": "; }

bool is_rereadable_input(const std::string& path) {
  std::error_code ec;
  return path != "-" && fs::is_regular_file(fs::status(path, ec));
}

LineReader::LineReader(const std::string& path, std::size_t max_line)
    : path_(path), max_line_(max_line) {
  if (path == "-") {
    file_ = stdin;
    return;
  }
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) throw CliError("'" + path + "': no such file");
  if (fs::is_directory(status)) throw CliError("'" + path + "' is a directory, not an export");
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    throw CliError("cannot read '" + path + "': " + std::strerror(errno));
  }
  owned_ = true;
  if (fs::is_regular_file(status)) size_ = static_cast<std::uint64_t>(fs::file_size(path, ec));
}

LineReader::~LineReader() {
  if (owned_) std::fclose(file_);
}

bool LineReader::next(std::string& line) {
  while (read_line(line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) return true;
  }
  return false;
}

bool LineReader::read_line(std::string& line) {
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

// A line past 1 MiB gets room for the longest line at once: the pages are only touched as they
// are written, and the string is never doubled (its old and new copies resident together) on
// the way to the payload size.
void LineReader::reserve(std::string& line, std::size_t n) const {
  if (line.size() + n > line.capacity() && line.size() + n > kLargeLine) line.reserve(max_line_);
}

bool LineReader::refill() {
  if (buffer_.empty()) buffer_.resize(1u << 16);
  pos_ = 0;
  end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
  if (end_ == 0 && std::ferror(file_)) throw CliError("reading the export failed");
  return end_ > 0;
}

}  // namespace factum::cli
