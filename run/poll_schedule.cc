// The run loop's waits; see poll_schedule.h.
#include "run/poll_schedule.h"

#include <algorithm>
#include <cmath>

namespace sweep::run {

namespace {
constexpr double kGrowth = 1.5;        // per quiet tick
constexpr double kOutageCapS = 120.0;  // longest wait while the cluster is unreachable
constexpr double kJitter = 0.1;        // +-10%
}  // namespace

PollSchedule::PollSchedule(double min_s, double max_s, uint32_t seed)
    : min_s_(min_s), max_s_(std::max(min_s, max_s)), idle_s_(min_s), rng_(seed) {}

double PollSchedule::Jitter(double seconds) {
  double u = static_cast<double>(rng_() - rng_.min()) / static_cast<double>(rng_.max() - rng_.min());
  return seconds * (1.0 - kJitter + 2 * kJitter * u);
}

double PollSchedule::Next(bool changed, bool unavailable) {
  if (unavailable) {
    ++failures_;
    double cap = std::max(max_s_, kOutageCapS);
    return Jitter(std::min(cap, min_s_ * std::pow(2.0, std::min(failures_, 16))));
  }
  failures_ = 0;
  idle_s_ = changed ? min_s_ : std::min(max_s_, idle_s_ * kGrowth);
  return Jitter(idle_s_);
}

}  // namespace sweep::run
