// LTTB downsampling; see lttb.h.
#include "base/lttb.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace sweep {

std::vector<size_t> LttbIndices(const std::vector<double>& x, const std::vector<double>& y, size_t max_points) {
  assert(x.size() == y.size());
  const size_t n = std::min(x.size(), y.size());
  std::vector<size_t> kept;
  if (n <= max_points || n <= 2) {
    kept.resize(n);
    for (size_t i = 0; i < n; ++i) kept[i] = i;
    return kept;
  }
  if (max_points < 3) return {0, n - 1};

  kept.reserve(max_points);
  kept.push_back(0);
  // The points between first and last fall into max_points - 2 buckets of equal count.
  const double bucket = static_cast<double>(n - 2) / static_cast<double>(max_points - 2);
  size_t a = 0;  // the point chosen in the previous bucket
  for (size_t b = 0; b < max_points - 2; ++b) {
    size_t start = static_cast<size_t>(std::floor(b * bucket)) + 1;
    size_t end = std::min(static_cast<size_t>(std::floor((b + 1) * bucket)) + 1, n - 1);
    // The third corner is the mean of the next bucket (the last point for the last bucket).
    size_t next_start = end;
    size_t next_end = std::min(static_cast<size_t>(std::floor((b + 2) * bucket)) + 1, n);
    if (b + 1 == max_points - 2) next_start = n - 1, next_end = n;
    double cx = 0, cy = 0;
    for (size_t i = next_start; i < next_end; ++i) cx += x[i], cy += y[i];
    double count = static_cast<double>(std::max<size_t>(1, next_end - next_start));
    cx /= count;
    cy /= count;

    size_t best = start;
    double best_area = -1;
    for (size_t i = start; i < end; ++i) {
      // Twice the triangle's area; the factor does not change which point wins.
      double area = std::fabs((x[a] - cx) * (y[i] - y[a]) - (x[a] - x[i]) * (cy - y[a]));
      if (area > best_area) best_area = area, best = i;
    }
    kept.push_back(best);
    a = best;
  }
  kept.push_back(n - 1);
  return kept;
}

}  // namespace sweep
