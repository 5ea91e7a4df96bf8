// See final_objective.h.
#include "base/final_objective.h"

#include <algorithm>
#include <cmath>

namespace sweep {
namespace {

// Mean of the window ending before `end`: the one summation both FinalObjectiveOf and
// TrailingMean use, so that the final value and the curve's last point are the same double.
double WindowEndingAt(const std::vector<double>& values, size_t end) {
  size_t first = end > kFinalWindow ? end - kFinalWindow : 0;
  return WindowMean(values.data() + first, end - first);
}

}  // namespace

double WindowMean(const double* values, size_t n) {
  double sum = 0;
  for (size_t k = 0; k < n; ++k) sum += values[k];
  return sum / static_cast<double>(n);
}

std::optional<FinalObjective> FinalObjectiveOf(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  FinalObjective f;
  f.points = std::min(kFinalWindow, values.size());
  f.value = WindowEndingAt(values, values.size());
  f.last = values.back();
  if (f.points > 1 && std::isfinite(f.value)) {
    double ss = 0;
    for (size_t k = values.size() - f.points; k < values.size(); ++k)
      ss += (values[k] - f.value) * (values[k] - f.value);
    f.spread = std::sqrt(ss / static_cast<double>(f.points - 1));
  }
  return f;
}

std::vector<double> TrailingMean(const std::vector<double>& values) {
  std::vector<double> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = WindowEndingAt(values, i + 1);
  return out;
}

bool AtOrPast(double value, double target, bool minimize) {
  return minimize ? value <= target : value >= target;  // false for NaN
}

std::optional<size_t> SustainedReach(const std::vector<double>& smoothed, double target, bool minimize) {
  if (smoothed.empty()) return std::nullopt;
  // Back from the end, while the curve is past the target.
  size_t i = smoothed.size();
  while (i > 0 && AtOrPast(smoothed[i - 1], target, minimize)) --i;
  if (i == smoothed.size()) return std::nullopt;  // the last point is not past it
  return i;
}

int64_t InterpolatedCrossing(int64_t step0, double value0, int64_t step1, double value1, double target) {
  // A NaN before (a spoiled window) gives no line to read the crossing from: the point past it.
  if (!std::isfinite(value0) || !std::isfinite(value1) || value1 == value0 || step1 <= step0) return step1;
  double f = std::clamp((target - value0) / (value1 - value0), 0.0, 1.0);
  return step0 + std::llround(f * static_cast<double>(step1 - step0));
}

bool Better(double a, double b, bool minimize) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return minimize ? a < b : a > b;
}

}  // namespace sweep
