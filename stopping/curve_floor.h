// A floor under each trial's smoothed curve, by stretch of time, read from small arrays: what lets a rule
// that compares a trial with every live rival at equal time pass over the rivals that cannot be lower by
// the margin without searching their curves (issue 42: at 10,000 trials those searches, each a few cache
// misses into a curve elsewhere in memory, were most of the throughput rule's time). Internal to stopping/;
// made once per evaluation on the indexed path (RulePath::kIndexed), absent on the reference path.
#pragma once

#include <cstddef>
#include <vector>

#include "stopping/series.h"

namespace sweep::stopping {

// For each curve, kBuckets equal stretches of [first_t, last_t]; each keeps the lowest smoothed value of
// its knots and of the knot on either side of it, so that both knots a lookup interpolates between
// (Series::At) are among those of the stretch its time falls in: At(at) is at least Floor(j, at).
class CurveFloors {
 public:
  static constexpr size_t kBuckets = 32;
  explicit CurveFloors(const std::vector<const Series*>& series);

  double first_t(size_t j) const { return first_t_[j]; }
  double last_t(size_t j) const { return last_t_[j]; }
  bool Reached(size_t j, double at) const { return !empty_[j] && first_t_[j] <= at && last_t_[j] >= at; }
  // A value Series::At(at) of curve j is never below, for `at` within the curve (Reached); rounding
  // allowed for.
  double Floor(size_t j, double at) const;

 private:
  size_t Bucket(size_t j, double at) const;
  // A curve's floors are built when first read: the rules read those of live rivals only.
  void Build(size_t j) const;
  const std::vector<const Series*>& series_;
  mutable std::vector<char> built_;
  std::vector<char> empty_;
  std::vector<double> first_t_, last_t_, width_;
  mutable std::vector<double> scale_;  // the largest |value|, for rounding
  mutable std::vector<double> floor_;  // kBuckets per curve
};

}  // namespace sweep::stopping
