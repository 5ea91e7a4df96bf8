// Hand-made curves for the stopping module's tests (early_stop_test.cc, stopping_group_test.cc):
// a loss that falls fast, then slowly, never flat, and a trial made of a curve. Tests only.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "stopping/early_stop.h"

namespace sweep::stopping::testing {

// Loss per iteration shared by "same model" trials: falls fast, then slowly, never flat.
inline double Loss(int64_t step) { return 2.0 + 3.0 * std::exp(-static_cast<double>(step) / 40.0); }

// A curve logged every `interval` steps from step 1, `seconds_per_step` apart, for `seconds`
// of training time; time 0 is the first logged iteration, as the metrics parser stores it.
inline std::vector<CurvePoint> Curve(double seconds_per_step, double seconds,
                                     const std::function<double(int64_t)>& loss = Loss, int64_t interval = 1) {
  std::vector<CurvePoint> out;
  for (int64_t step = 1;; step += interval) {
    double t = static_cast<double>(step - 1) * seconds_per_step;
    if (t > seconds + 1e-9) break;
    out.push_back({step, t, loss(step)});
  }
  return out;
}

// A curve at 1 s per iteration from step 1 that stalls `stall_s` seconds more after every `every`-th
// iteration (an evaluation or a checkpoint), for `seconds` of training time.
inline std::vector<CurvePoint> StallingCurve(int64_t every, double stall_s, double seconds) {
  std::vector<CurvePoint> out;
  double t = 0;
  for (int64_t step = 1; t <= seconds; ++step) {
    out.push_back({step, t, Loss(step)});
    t += step % every == 0 ? 1 + stall_s : 1;
  }
  return out;
}

inline TrialProgress Trial(int64_t id, std::vector<CurvePoint> loss, TrialPhase phase = TrialPhase::kRunning,
                           std::vector<std::pair<std::string, std::string>> params = {}) {
  TrialProgress t;
  t.id = id;
  t.phase = phase;
  t.loss = std::move(loss);
  t.params = std::move(params);
  return t;
}

}  // namespace sweep::stopping::testing
