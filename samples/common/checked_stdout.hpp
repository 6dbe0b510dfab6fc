// samples/common/checked_stdout.hpp — makes sure that what a sample program printed reached
// stdout, as the `factum` command line does.
//
// A write to stdout can fail: a full disk, /dev/full, a closed pipe. The C++ stream then just
// goes bad, and unless someone looks the program exits 0 as if all had been printed. A
// CheckedStdout puts a buffer of its own under std::cout, which writes to file descriptor 1,
// keeps the reason of the first failed write and drops everything after it; finish() flushes
// and turns lost output into exit code 1 with one line on stderr:
//
//   int main(int argc, char** argv) {
//     factum::samples::CheckedStdout out;
//     const int code = run(argc, argv);         // prints on std::cout
//     return out.finish("factum-bank", code, std::cerr);
//   }
//
// A program that ends with an error of its own (one line on stderr already) returns without
// calling finish(): the destructor flushes what is left and says nothing more, so the error
// stays one line. On a terminal every output is flushed at once (std::unitbuf), so lines
// appear as they are printed.
//
// Thread-safety: as std::cout: one thread prints at a time. One CheckedStdout per program.
#pragma once

#include <array>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace factum::samples {

class CheckedStdout {
 public:
  // Puts its buffer under std::cout.
  CheckedStdout();
  // Flushes (a failure is left unsaid: finish() reports it) and gives std::cout its own buffer
  // back. Never throws.
  ~CheckedStdout();
  CheckedStdout(const CheckedStdout&) = delete;
  CheckedStdout& operator=(const CheckedStdout&) = delete;

  // Flushes std::cout. When everything printed reached stdout, returns `code`; otherwise prints
  // "<program>: cannot write to stdout: <reason>" ("no space left on device") on `err` and
  // returns `code`, or kExitError when `code` is 0.
  int finish(std::string_view program, int code, std::ostream& err);

 private:
  // Writes to a file descriptor, remembering the errno of the first write that failed; after
  // it, drops what it is given (the output is incomplete anyway, and finish() says so).
  class Buffer : public std::streambuf {
   public:
    explicit Buffer(int fd);
    int error() const noexcept { return error_; }

   protected:
    int_type overflow(int_type c) override;
    int sync() override;

   private:
    bool drain();

    int fd_;
    int error_ = 0;
    std::array<char, 8192> bytes_{};
  };

  Buffer buffer_;
  std::streambuf* previous_;
};

}  // namespace factum::samples
