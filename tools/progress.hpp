// tools/progress.hpp — a progress bar on stderr for long walks (verify, export, import), drawn
// only when stderr is a terminal, so scripts and logs never see it.
//
//   Progress bar("verify", total, "events");
//   for (...) bar.update(done);   // cheap: redraws at most ten times a second
//   bar.finish();                 // erases the bar (also done by the destructor)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace factum::cli {

class Progress {
 public:
  // `total` 0 means unknown: the bar then shows a count and a rate only.
  Progress(std::string label, std::uint64_t total, std::string unit);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(std::uint64_t done);
  void finish();
  bool enabled() const noexcept { return enabled_; }

 private:
  void draw(std::uint64_t done);
  std::string label_;
  std::uint64_t total_;
  std::string unit_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace factum::cli
