// tools/progress.cpp — the stderr progress bar (see progress.hpp).
#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace factum::cli {
namespace {

constexpr int kBarWidth = 30;
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);

std::string count(std::uint64_t n) {
  // Appended digit by digit (GCC 12 warns falsely, -Wrestrict, on string::insert here).
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

Progress::Progress(std::string label, std::uint64_t total, std::string unit)
    : label_(std::move(label)),
      total_(total),
      unit_(std::move(unit)),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { finish(); }

void Progress::update(std::uint64_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < kRedrawEvery) return;
  last_draw_ = now;
  draw(done);
}

void Progress::draw(std::uint64_t done) {
  const double seconds = std::chrono::duration<double>(last_draw_ - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  std::string line = "\r" + label_ + " ";
  if (total_ > 0) {
    const double part = std::min(1.0, static_cast<double>(done) / static_cast<double>(total_));
    const int filled = static_cast<int>(part * kBarWidth);
    // Appended piece by piece: "[" + std::string(...) trips GCC 12's false -Wrestrict at -O3.
    line += '[';
    line.append(static_cast<std::size_t>(filled), '#');
    line.append(static_cast<std::size_t>(kBarWidth - filled), '.');
    line += "] ";
    char pct[16];
    std::snprintf(pct, sizeof pct, "%3d%% ", static_cast<int>(part * 100));
    line += pct + count(done) + "/" + count(total_);
  } else {
    line += count(done);
  }
  line += " " + unit_ + "  " + count(static_cast<std::uint64_t>(rate)) + "/s";
  if (total_ > done && rate > 0) {
    line += "  eta " + std::to_string(static_cast<int>(static_cast<double>(total_ - done) / rate)) +
            "s";
  }
  line += "\033[K";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace factum::cli
