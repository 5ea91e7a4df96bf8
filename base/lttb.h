// Largest-Triangle-Three-Buckets downsampling (Steinarsson, 2013) of a curve for the report's
// charts (results/trial_facts.cc downsamples curves and telemetry with it): keeps the first and last point and, in
// each bucket between, the point that spans the largest triangle with its neighbours, so peaks and the overall shape
// survive at ~500 points. Module base/: uses the standard library only.
#pragma once

#include <cstddef>
#include <vector>

namespace sweep {

// Indices (increasing) of at most `max_points` points of the curve (x[i], y[i]) to draw. `x` must be
// non-decreasing and as long as `y`. Every index is kept when the curve is short enough; with
// max_points < 3 only the first and last remain.
std::vector<size_t> LttbIndices(const std::vector<double>& x, const std::vector<double>& y, size_t max_points);

}  // namespace sweep
