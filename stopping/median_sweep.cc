// The median rule (rules.cc) with the others' running averages read in one sweep: the trials judged are
// taken in the order of the time they are judged at, and each curve keeps the segment of knots that time
// falls in, so a pair costs a few multiplications from a small array instead of a search in a curve of up
// to 1024 knots that lies elsewhere in memory (at 10,000 trials the search was most of a tick). Decides as
// Median does, bit for bit: the same arithmetic on the same knots (Series::RunningAverage), the others
// summed in the same order.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "stopping/rules.h"

namespace sweep::stopping {
namespace {

// Per curve, what the running average reads, side by side in small arrays, and the knots around the
// time of the sweep: hi is the first knot after it (UpperBound).
struct Segments {
  std::vector<size_t> hi, knots;
  std::vector<double> first_t, last_t, s_first, s_last, se;
  std::vector<double> t_lo, t_hi, s_lo, s_hi, area_lo;  // t_hi: +inf past the last knot

  explicit Segments(const Context& c) {
    size_t n = c.series.size();
    hi.assign(n, 0), knots.assign(n, 0);
    for (auto* v : {&first_t, &last_t, &s_first, &s_last, &se, &t_lo, &s_lo, &s_hi, &area_lo}) v->assign(n, 0);
    t_hi.assign(n, -kInf);
    for (size_t j = 0; j < n; ++j) {
      const Series& s = c.series[j];
      if (s.empty()) continue;
      knots[j] = s.t.size();
      first_t[j] = s.first_t(), last_t[j] = s.last_t(), s_first[j] = s.s.front(), s_last[j] = s.s.back();
      se[j] = c.Se(j);
    }
  }

  bool Reached(size_t j, double at) const { return first_t[j] <= at && last_t[j] >= at; }

  // Moves curve j's segment to the one holding `at` (at never decreases between calls).
  void Advance(const Series& s, size_t j, double at) {
    if (at < t_hi[j]) return;
    size_t k = hi[j];
    while (k < knots[j] && s.t[k] <= at) ++k;
    hi[j] = k;
    size_t lo = k > 0 ? k - 1 : 0;
    t_lo[j] = s.t[lo], s_lo[j] = s.s[lo], area_lo[j] = s.area_to[lo];
    if (k < knots[j]) t_hi[j] = s.t[k], s_hi[j] = s.s[k];
    else t_hi[j] = kInf, s_hi[j] = s_last[j];
  }

  // Series::RunningAverage(at) for `at` within curve j (Reached), from the segment.
  double RunningAverage(size_t j, double at) const {
    if (at <= first_t[j]) return s_first[j];
    double here = s_last[j];
    if (hi[j] < knots[j]) {
      double span = t_hi[j] - t_lo[j];
      here = span <= 0 ? s_hi[j] : s_lo[j] + (s_hi[j] - s_lo[j]) * (at - t_lo[j]) / span;
    }
    double area = area_lo[j] + 0.5 * (s_lo[j] + here) * (at - t_lo[j]);
    return area / (at - first_t[j]);
  }
};

}  // namespace

void MedianBySweep(Context& c) {
  if (c.config.median.min_trials < 1) return;
  std::vector<std::pair<double, size_t>> latest = MedianLatest(c);
  // The trials judged, by the time they are judged at (each is judged alone: the order changes nothing).
  std::vector<std::pair<double, size_t>> judged;
  for (size_t i = 0; i < c.trials.size(); ++i) {
    if (auto at = MedianTime(c, i, latest)) judged.emplace_back(*at, i);
  }
  std::sort(judged.begin(), judged.end());
  // Only evident curves are ever others.
  std::vector<size_t> evident;
  for (size_t j = 0; j < c.series.size(); ++j) {
    if (c.Evident(j)) evident.push_back(j);
  }
  Segments seg(c);
  std::vector<double> others;
  others.reserve(evident.size());
  for (const auto& [at, i] : judged) {
    others.clear();
    double se = 0;
    for (size_t j : evident) {
      if (!c.Rival(i, j) || !seg.Reached(j, at)) continue;
      seg.Advance(c.series[j], j, at);
      others.push_back(seg.RunningAverage(j, at));
      se += seg.se[j];
    }
    MedianJudge(c, i, at, others, se, true);
  }
}

}  // namespace sweep::stopping
