// Floors under the curves, by stretch of time; see curve_floor.h.
#include "stopping/curve_floor.h"

#include <algorithm>
#include <cmath>

namespace sweep::stopping {

CurveFloors::CurveFloors(const std::vector<const Series*>& series)
    : series_(series),
      built_(series.size(), 0),
      empty_(series.size(), 1),
      first_t_(series.size(), 0),
      last_t_(series.size(), 0),
      width_(series.size(), 0),
      scale_(series.size(), 0),
      floor_(series.size() * kBuckets, kInf) {
  for (size_t j = 0; j < series.size(); ++j) {
    const Series& s = *series[j];
    if (s.empty()) continue;
    empty_[j] = 0;
    first_t_[j] = s.first_t(), last_t_[j] = s.last_t();
    width_[j] = (s.last_t() - s.first_t()) / static_cast<double>(kBuckets);
  }
}

void CurveFloors::Build(size_t j) const {
  built_[j] = 1;
  const Series& s = *series_[j];
  double* f = &floor_[j * kBuckets];
  // Each knot's value counts in its own stretch, and in every stretch up to the next knot's and back
  // to the previous knot's (the stretches in between hold no knot: a lookup there reads both).
  size_t prev_b = 0;
  for (size_t k = 0; k < s.t.size(); ++k) {
    size_t b = Bucket(j, s.t[k]);
    double v = s.s[k];
    scale_[j] = std::max(scale_[j], std::abs(v));
    f[b] = std::min(f[b], v);
    if (k > 0) {
      double before = s.s[k - 1];
      for (size_t m = prev_b; m <= b; ++m) f[m] = std::min(f[m], std::min(before, v));
    }
    prev_b = b;
  }
}

size_t CurveFloors::Bucket(size_t j, double at) const {
  if (!(width_[j] > 0)) return 0;
  double x = (at - first_t_[j]) / width_[j];
  if (!(x > 0)) return 0;
  return std::min(kBuckets - 1, static_cast<size_t>(x));
}

double CurveFloors::Floor(size_t j, double at) const {
  if (!built_[j]) Build(j);
  // Interpolation rounds: a few units in the last place of the knots' values below the lower knot.
  return floor_[j * kBuckets + Bucket(j, at)] - 1e-12 * scale_[j];
}

}  // namespace sweep::stopping
