// samples/common/checked_stdout.cpp — stdout whose failed writes are noticed (see
// checked_stdout.hpp).
#include "checked_stdout.hpp"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli_errors.hpp"

namespace factum::samples {
namespace {

// strerror's text, starting lower case as the rest of an error line: "no space left on device".
std::string reason(int error) {
  std::string text = error == 0 ? "an output error occurred" : std::strerror(error);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

}  // namespace

CheckedStdout::Buffer::Buffer(int fd) : fd_(fd) {
  setp(bytes_.data(), bytes_.data() + bytes_.size());
}

CheckedStdout::Buffer::int_type CheckedStdout::Buffer::overflow(int_type c) {
  if (!drain()) return traits_type::eof();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  return c;
}

int CheckedStdout::Buffer::sync() { return drain() ? 0 : -1; }

// Writes out the buffered bytes; false once any write has failed.
bool CheckedStdout::Buffer::drain() {
  const char* next = pbase();
  while (error_ == 0 && next < pptr()) {
    const ssize_t n = ::write(fd_, next, static_cast<std::size_t>(pptr() - next));
    if (n > 0) {
      next += n;
    } else if (n < 0 && errno != EINTR) {
      error_ = errno;
    } else if (n == 0) {
      error_ = EIO;
    }
  }
  setp(bytes_.data(), bytes_.data() + bytes_.size());  // written, or dropped after a failure
  return error_ == 0;
}

CheckedStdout::CheckedStdout() : buffer_(STDOUT_FILENO), previous_(std::cout.rdbuf(&buffer_)) {
  if (::isatty(STDOUT_FILENO) == 1) std::cout.setf(std::ios::unitbuf);
}

CheckedStdout::~CheckedStdout() {
  std::cout.flush();
  std::cout.rdbuf(previous_);
}

int CheckedStdout::finish(std::string_view program, int code, std::ostream& err) {
  std::cout.flush();
  if (buffer_.error() == 0 && !std::cout.bad()) return code;
  err << error_line(program, "cannot write to stdout: " + reason(buffer_.error())) << std::endl;
  return code == 0 ? kExitError : code;
}

}  // namespace factum::samples
