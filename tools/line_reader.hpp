// tools/line_reader.hpp — how `factum import` reads an export: line by line, each line bounded,
// from a file, a pipe or a device (`<(...)`, /dev/stdin, /dev/null) or stdin ("-").
//
// Thread-safety: a LineReader is used by one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace factum::cli {

// "line N: ", the start of every message about line N of an export.
std::string line_prefix(std::uint64_t line);

// True when `path` is a regular file (not "-", a pipe or a device): one that can be read twice.
bool is_rereadable_input(const std::string& path);

// Reads the export line by line from `path`: "-" is stdin; any other path that exists and is
// not a directory is opened and read as it is (a regular file with its size, for the progress
// bar; a pipe or a device without). A line is bounded: one longer than `max_line` bytes is
// refused as soon as it passes the bound, without reading the rest of it into memory.
// Throws CliError naming the path when it does not exist, is a directory or cannot be read.
class LineReader {
 public:
  LineReader(const std::string& path, std::size_t max_line);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next non-blank line, without its '\n'; false at the end. Throws CliError for a line
  // over the bound ("line N: longer than B bytes ...") or a read error.
  bool next(std::string& line);
  // The number of the line last returned (1-based, blank lines counted).
  std::uint64_t number() const noexcept { return number_; }
  std::uint64_t bytes_read() const noexcept { return read_; }
  // The input's size in bytes when it is a regular file, else 0 (unknown).
  std::uint64_t size() const noexcept { return size_; }

 private:
  bool read_line(std::string& line);
  void reserve(std::string& line, std::size_t n) const;
  bool refill();

  static constexpr std::size_t kLargeLine = 1u << 20;
  std::string path_;
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

}  // namespace factum::cli
