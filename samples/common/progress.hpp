// samples/common/progress.hpp — a one-line progress bar on stderr for the sample programs'
// long steps (demo histories). It draws only when stderr is a terminal, so logs, pipes and
// tests see nothing of it.
//
//   factum::samples::Progress bar("creating history", 5000);
//   for (...) { ...; bar.advance(); }
//   bar.finish();
//
// Thread-safety: one bar per thread.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace factum::samples {

class Progress {
 public:
  Progress(std::string label, std::uint64_t total)
      : label_(std::move(label)),
        total_(total == 0 ? 1 : total),
        tty_(isatty(STDERR_FILENO) == 1) {}
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Counts `n` more units done; redraws at most every 50 ms.
  void advance(std::uint64_t n = 1) {
    done_ += n;
    if (!tty_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - drawn_ < std::chrono::milliseconds(50) && done_ < total_) return;
    drawn_ = now;
    draw();
  }

  // Draws the full bar and ends the line (once).
  void finish() {
    if (!tty_ || finished_) return;
    finished_ = true;
    done_ = total_;
    draw();
    std::fputc('\n', stderr);
  }

  bool on_terminal() const noexcept { return tty_; }

 private:
  void draw() const {
    constexpr int kWidth = 30;
    const double ratio =
        static_cast<double>(done_ > total_ ? total_ : done_) / static_cast<double>(total_);
    const int filled = static_cast<int>(ratio * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.append(static_cast<std::size_t>(kWidth - filled), '.');
    std::fprintf(stderr, "\r%s [%s] %3d%% (%llu/%llu)", label_.c_str(), bar.c_str(),
                 static_cast<int>(ratio * 100), static_cast<unsigned long long>(done_),
                 static_cast<unsigned long long>(total_));
    std::fflush(stderr);
  }

  std::string label_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  bool tty_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point drawn_{};
};

}  // namespace factum::samples
