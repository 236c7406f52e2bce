// Wall-clock laps of a multi-step kernel call (a search stage's experts, confidence, fusion): what the results pages
// break a call's time into (docs/results/serving.md).
#pragma once
#include <chrono>
#include <cstddef>

namespace quorum {

class Laps {
 public:
  explicit Laps(double* ms) : ms_(ms), t_(Clock::now()) {}
  // Writes the ms since the previous lap (or construction) to ms[slot].
  void lap(size_t slot) {
    const auto now = Clock::now();
    ms_[slot] = std::chrono::duration<double, std::milli>(now - t_).count();
    t_ = now;
  }

 private:
  using Clock = std::chrono::steady_clock;
  double* ms_;
  Clock::time_point t_;
};

}  // namespace quorum
