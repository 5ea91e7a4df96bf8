// Which live rivals may be lower than a trial at equal time by a margin, found without looking at each
// (issue 42): the throughput rule asks it of every trial it judges, and at 10,000 trials its walks over
// every live rival, a curve lookup each, were most of a tick. Internal to stopping/; made once per
// evaluation on the indexed path (RulePath::kIndexed), absent on the reference path.
//
// The rules compare trial i with rival j at the time a = min(i's end, j's end). j can be lower there by
// the margin only if the lowest knot of its curve is below i's value at a minus the margin. So the rivals
// are kept sorted by the time their curve ends, with the lowest knot of each in a tree of minima; for
// trial i the rivals that end past it are compared at i's end, where i's value is its last knot, and
// those that end within its curve at a time in one of a few stretches of its knots (single knots near
// its end, wider ones further back), where i's value is at most the highest knot of the stretch. Each
// stretch is one descent of the tree to the rivals below its bar: a superset of those that can be lower,
// which the rules then compare in full, as before. Rounding is allowed for on both sides.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "stopping/series.h"

namespace sweep::stopping {

class LowerRivals {
 public:
  // Indexes the trials that are `live` and have a curve.
  LowerRivals(const std::vector<const Series*>& series, const std::vector<bool>& live);
  // Trial j is no longer live (stopped during the evaluation).
  void Remove(size_t j);
  // The indexed trials j, in ascending order, but for those whose curve at a = min(me's end, j's end) is
  // surely not below me's value at a minus `least_margin` (at least by rounding): every rival that can be
  // lower there by a margin at least `least_margin` is listed. Valid until the next call, as found().
  const std::vector<size_t>& Of(const Series& me, double least_margin);
  const std::vector<size_t>& found() const { return found_; }
  // For a trial found by the last Of: at least me's value at a minus its own there, as the rules
  // compute both (rounding allowed for): how much lower than me it can be.
  double MostBelow(size_t j) const {
    return (ceiling_[j] - floor_[j]) + 1e-9 * (std::abs(ceiling_[j]) + std::abs(floor_[j])) + 1e-300;
  }

 private:
  void Collect(size_t node, size_t lo, size_t hi, size_t from, size_t to, double bar, double ceiling);
  std::vector<size_t> order_;    // indexed trials by the end time of their curve
  std::vector<double> end_;      // that time, in the same order
  std::vector<size_t> where_;    // per trial: its place in order_, or npos
  std::vector<double> floor_;    // per trial: its lowest knot, rounding allowed for
  std::vector<double> ceiling_;  // per trial found: me's highest value where it is compared
  std::vector<double> tree_;     // minima of the lowest knots (rounding allowed for), leaves from width_
  size_t width_ = 1;
  std::vector<size_t> found_;
};

}  // namespace sweep::stopping
